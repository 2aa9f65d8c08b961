"""``cachediag warm``: each session judged by its own TTL, newest first, priced."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from cachediag.cli import main

T0 = 1_780_000_000.0  # 2026-05-28 20:26:40 UTC


def write(path: Path, session_id: str, last_at: float, ttl: str) -> Path:
    """Two requests, the second at ``last_at``: 100,000 cached tokens written for ``ttl``."""
    lines = []
    for i, at in enumerate((last_at - 30, last_at)):
        split = {"ephemeral_1h_input_tokens" if ttl == "1h" else "ephemeral_5m_input_tokens": 1000}
        lines.append(
            {
                "type": "assistant",
                "sessionId": session_id,
                "uuid": f"{session_id}-{i}",
                "requestId": f"{session_id}-r{i}",
                "timestamp": _iso(at),
                "message": {
                    "id": f"{session_id}-m{i}",
                    "model": "claude-sonnet-4-5-20250929",
                    "usage": {
                        "input_tokens": 10,
                        "cache_read_input_tokens": 99_000 * i,
                        "cache_creation_input_tokens": 1000 if i else 100_000,
                        "cache_creation": split,
                        "output_tokens": 5,
                    },
                },
            }
        )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    os.utime(path, (last_at, last_at))
    return path


def _iso(at: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def warm_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["warm", "--json", *args])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def test_each_session_by_its_own_ttl(tmp_path: Path) -> None:
    write(tmp_path / "five.jsonl", "five", T0, "5m")
    write(tmp_path / "hour.jsonl", "hour", T0 - 60, "1h")
    # Two minutes on: both warm, the newer first.
    soon = warm_json("--now", str(T0 + 120), str(tmp_path))["sessions"]
    assert [(s["session_id"], s["ttl"], s["seconds_left"]) for s in soon] == [
        ("five", "5m", 180.0),
        ("hour", "1h", 3600 - 180.0),
    ]
    # Ten minutes on, the 5-minute session is cold; an hour-long TTL would still call it warm.
    later = warm_json("--now", str(T0 + 600), str(tmp_path))["sessions"]
    assert [s["session_id"] for s in later] == ["hour"]
    assert later[0]["expires_at"] == T0 - 60 + 3600


def test_costs_of_resuming_now_and_after_expiry(tmp_path: Path) -> None:
    write(tmp_path / "hour.jsonl", "hour", T0, "1h")
    (row,) = warm_json("--now", str(T0 + 1), str(tmp_path))["sessions"]
    # Last prompt: 10 + 99,000 read + 1,000 written = 100,010 tokens. Sonnet 4.5:
    # 1h write $6 / Mtok -> $0.60006; read $0.30 / Mtok -> $0.030003.
    assert row["prompt_tokens"] == 100_010
    assert row["rebuild_usd"] == 0.60006
    assert row["resume_usd"] == 0.030003


def test_table_and_nothing_warm(tmp_path: Path) -> None:
    write(tmp_path / "five.jsonl", "five", T0, "5m")
    result = CliRunner().invoke(main, ["warm", "--now", str(T0 + 65), str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "1 session with a warm prompt cache" in result.stdout
    assert "3:55 │ 5m  │ five" in result.stdout
    cold = CliRunner().invoke(main, ["warm", "--now", str(T0 + 301), str(tmp_path)])
    assert cold.stdout == "No session has a warm prompt cache.\n"


def test_old_files_are_not_read(tmp_path: Path) -> None:
    path = write(tmp_path / "old.jsonl", "old", T0, "1h")
    # Written two days before --now: skipped without reading (an unreadable file would
    # otherwise be an error).
    os.utime(path, (T0 - 2 * 86400, T0 - 2 * 86400))
    path.chmod(0)
    try:
        assert warm_json("--now", str(T0), str(tmp_path))["sessions"] == []
    finally:
        path.chmod(0o600)
