"""A request body reduced to hashes, names, counts and lengths (prompt-cache.md §4).

Nothing here keeps prompt text: a fingerprint travels into reports and state files.
``cache_control`` is markup, not content, and is stripped before hashing, because the
conversation's breakpoint moves to the newest message on every turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

try:  # orjson serialises the repeated conversation several times faster than json.
    from orjson import OPT_SORT_KEYS as _SORT
    from orjson import dumps as _odumps

    def _canonical(value: Any) -> bytes:
        return _odumps(value, option=_SORT)

except ImportError:  # pragma: no cover - exercised only without orjson
    import json

    def _canonical(value: Any) -> bytes:
        return json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


from cachediag.model import Fingerprint

canonical_json = _canonical

JsonObject = dict[str, Any]

# Body fields that have a dimension of their own; the rest hash into ``extra_body``.
_OWN_FIELDS = frozenset(
    {"model", "system", "tools", "messages", "thinking", "speed", "effort", "reasoning_effort"}
)
_EFFORT_KEY = "effort"


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _strip_markup(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_markup(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_markup(v) for v in value]
    return value


def content_hash(value: Any) -> str:
    raw = _canonical(value)
    # Most blocks carry no markup: only re-serialise the few that do.
    if b'"cache_control"' in raw:
        raw = _canonical(_strip_markup(value))
    return digest(raw)


def _text_chars(block: Any) -> int:
    if isinstance(block, str):
        return len(block)
    if isinstance(block, dict):
        text = block.get("text")
        return len(text) if isinstance(text, str) else len(_canonical(_strip_markup(block)))
    return 0


def _cache_control_tag(block: Any) -> str:
    cc = block.get("cache_control") if isinstance(block, dict) else None
    if not isinstance(cc, dict):
        return ""
    parts = [str(cc.get("type", ""))]
    for key in ("ttl", "scope"):
        if cc.get(key) is not None:
            parts.append(f"{key}={cc[key]}")
    return ";".join(parts)


def _system(body: Mapping[str, Any]) -> tuple[tuple[str, ...], int, tuple[str, ...]]:
    system = body.get("system")
    if system is None:
        return (), 0, ()
    blocks = [system] if isinstance(system, str) else system
    if not isinstance(blocks, list):
        blocks = [blocks]
    return (
        tuple(content_hash(b) for b in blocks),
        sum(_text_chars(b) for b in blocks),
        tuple(_cache_control_tag(b) for b in blocks),
    )


def _tools(body: Mapping[str, Any]) -> tuple[tuple[tuple[str, str], ...], bool]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return (), False
    out: list[tuple[str, str]] = []
    deferred = False
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            out.append((f"#{i}", content_hash(tool)))
            continue
        name = tool.get("name")
        function = tool.get("function")
        if name is None and isinstance(function, dict):
            name = function.get("name")  # OpenAI's {"type": "function", "function": {...}}
        # Deferral is its own dimension (defer_loading_changed), not a new definition.
        definition = {k: v for k, v in tool.items() if k != "defer_loading"}
        out.append((name if isinstance(name, str) else f"#{i}", content_hash(definition)))
        deferred = deferred or bool(tool.get("defer_loading"))
    return tuple(out), deferred


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


def fingerprint_request(body: Mapping[str, Any], betas: tuple[str, ...]) -> Fingerprint:
    """Everything prompt-cache.md §4 compares, from one Messages API request body."""
    system_hashes, system_chars, system_cc = _system(body)
    tools, deferred = _tools(body)
    messages = body.get("messages")
    msgs = messages if isinstance(messages, list) else []
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
        message_hashes=tuple(content_hash(m) for m in msgs),
        message_roles=tuple(str(m.get("role", "?")) if isinstance(m, dict) else "?" for m in msgs),
    )


def identity(fp: Fingerprint) -> tuple[object, ...]:
    """Which agent sent a request: its system prompt and tool list."""
    return (fp.system_hashes, fp.tools)
