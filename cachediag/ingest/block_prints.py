"""Block prints: each tool, system block and message of a request body hashed, sized and
typed, never kept as text (prompt-cache.md §4).

``cache_control`` is markup, not content, and is stripped before hashing, because the
conversation's breakpoint moves to the newest message on every turn. ``fingerprint``
assembles a request's ``Fingerprint`` from these prints.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cachediag.model import BlockPrint

try:  # orjson serialises the repeated conversation several times faster than json.
    from orjson import OPT_SORT_KEYS as _SORT
    from orjson import dumps as _odumps

    def _rows(value: Any) -> Any:
        # orjson refuses tuple subclasses; block prints (NamedTuples) are written as rows.
        if isinstance(value, tuple):
            return list(value)
        raise TypeError(type(value).__name__)

    def _canonical(value: Any) -> bytes:
        return _odumps(value, option=_SORT, default=_rows)

except ImportError:  # pragma: no cover - exercised only without orjson
    import json

    def _canonical(value: Any) -> bytes:
        return json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


canonical_json = _canonical


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _strip_markup(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_markup(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_markup(v) for v in value]
    return value


def stripped_raw(value: Any) -> tuple[bytes, bool]:
    """Canonical bytes without ``cache_control``, and whether there was any to strip."""
    raw = _canonical(value)
    # Most blocks carry no markup: only re-serialise the few that do.
    if b'"cache_control"' in raw:
        return _canonical(_strip_markup(value)), True
    return raw, False


def content_hash(value: Any) -> str:
    return digest(stripped_raw(value)[0])


def text_chars(block: Any) -> int:
    if isinstance(block, str):
        return len(block)
    if isinstance(block, dict):
        text = block.get("text")
        return len(text) if isinstance(text, str) else len(_canonical(_strip_markup(block)))
    return 0


def cache_control_tag(block: Any) -> str:
    cc = block.get("cache_control") if isinstance(block, dict) else None
    if not isinstance(cc, dict):
        return ""
    parts = [str(cc.get("type", ""))]
    for key in ("ttl", "scope"):
        if cc.get(key) is not None:
            parts.append(f"{key}={cc[key]}")
    return ";".join(parts)


@dataclass(slots=True)
class BlockMemo:
    """What one reader has already fingerprinted, block by block.

    A capture resends the whole conversation on every request: a message seen before
    (same hash, no breakpoint on it) reuses its block prints instead of hashing every
    block again, and identical prints are stored once. Holds hashes, sizes and tool names
    only.
    """

    messages: dict[str, tuple[BlockPrint, ...]] = field(default_factory=dict)
    tool_names: dict[str, str] = field(default_factory=dict)
    """``tool_use`` id -> tool name, so a ``tool_result`` can say which tool it answers."""
    prints: dict[BlockPrint, BlockPrint] = field(default_factory=dict)

    def keep(self, bp: BlockPrint) -> BlockPrint:
        return self.prints.setdefault(bp, bp)


_ID_KEYS = ("id", "tool_use_id")
_MEDIA_TYPES = frozenset({"image", "image_url", "input_image", "input_file", "file"})


def block_type(block: Any, default: str = "text") -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    return kind if isinstance(kind, str) else default


def _content_size(content: Any) -> tuple[int, int]:
    """(characters, media) of a content value: a string, a list of blocks or a block."""
    if content is None:
        return 0, 0
    if isinstance(content, list):
        chars = media = 0
        for part in content:
            c, m = _block_size(part)
            chars, media = chars + c, media + m
        return chars, media
    return _block_size(content)


def _block_size(block: Any) -> tuple[int, int]:
    if isinstance(block, str):
        return len(block), 0
    if not isinstance(block, dict):
        return len(_canonical(block)), 0
    kind = block.get("type")
    if kind in _MEDIA_TYPES:
        return 0, 1
    if kind == "document":
        source = block.get("source")
        if isinstance(source, dict) and isinstance(source.get("data"), str):
            if source.get("type") == "text":
                return len(source["data"]), 0
        elif isinstance(source, dict) and source.get("type") == "content":
            return _content_size(source.get("content"))
        return 0, 1
    for key in ("text", "thinking"):
        value = block.get(key)
        if isinstance(value, str):
            return len(value), 0
    if kind in ("tool_use", "server_tool_use"):
        name = block.get("name")
        return len(name if isinstance(name, str) else "") + len(_canonical(block.get("input"))), 0
    if "content" in block:
        return _content_size(block.get("content"))
    if kind == "redacted_thinking" and isinstance(block.get("data"), str):
        return len(block["data"]), 0
    return len(stripped_raw(block)[0]), 0


def _block_print(block: Any, memo: BlockMemo) -> BlockPrint:
    if isinstance(block, str):
        block = {"type": "text", "text": block}
    name: str | None = None
    if isinstance(block, dict):
        call_id, tool = block.get("id"), block.get("name")
        if isinstance(tool, str):
            name = tool
            if isinstance(call_id, str):
                memo.tool_names[call_id] = tool
        answered = block.get("tool_use_id")
        if name is None and isinstance(answered, str):
            name = memo.tool_names.get(answered)
        hashed = {k: v for k, v in block.items() if k not in _ID_KEYS}
    else:
        hashed = block
    chars, media = _block_size(block)
    return memo.keep(
        BlockPrint(
            content_hash(hashed), chars, block_type(block), cache_control_tag(block), media, name
        )
    )


def _openai_calls(message: Mapping[str, Any], memo: BlockMemo) -> list[BlockPrint]:
    """OpenAI Chat Completions keeps an assistant's tool calls beside its content."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return []
    out = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            out.append(_block_print(call, memo))
            continue
        name, arguments = function.get("name"), function.get("arguments")
        chars = len(name if isinstance(name, str) else "") + len(
            arguments if isinstance(arguments, str) else _canonical(arguments)
        )
        hashed = {k: v for k, v in call.items() if k not in _ID_KEYS}
        out.append(
            memo.keep(
                BlockPrint(
                    content_hash(hashed),
                    chars,
                    "tool_use",
                    "",
                    0,
                    name if isinstance(name, str) else None,
                )
            )
        )
    return out


def message_prints(message: Any, memo: BlockMemo) -> tuple[str, tuple[BlockPrint, ...]]:
    """A message's hash and its blocks' prints (reused when it was seen before)."""
    raw, marked = stripped_raw(message)
    key = digest(raw)
    if not marked:
        known = memo.messages.get(key)
        if known is not None:
            return key, known
    if not isinstance(message, dict):
        prints: tuple[BlockPrint, ...] = (
            memo.keep(BlockPrint(key, len(raw), block_type(message, "message"))),
        )
    else:
        content = message.get("content")
        items: list[Any]
        if isinstance(content, list):
            items = content
        elif content is None:
            items = []
        else:
            items = [content]
        found = [_block_print(item, memo) for item in items] + _openai_calls(message, memo)
        if not found:
            # An item with no content at all (an OpenAI Responses function call...).
            found = [_block_print(message, memo)]
        prints = tuple(found)
    if not marked:
        memo.messages[key] = prints
    return key, prints
