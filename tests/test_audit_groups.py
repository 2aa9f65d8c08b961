"""audit --by gap / --tokens / --jq on hand-made sessions."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cachediag.analysis.group_keys import gap_key
from cachediag.cli import main
from tests.test_window import write_session


def test_gap_buckets_and_their_edges() -> None:
    assert gap_key(None, "5m") == "first request"
    assert [gap_key(s, "5m") for s in (0, 59.9, 60, 299, 300, 599, 600, 1799, 1800, 3599)] == [
        "<1m",
        "<1m",
        "1-5m",
        "1-5m",
        "5-10m",
        "5-10m",
        "10-30m",
        "10-30m",
        "30-60m",
        "30-60m",
    ]
    assert gap_key(3600, "5m") == ">1h"
    assert gap_key(1200, "1h") == "10-30m @1h"


def test_by_gap_counts_misses_and_their_rate(tmp_path: Path) -> None:
    # Requests 0-3 s apart, then 20 and 70 minutes of idle: both pauses expire a 5m cache.
    times = [
        "2026-03-01T10:00:00Z",
        "2026-03-01T10:00:30Z",
        "2026-03-01T10:20:30Z",
        "2026-03-01T11:30:30Z",
    ]
    path = tmp_path / "s.jsonl"
    lines = []
    for i, at in enumerate(times):
        # Each request reads the previous prompt when the cache is alive, else rewrites it.
        alive = i == 1
        lines.append(
            {
                "type": "assistant",
                "sessionId": "s",
                "uuid": f"u{i}",
                "requestId": f"r{i}",
                "timestamp": at,
                "message": {
                    "id": f"m{i}",
                    "model": "claude-sonnet-4-5-20250929",
                    "usage": {
                        "input_tokens": 10,
                        "cache_read_input_tokens": 50_000 if alive else 0,
                        "cache_creation_input_tokens": 1_000 if alive else 50_000 + 1_000 * i,
                        "output_tokens": 5,
                    },
                },
            }
        )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = CliRunner().invoke(
        main, ["audit", "--json", "--no-progress", "--by", "gap", str(path)]
    )
    assert result.exit_code == 0, result.output
    groups = {g["key"]: (g["requests"], g["misses"]) for g in json.loads(result.stdout)["groups"]}
    assert groups == {"first request": (1, 0), "<1m": (1, 0), "10-30m": (1, 1), ">1h": (1, 1)}
    table = CliRunner().invoke(main, ["audit", "--no-progress", "--by", "gap", str(path)]).stdout
    assert "10-30m        │        1 │      1 │    100.0%" in table


def test_tokens_columns_and_jq(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", ["2026-03-01T10:00:00Z", "2026-03-01T10:00:05Z"])
    wide = CliRunner().invoke(
        main,
        ["audit", "--no-progress", "--tokens", str(path)],
        env={"COLUMNS": "120"},
        terminal_width=120,
    )
    assert "cache write" in wide.stdout and "10,000" in wide.stdout
    result = CliRunner().invoke(
        main, ["audit", "--no-progress", "--jq", ".totals.requests", str(path)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "2\n"
    both = CliRunner().invoke(main, ["audit", "--jq", ".by", "--csv", str(path)])
    assert both.exit_code == 2
