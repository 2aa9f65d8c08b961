"""A request body reduced to hashes, names, counts and lengths (prompt-cache.md §4).

Nothing here keeps prompt text: a fingerprint travels into reports and state files.
Each block is hashed by ``block_prints``; here the request's settings (model, tools,
system, thinking, effort, betas, the rest of the body) are read around those prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# BlockMemo, canonical_json, content_hash and digest stay importable from here (``as``),
# where readers, the proxy and the tests have always found them.
from cachediag.ingest.block_prints import BlockMemo as BlockMemo
from cachediag.ingest.block_prints import (
    block_type,
    cache_control_tag,
    message_prints,
    stripped_raw,
    text_chars,
)
from cachediag.ingest.block_prints import canonical_json as canonical_json
from cachediag.ingest.block_prints import content_hash as content_hash
from cachediag.ingest.block_prints import digest as digest
from cachediag.model import BlockPrint, Fingerprint

# Body fields that have a dimension of their own; the rest hash into ``extra_body``.
_OWN_FIELDS = frozenset(
    {"model", "system", "tools", "messages", "thinking", "speed", "effort", "reasoning_effort"}
)
_EFFORT_KEY = "effort"


def _system(
    body: Mapping[str, Any], memo: BlockMemo
) -> tuple[tuple[str, ...], int, tuple[str, ...], tuple[BlockPrint, ...]]:
    system = body.get("system")
    if system is None:
        return (), 0, (), ()
    blocks = [system] if isinstance(system, str) else system
    if not isinstance(blocks, list):
        blocks = [blocks]
    hashes = tuple(content_hash(b) for b in blocks)
    tags = tuple(cache_control_tag(b) for b in blocks)
    prints = tuple(
        memo.keep(BlockPrint(h, text_chars(b), block_type(b), tag))
        for h, b, tag in zip(hashes, blocks, tags, strict=True)
    )
    return hashes, sum(text_chars(b) for b in blocks), tags, prints


def _tools(
    body: Mapping[str, Any], memo: BlockMemo
) -> tuple[tuple[tuple[str, str], ...], bool, tuple[BlockPrint, ...]]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return (), False, ()
    out: list[tuple[str, str]] = []
    prints: list[BlockPrint] = []
    deferred = False
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raw = stripped_raw(tool)[0]
            out.append((f"#{i}", digest(raw)))
            prints.append(memo.keep(BlockPrint(out[-1][1], len(raw), "tool")))
            continue
        name = tool.get("name")
        function = tool.get("function")
        if name is None and isinstance(function, dict):
            name = function.get("name")  # OpenAI's {"type": "function", "function": {...}}
        # Deferral is its own dimension (defer_loading_changed), not a new definition.
        definition = {k: v for k, v in tool.items() if k != "defer_loading"}
        raw = stripped_raw(definition)[0]
        label = name if isinstance(name, str) else f"#{i}"
        out.append((label, digest(raw)))
        kind = block_type(tool, "tool")
        prints.append(
            memo.keep(
                BlockPrint(
                    out[-1][1],
                    len(raw),
                    "tool" if kind in ("custom", "function") else kind,
                    cache_control_tag(tool),
                    0,
                    label,
                )
            )
        )
        deferred = deferred or bool(tool.get("defer_loading"))
    return tuple(out), deferred, tuple(prints)


def _effort(body: Mapping[str, Any]) -> str:
    for holder in (body.get("output_config"), body.get("reasoning"), body):
        if isinstance(holder, dict):
            value = holder.get(_EFFORT_KEY)
            if value is not None:
                return str(value)
    value = body.get("reasoning_effort")
    return "default" if value is None else str(value)


def _thinking(body: Mapping[str, Any]) -> tuple[str, str]:
    thinking = body.get("thinking")
    if not isinstance(thinking, dict):
        return "off", "default"
    mode = str(thinking.get("type", "enabled"))
    display = thinking.get("display")
    return mode, "default" if display is None else str(display)


def _extra(body: Mapping[str, Any]) -> str:
    rest: dict[str, Any] = {}
    for key, value in body.items():
        if key in _OWN_FIELDS:
            continue
        if key in ("output_config", "reasoning") and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != _EFFORT_KEY}
            if not value:
                continue
        rest[key] = value
    return content_hash(rest)


def betas_from_headers(headers: Any) -> tuple[str, ...]:
    """The sorted ``anthropic-beta`` names; no other header is ever looked at."""
    if isinstance(headers, list):
        # Some loggers keep headers as [name, value] pairs.
        headers = {
            p[0]: p[1]
            for p in headers
            if isinstance(p, list | tuple) and len(p) == 2 and isinstance(p[0], str)
        }
    if not isinstance(headers, dict):
        return ()
    names: set[str] = set()
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == "anthropic-beta":
            values = value if isinstance(value, list) else [value]
            for v in values:
                if isinstance(v, str):
                    names.update(part.strip() for part in v.split(",") if part.strip())
    return tuple(sorted(names))


def fingerprint_request(
    body: Mapping[str, Any], betas: tuple[str, ...], memo: BlockMemo | None = None
) -> Fingerprint:
    """Everything prompt-cache.md §4 compares, from one Messages API request body, and
    per block (tools, system, message content) its hash, size, type and breakpoint.

    ``memo`` shares work and memory between the requests of one log; without it each
    body is fingerprinted on its own.
    """
    if memo is None:
        memo = BlockMemo()
    system_hashes, system_chars, system_cc, system_blocks = _system(body, memo)
    tools, deferred, tool_blocks = _tools(body, memo)
    messages = body.get("messages")
    msgs = messages if isinstance(messages, list) else []
    hashed = [message_prints(m, memo) for m in msgs]
    body_betas = body.get("betas")
    if isinstance(body_betas, list):
        betas = tuple(sorted(set(betas) | {b for b in body_betas if isinstance(b, str)}))
    mode, display = _thinking(body)
    model = body.get("model")
    speed = body.get("speed")
    return Fingerprint(
        model=model if isinstance(model, str) else None,
        system_hashes=system_hashes,
        system_chars=system_chars,
        system_cache_control=system_cc,
        tools=tools,
        betas=betas,
        effort=_effort(body),
        thinking_mode=mode,
        thinking_display=display,
        fast_mode="default" if speed is None else str(speed),
        extra_body_hash=_extra(body),
        defer_loading=deferred,
        message_hashes=tuple(h for h, _ in hashed),
        message_roles=tuple(str(m.get("role", "?")) if isinstance(m, dict) else "?" for m in msgs),
        tool_blocks=tool_blocks,
        system_blocks=system_blocks,
        message_blocks=tuple(prints for _, prints in hashed),
        cache_control=cache_control_tag(body),
    )


def identity(fp: Fingerprint) -> tuple[object, ...]:
    """Which agent sent a request: its system prompt and tool list."""
    return (fp.system_hashes, fp.tools)
