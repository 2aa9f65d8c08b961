"""``cachediag prompt`` on a Claude Code transcript joined to the capture proxy's records:
the transcript shows no prompt, the proxy kept its per-block fingerprints."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")

from cachediag.cli import main
from tests.conftest import FIXTURES
from tests.proxy_support import replay_capture, transcript_of

PROMPT = FIXTURES / "prompt"


def _findings(*args: str) -> list[tuple[object, ...]]:
    result = CliRunner().invoke(main, ["prompt", "--json", *args])
    assert result.exit_code == 0, result.output
    obj = json.loads(result.stdout)
    return [(f["kind"], f["where"], f["first_request"], f["requests"]) for f in obj["findings"]]


@pytest.mark.parametrize(
    "name", ["volatile_in_prefix", "stable_card_after_breakpoint", "tools_reordered"]
)
def test_a_transcript_with_its_captures_has_the_captures_findings(
    name: str, tmp_path: Path
) -> None:
    capture = PROMPT / f"{name}.jsonl"
    folder = tmp_path / "captures"
    folder.mkdir(mode=0o700)  # the proxy takes only a private folder (or makes its own)
    folder.chmod(0o700)  # whatever the umask
    asyncio.run(replay_capture(capture, folder))
    direct = CliRunner().invoke(main, ["analyze", "--now", "0", "--requests", str(capture)])
    message_ids = {r["message_id"] for r in json.loads(direct.stdout)["requests"]}
    transcript = tmp_path / "session.jsonl"
    lines = transcript_of(capture, message_ids)
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert _findings("--captures", str(folder), str(transcript)) == _findings(str(capture))
    alone = CliRunner().invoke(main, ["prompt", "--no-captures", str(transcript)])
    assert alone.exit_code == 1 and "has no request body" in alone.output
