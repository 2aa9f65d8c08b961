"""The fields of a Claude Code transcript line that the reader uses, and nothing else.

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

from collections.abc import Iterable, Iterator
from typing import Any, Final

from cachediag.ingest.anthropic import (
    ReasonCode,
    UsageFields,
    applied_edits,
    reason_code,
    usage_fields,
)
from cachediag.ingest.lines import JsonObject, parse_line, parsed_lines
from cachediag.ingest.native import PICKER
from cachediag.model import LineIssue

MessageFields = tuple[str | None, str | None, UsageFields | None, ReasonCode, int]
"""An assistant message: model, id, usage (``None``: not an object), what its
diagnostics say (``anthropic.reason_code``), its count of applied context edits."""

LineFields = tuple[
    str | None,  # type
    str | None,  # uuid
    Any,  # parentUuid: a str, None (null or missing) or False (any other value)
    bool,  # isSidechain is true
    str | None,  # agentId (non-empty)
    Any,  # timestamp, as written
    float | None,  # the timestamp's epoch seconds, when the picker read them
    str | None,  # requestId
    bool,  # isApiErrorMessage is true
    str | None,  # subtype
    bool,  # isCompactSummary is true
    str | None,  # cwd (non-empty)
    str | None,  # sessionId (non-empty)
    MessageFields | None,  # message (None: not an object)
]
"""A line's fields, in the picker's order: a str field that is not a str is ``None``."""

# Where each field is (Final: mypy then knows each one's type).
TYPE: Final = 0
UUID: Final = 1
PARENT: Final = 2
SIDECHAIN: Final = 3
AGENT: Final = 4
TIMESTAMP: Final = 5
AT: Final = 6
CWD: Final = 11
SESSION: Final = 12


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


def numbered_fields(
    numbered: Iterable[tuple[int, bytes]], source: str, issues: list[LineIssue]
) -> Iterator[tuple[int, LineFields]]:
    """``lines.parse_numbered``, yielding each line's fields instead of its object."""
    return parsed_lines(numbered, source, issues, read_fields)
