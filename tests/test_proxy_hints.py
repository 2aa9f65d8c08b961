"""Claude Code's gateway hint headers: the five the issue names are kept (printable,
bounded), every other header value never is, all are forwarded as sent, and the hints
change no accounting: formats.md §6 names the headers but defines none of their values,
so cachediag stores them and does not act on them (docs/proxy.md, "Gateway hints")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")

import aiohttp

from cachediag.cli import main
from tests.conftest import FIXTURES
from tests.proxy_support import FakeUpstream, Seen, proxy_to, records, replay_capture, sse_reply

BODY = json.dumps(
    {
        "model": "claude-opus-4-5",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hello"}],
    }
).encode()

SENT = {
    "x-claude-code-request-class": "main",
    "X-Claude-Code-Agent-Type": "general-purpose",  # names match in any case
    "x-claude-code-compaction": "auto\tr\u00e9active",  # printable ASCII only
    "x-claude-code-context-compacted": "1",
    "x-claude-code-prompt-id": "p" * 300,  # bounded
    # Named by formats.md §6 (or sent by newer versions) but not a stream or compaction
    # hint: never stored, like any other header value.
    "x-claude-code-prev-tool-durations": "CANARY-DURATIONS-4c1d",
    "x-claude-code-session-id": "CANARY-SESSION-8e2f",
    "x-claude-code-agent-id": "CANARY-AGENT-ID-6a7b",
}


def test_the_five_hints_are_kept_and_nothing_else(tmp_path: Path) -> None:
    seen: list[Seen] = []

    def answer(s: Seen) -> Any:
        seen.append(s)
        return sse_reply("msg_hints")

    with FakeUpstream(answer) as up:

        async def go() -> None:
            async with proxy_to(up.url, tmp_path) as base, aiohttp.ClientSession() as s:
                url = f"{base}/v1/messages?beta=true"
                async with s.post(url, data=BODY, headers=SENT) as resp:
                    await resp.read()
                async with s.post(url, data=BODY) as resp:  # a client without hints
                    await resp.read()

        asyncio.run(go())
    with_hints, without = records(tmp_path)
    assert with_hints["hints"] == {
        "request_class": "main",
        "agent_type": "general-purpose",
        "compaction": "autoractive",
        "context_compacted": "1",
        "prompt_id": "p" * 128,
    }
    assert "hints" not in without
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    for name in ("prev-tool-durations", "session-id", "agent-id"):
        value = SENT[f"x-claude-code-{name}"]
        assert value.encode() not in stored
    # Forwarded as the client sent them, every one.
    forwarded = {k.lower(): v.encode("latin-1") for k, v in seen[0].headers}
    assert {k.lower(): v.encode() for k, v in SENT.items()}.items() <= forwarded.items()


def ledgers(log_dir: Path) -> list[tuple[str, str, list[tuple[Any, ...]]]]:
    """Every stream's requests as the accounting sees them (times aside: two replays of
    one capture run at different moments)."""
    result = CliRunner().invoke(main, ["analyze", "--now", "0", "--requests", str(log_dir)])
    assert result.exit_code == 0, result.output
    out = []
    for line in result.stdout.splitlines():
        session = json.loads(line)
        main_stream = {"id": "main", "kind": "main", "requests": session["requests"]}
        for stream in [main_stream, *session["streams"]]:
            rows = [
                (r["message_id"], r["outcome"], r["causes"], r.get("announced"), r["ttl"])
                for r in stream["requests"]
            ]
            out.append((stream["id"], stream["kind"], rows))
    return out


def test_hints_change_no_accounting(tmp_path: Path) -> None:
    capture = FIXTURES / "captures" / "streams" / "parallel_subagents.jsonl"

    def hints(i: int) -> dict[str, str]:
        # Values that, read as a router might, would move requests between streams and
        # announce rebuilds: the ledger must not follow them.
        return {
            "x-claude-code-request-class": ("main", "subagent", "compaction")[i % 3],
            "x-claude-code-agent-type": f"agent-{i % 2}",
            "x-claude-code-compaction": "manual",
            "x-claude-code-context-compacted": "true",
            "x-claude-code-prompt-id": f"prompt-{i // 4}",
        }

    plain, hinted = tmp_path / "plain", tmp_path / "hinted"
    asyncio.run(replay_capture(capture, plain))
    asyncio.run(replay_capture(capture, hinted, hints))
    assert all("hints" in r for r in records(hinted))
    assert not any("hints" in r for r in records(plain))
    got = ledgers(hinted)
    assert got == ledgers(plain)
    assert {kind for _, kind, _ in got} >= {"main", "subagent"}
