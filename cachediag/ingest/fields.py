"""The pick stage (``ingest.stages``): the fields of a Claude Code transcript line that
the reader uses, and nothing else (``stages.LineFields``).

A transcript line is mostly content (text, thinking, tool input) that no count needs,
and half the assistant lines are later copies of a response already read (one line per
content block). The compiled picker (``_fields.c``) checks that a line is JSON and builds
only these fields from its bytes; ``fields_of`` is its twin over a parsed line, and the
two give the same tuple for every line the picker takes (tests/test_fields.py). A line
the picker does not take (not JSON, a field of an unexpected type, a key spelled with an
escape, a repeated key...) is parsed whole with orjson, as before, so every answer and
every bad line stays what it was.

Standard library only (and the optional compiled picker): the status line imports it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cachediag.ingest.anthropic import applied_edits, reason_code, usage_fields
from cachediag.ingest.jsonl import JsonObject, parse_line, parsed_lines
from cachediag.ingest.native import PICKER
from cachediag.ingest.stages import LineFields, MessageFields, PickedLines
from cachediag.model import LineIssue


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _named(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def message_fields(message: JsonObject) -> MessageFields:
    usage = message.get("usage")
    return (
        _text(message.get("model")),
        _text(message.get("id")),
        usage_fields(usage) if isinstance(usage, dict) else None,
        reason_code(message),
        applied_edits(message),
    )


def fields_of(obj: JsonObject) -> LineFields:
    """The fields of a parsed line (the picker's twin; its epoch seconds left unread)."""
    get = obj.get
    parent = get("parentUuid")
    message = get("message")
    return (
        _text(get("type")),
        _text(get("uuid")),
        parent if parent is None or isinstance(parent, str) else False,
        get("isSidechain") is True,
        _named(get("agentId")),
        get("timestamp"),
        None,
        _text(get("requestId")),
        get("isApiErrorMessage") is True,
        _text(get("subtype")),
        get("isCompactSummary") is True,
        _named(get("cwd")),
        _named(get("sessionId")),
        message_fields(message) if isinstance(message, dict) else None,
    )


def py_pick(raw: bytes) -> LineFields:
    """The fields of a raw line, parsed whole; raises ``BadLine`` as ``parse_line`` does."""
    return fields_of(parse_line(raw))


def _load() -> Any:
    if PICKER is None:
        return py_pick
    pick = PICKER

    def picked(raw: bytes) -> LineFields:
        fields: LineFields | None = pick(raw)
        return fields if fields is not None else fields_of(parse_line(raw))

    return picked


read_fields = _load()
"""``read_fields(raw) -> LineFields``: the compiled picker, or the whole parse for the
lines it leaves (and for every line without it)."""


def pick_fields(
    numbered: Iterable[tuple[int, bytes]], source: str, issues: list[LineIssue]
) -> PickedLines:
    """Each scanned line's fields (``jsonl.parse_numbered``, yielding fields instead of
    objects); a line that is not a JSON object becomes an issue in ``issues``."""
    return parsed_lines(numbered, source, issues, read_fields)
