"""Transcripts joined to the proxy's records (``--captures``): a transcript shows no tools
and no system prompt, its captured requests do. Each capture fixture is replayed through
the proxy; a transcript of the same responses, read with ``--captures``, must get every
outcome and cause the capture itself gives, the TTL ones included (their clock is the
transcript's)."""

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
from tests.proxy_support import replay_capture, transcript_of
from tests.test_proxy_replay import COMPARED, analyzed

CAPTURES = sorted((FIXTURES / "captures").glob("*.jsonl")) + sorted(
    (FIXTURES / "captures" / "streams").glob("*.jsonl")
)


def run(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["analyze", "--now", "0", "--requests", *args])
    assert result.exit_code == 0, result.output
    session: dict[str, Any] = json.loads(result.stdout)
    return session


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for capture in CAPTURES:
        folder = tmp_path_factory.mktemp(capture.stem)
        asyncio.run(replay_capture(capture, folder))
        out[capture.stem] = folder
    return out


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.stem)
def test_joined_transcript_names_every_cause(
    capture: Path, replayed: dict[str, Path], tmp_path: Path
) -> None:
    direct = analyzed(capture)["requests"]  # the main thread, read from the bodies
    transcript = tmp_path / "session.jsonl"
    lines = transcript_of(capture, {r["message_id"] for r in direct})
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    joined = run("--captures", str(replayed[capture.stem]), str(transcript))["requests"]
    alone = run("--no-captures", str(transcript))["requests"]
    assert [r["message_id"] for r in joined] == [r["message_id"] for r in direct]
    for want, got in zip(direct, joined, strict=True):
        for key in COMPARED:
            if key != "cause_source":
                assert got.get(key) == want.get(key), (want["message_id"], key)
        if want["outcome"] in ("miss", "expected") and want["cause_source"] is not None:
            expected_source = "server" if want["cause_source"] == "server" else "capture"
            assert got["cause_source"] == expected_source, want["message_id"]
    # Without the join the transcript alone cannot name what only bodies show.
    if capture.stem in {"tools_changed", "system_prompt_changed", "betas_changed"}:
        assert [r["causes"] for r in alone] != [r["causes"] for r in joined]


def test_explain_says_the_cause_came_from_the_captures(
    replayed: dict[str, Path], tmp_path: Path
) -> None:
    capture = FIXTURES / "captures" / "tools_changed.jsonl"
    direct = analyzed(capture)["requests"]
    transcript = tmp_path / "session.jsonl"
    lines = transcript_of(capture, {r["message_id"] for r in direct})
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = CliRunner().invoke(
        main, ["explain", str(transcript), "--captures", str(replayed["tools_changed"])]
    )
    assert result.exit_code == 0, result.output
    assert "cause: tools_changed (from the captured requests)" in result.output
    assert "tools added: WebFetch" in result.output


def test_a_missing_captures_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["analyze", "--captures", str(tmp_path / "nope"), str(tmp_path)]
    )
    assert result.exit_code == 1 and "no such folder" in result.stderr
