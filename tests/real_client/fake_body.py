"""What the fake API reads from a request body and writes back: the cache blocks, the
ground-truth record, the scripted answers' helpers and the SSE framing (fake_api.py has
the server and its cache)."""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

BYTES_PER_TOKEN = 4
LOOKBACK = 20
TTL = {"5m": 300.0, "1h": 3600.0}
BILLING = "x-anthropic-billing-header"
COMPACT_MARKERS = (
    "create a detailed summary of the conversation",
    "Your task is to create a detailed summary",
)


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def tokens_of(value: Any) -> int:
    return max(1, math.ceil(len(canonical(value)) / BYTES_PER_TOKEN))


def strip_cc(block: Any) -> Any:
    """A block as the cache keys it: without its cache_control marker."""
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if k != "cache_control"}
    return block


@dataclass
class Block:
    part: str  # "tools", "system" or "messages"
    index: int  # position in its part (for messages: the message index)
    tokens: int
    ttl: str | None  # the cache_control TTL when this block is a breakpoint
    digest: str = ""  # chained hash of the prefix up to and including this block


def blocks_of(body: dict[str, Any]) -> tuple[list[Block], list[str]]:
    """The body's prefix as cache blocks, and the billing-header texts left out of it."""
    out: list[tuple[str, int, Any]] = []
    billing: list[str] = []
    for i, tool in enumerate(body.get("tools") or []):
        out.append(("tools", i, tool))
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    for i, block in enumerate(system or []):
        text = block.get("text", "") if isinstance(block, dict) else ""
        if isinstance(text, str) and text.startswith(BILLING):
            billing.append(text)
            continue
        out.append(("system", i, block))
    for i, msg in enumerate(body.get("messages") or []):
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            out.append(("messages", i, {"role": msg.get("role"), **block}))
    chain = hashlib.sha256()
    result: list[Block] = []
    for part, index, raw in out:
        cc = raw.get("cache_control") if isinstance(raw, dict) else None
        ttl = (cc.get("ttl") or "5m") if isinstance(cc, dict) else None
        keyed = strip_cc(raw)
        chain.update(part.encode() + b"\0" + canonical(keyed) + b"\0")
        result.append(Block(part, index, tokens_of(keyed), ttl, chain.hexdigest()))
    return result, billing


@dataclass
class Entry:
    expires: float


@dataclass
class Truth:
    """What the fake knows about one model call, from the body alone.

    ``outcome`` follows cachediag's documented rule against the previous call of the same
    stream (cold / hit / miss, and ``expected`` for the first main call after a
    compaction); ``cause`` is the first of model, tools, system, messages, TTL that
    differs (all of them), or TTL, or messages, for a miss."""

    seq: int
    model: str
    kind: str  # "turn", "tool_followup", "compaction", "subagent", "aux"
    stream: str  # "main", "subagent:<id>", "compaction", "aux"
    msg_id: str
    request_id: str
    at: float  # the fake clock
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    output_tokens: int
    outcome: str
    causes: list[str]  # for a miss: every one of model, tools, system that differs
    changed: str | None  # first prefix part that differs from the stream's previous call
    prev: int | None  # seq of that call
    tools: list[str] = field(default_factory=list)
    tools_hash: str = ""
    system_hash: str = ""
    billing: list[str] = field(default_factory=list)
    streamed: bool = True
    n_messages: int = 0

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


ABSENT: Any = object()
# Truth's causes as the API's diagnostics name them (prompt-cache.md, Server-reported reasons).
SERVER_REASON = {
    "model_changed": "model_changed",
    "system_prompt_changed": "system_changed",
    "tools_changed": "tools_changed",
    "messages_rewritten": "messages_changed",
}


def diagnostics_of(truth: Truth) -> Any:
    """What the API reports about the cache for this call, as Claude Code 2.1.260+ reads it
    (``message.diagnostics.cache_miss_reason``): nothing for a stream's first call or when
    the entry timed out (nothing left to compare with), ``null`` for no divergence, else the
    first changed part and the tokens it cost."""
    if truth.prev is None or truth.outcome == "cold":
        return ABSENT
    if truth.outcome == "hit":
        return None
    reason = next((SERVER_REASON[c] for c in truth.causes if c in SERVER_REASON), None)
    if reason is None:
        return ABSENT
    missed = truth.cache_creation_input_tokens + truth.input_tokens
    return {"cache_miss_reason": {"type": reason, "cache_missed_input_tokens": missed}}


def tool_use(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": name, "input": args}


def answered_tool(body: dict[str, Any]) -> bool:
    """The newest assistant message asked for a tool: this call carries its result (where
    Claude Code puts the result among the user's blocks varies by release)."""
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "assistant":
            content = msg.get("content")
            return isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_use" for b in content
            )
    return False


def system_blocks(body: dict[str, Any]) -> list[Any]:
    system = body.get("system")
    if isinstance(system, str):
        return [{"type": "text", "text": system}]
    return list(system or [])


def is_billing(block: Any) -> bool:
    return isinstance(block, dict) and str(block.get("text", "")).startswith(BILLING)


def first_user_text(body: dict[str, Any]) -> str:
    """The user's texts of the first message (a subagent's task is there)."""
    for msg in body.get("messages") or []:
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))
    return ""


def last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or [] if isinstance(b, dict)]
        joined = "\n".join(t for t in texts if isinstance(t, str))
        if joined.strip():
            return joined
    return ""


def sse(message: dict[str, Any]) -> Iterator[bytes]:
    """The message as the API streams it: start, one block at a time, delta, stop."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield event("message_start", {"message": start})
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield event(
                "content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}}
            )
            for piece in re.findall(r".{1,40}", block["text"], flags=re.S):
                yield event(
                    "content_block_delta",
                    {"index": i, "delta": {"type": "text_delta", "text": piece}},
                )
        else:
            head = {**block, "input": {}}
            yield event("content_block_start", {"index": i, "content_block": head})
            partial = json.dumps(block["input"])
            yield event(
                "content_block_delta",
                {"index": i, "delta": {"type": "input_json_delta", "partial_json": partial}},
            )
        yield event("content_block_stop", {"index": i})
    yield event(
        "message_delta",
        {
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield event("message_stop", {})


def event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
