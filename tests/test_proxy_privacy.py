"""Nothing a prompt, a tool, an answer or a credential holds reaches the capture log or
any output read from it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")

import aiohttp

from cachediag.cli import main
from tests.proxy_support import FakeUpstream, Seen, json_reply, proxy_to, sse_reply

CANARIES = {
    "system": "CANARY-SYSTEM-7f3a",
    "tool": "CANARY-TOOL-DESC-91bc",
    "tool_input": "CANARY-TOOL-INPUT-22de",
    "prompt": "CANARY-PROMPT-5e6f",
    "api_key": "sk-ant-api03-CANARY-KEY-0a0b",
    "bearer": "Bearer CANARY-OAUTH-0c0d",
    "cookie": "session=CANARY-COOKIE-0e0f",
    "header": "CANARY-OTHER-HEADER-1a1b",
}


def body(turn: int) -> bytes:
    messages = [
        {"role": "user", "content": f"{CANARIES['prompt']} turn 0"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "tu_1",
                    "name": "Bash",
                    "input": {"command": CANARIES["tool_input"]},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu_1", "content": CANARIES["prompt"]},
            ],
        },
    ][: 1 + 2 * turn]
    return json.dumps({
        "model": "claude-opus-4-5",
        "max_tokens": 10,
        "system": [{"type": "text", "text": CANARIES["system"],
                    "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "Bash", "description": CANARIES["tool"],
                   "input_schema": {"type": "object"}}],
        "messages": messages,
    }).encode()  # fmt: skip


def test_no_canary_in_the_log_or_any_output(tmp_path: Path) -> None:
    log_dir = tmp_path / "captures"
    replies = [sse_reply("msg_a", request_id="req_a"), json_reply("msg_b", request_id="req_b")]

    def reply_for(seen: Seen) -> object:
        return replies.pop(0)

    with FakeUpstream(reply_for) as up:  # type: ignore[arg-type]

        async def go() -> None:
            async with proxy_to(up.url, log_dir) as base, aiohttp.ClientSession() as s:
                for turn in (0, 1):
                    async with s.post(
                        base + "/v1/messages?beta=true",
                        data=body(turn),
                        headers={
                            "x-api-key": CANARIES["api_key"],
                            "authorization": CANARIES["bearer"],
                            "cookie": CANARIES["cookie"],
                            "x-custom": CANARIES["header"],
                            "anthropic-beta": "prompt-caching-2024-07-31",
                        },
                    ) as resp:
                        await resp.read()

        asyncio.run(go())
    assert len(up.seen) == 2
    stored = b"".join(p.read_bytes() for p in log_dir.rglob("*") if p.is_file())
    records = b"".join(p.read_bytes() for p in sorted(log_dir.glob("*.jsonl")))
    assert records.count(b"\n") == 2
    runner = CliRunner()
    outputs = [
        runner.invoke(main, ["analyze", "--now", "0", "--requests", str(log_dir)]).output,
        runner.invoke(main, ["analyze", "--now", "0", str(log_dir)]).output,
        runner.invoke(main, ["explain", "--json", str(next(log_dir.glob("*.jsonl")))]).output,
    ]
    texts = [stored.decode(), *outputs]
    for name, canary in CANARIES.items():
        secret = canary.split()[-1].split("=")[-1]
        for text in texts:
            assert secret not in text, name
    for answer in ("ANSWER-TEXT", "STREAMED-TEXT"):
        assert answer not in stored.decode()
