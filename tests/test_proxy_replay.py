"""Captures replayed through the proxy: its log names every cause the bodies show, as the
capture itself does (timing causes aside: a replay has no pauses)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")

from cachediag.cli import main
from tests.conftest import FIXTURES
from tests.proxy_support import replay_capture

CAPTURES = sorted((FIXTURES / "captures").glob("*.jsonl")) + sorted(
    (FIXTURES / "captures" / "streams").glob("*.jsonl")
)
TIMING = {"ttl_expired_5m", "ttl_expired_1h"}
COMPARED = (
    "outcome", "causes", "cause_source", "tools_added", "tools_removed", "tools_added_names",
    "tools_removed_names", "system_char_delta", "system_blocks_changed",
    "first_rewritten_message", "first_rewritten_role", "reprocessed_tokens", "announced",
    "input_tokens", "cache_read_tokens", "cache_creation_tokens", "output_tokens", "ttl", "model",
)  # fmt: skip


def analyzed(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["analyze", "--now", "0", "--requests", str(path)])
    assert result.exit_code == 0, result.output
    [line] = result.stdout.splitlines()
    session: dict[str, Any] = json.loads(line)
    return session


def by_message(session: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    out = {r["message_id"]: ("main", r) for r in session["requests"]}
    for stream in session["streams"]:
        for r in stream["requests"]:
            out[r["message_id"]] = (stream["kind"], r)
    return out


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.stem)
def test_replayed_capture_names_the_same_causes(capture: Path, tmp_path: Path) -> None:
    log_dir = tmp_path / "captures"
    asyncio.run(replay_capture(capture, log_dir))
    [day_file] = list(log_dir.glob("*.jsonl"))
    direct, proxied = by_message(analyzed(capture)), by_message(analyzed(log_dir))
    assert proxied.keys() == direct.keys()
    for msg_id, (kind, want) in direct.items():
        got_kind, got = proxied[msg_id]
        assert got_kind == kind, msg_id
        if capture.stem in TIMING and want["outcome"] == "miss":
            # No pause in a replay: the same miss, with nothing changed, inside the TTL.
            assert (got["outcome"], got["causes"]) == ("miss", ["likely_server_side"])
            continue
        for key in COMPARED:
            assert got.get(key) == want.get(key), (msg_id, key)
    assert day_file.stat().st_mode & 0o777 == 0o600
    assert log_dir.stat().st_mode & 0o777 == 0o700
