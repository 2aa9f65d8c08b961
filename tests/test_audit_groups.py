"""audit --by gap / --tokens / --jq on hand-made sessions; --by agent and the session
rows of several agents on the recorded homes of every agent."""

from __future__ import annotations

import csv
import io
import json
import shutil
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


DATA = Path(__file__).parent / "data"
AGENT_HOMES = (DATA / "codex_home_changes", DATA / "gemini_home", DATA / "opencode_home_changes")
TRANSCRIPT = Path(__file__).parent.parent / "fixtures/real/spotter/tool_heavy.jsonl"


def _audit(*args: str, width: int = 100) -> str:
    result = CliRunner().invoke(
        main,
        ["audit", "--no-progress", *args],
        env={"COLUMNS": str(width), "TZ": "UTC"},
        terminal_width=width,
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def _every_agent(tmp_path: Path) -> list[str]:
    """A Claude Code project folder and the recorded homes of the three other agents."""
    claude = tmp_path / "-p"
    claude.mkdir()
    shutil.copy(TRANSCRIPT, claude / TRANSCRIPT.name)
    return [str(claude), *map(str, AGENT_HOMES)]


def _analyze_by_agent(paths: list[str]) -> dict[str, dict[str, float]]:
    """Each agent's sums as ``analyze --json`` gives them, session by session."""
    result = CliRunner().invoke(main, ["analyze", "--json", *paths], env={"TZ": "UTC"})
    assert result.exit_code == 0, result.output
    sums: dict[str, dict[str, float]] = {}
    for line in result.stdout.splitlines():
        session = json.loads(line)
        mine = sums.setdefault(session["agent"], {"requests": 0, "misses": 0, "cost_usd": 0.0})
        mine["requests"] += session["totals"]["requests"]
        mine["misses"] += session["prompt_cache"]["misses"]
        mine["cost_usd"] += session["cost"]["cost_usd"]
        for stream in session["streams"]:
            mine["misses"] += stream["prompt_cache"]["misses"]
    return sums


def test_by_agent_sums_each_agents_sessions(tmp_path: Path) -> None:
    paths = _every_agent(tmp_path)
    report = json.loads(_audit("--json", "--by", "agent", *paths))
    assert report["agents"] == ["claude", "codex", "gemini", "opencode"]
    want = _analyze_by_agent(paths)
    got = {g["key"]: g for g in report["groups"]}
    assert got.keys() == want.keys()
    for agent, sums in want.items():
        assert got[agent]["requests"] == sums["requests"], agent
        assert got[agent]["misses"] == sums["misses"], agent
        assert abs(got[agent]["cost_usd"] - sums["cost_usd"]) < 1e-5, agent
    assert sum(g["requests"] for g in report["groups"]) == report["totals"]["requests"]
    # Each session and each costly miss says whose it is.
    sessions = {s["session_id"]: s["agent"] for s in report["whatif_by_session"]}
    assert sorted(sessions.values()) == ["claude", "codex", "gemini", "opencode"]
    assert sessions["tool_heavy"] == "claude"
    assert {m["agent"] for m in report["top_misses"]} <= set(sessions.values())
    for m in report["top_misses"]:
        assert m["agent"] == sessions[m["session_id"]]


def test_session_rows_name_the_agent_when_several(tmp_path: Path) -> None:
    paths = _every_agent(tmp_path)
    report = json.loads(_audit("--json", "--by", "session", *paths))
    agent_of = {s["session_id"]: s["agent"] for s in report["whatif_by_session"]}
    rows = list(csv.DictReader(io.StringIO(_audit("--csv", "--by", "session", *paths))))
    assert [r["session"] for r in rows] == [g["key"] for g in report["groups"]]
    assert [r["agent"] for r in rows] == [agent_of[r["session"]] for r in rows]
    for width in (80, 120):
        table = _audit("--by", "session", *paths, width=width)
        header = next(line for line in table.splitlines() if line.startswith("session"))
        assert "agent" in header.split("┃")[1], (width, table)
        for session, agent in agent_of.items():
            row = next(line for line in table.splitlines() if line.startswith(session[:8]))
            assert row.split("│")[1].strip() == agent, (width, row)
    # One agent: the rows as they were, no agent column.
    one = _audit("--csv", "--by", "session", paths[0])
    assert one.splitlines()[0].split(",")[:2] == ["session", "requests"]
    table = _audit("--by", "session", paths[0])
    header = next(line for line in table.splitlines() if line.startswith("session"))
    assert "agent" not in header
    assert json.loads(_audit("--json", paths[0]))["agents"] == ["claude"]
