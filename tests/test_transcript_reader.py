"""The reader's shortcuts give exactly what the plain, one-field-at-a-time code gives."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cachediag.ingest.anthropic import (
    _checked_counts,
    parse_timestamp,
    ttl_of,
    usage_counts,
    usage_fields,
    usage_record,
)
from cachediag.ingest.jsonl import BadLine
from cachediag.ingest.transcript import TranscriptReader
from cachediag.model import RequestRecord, ServerReason, SessionLog, StreamKind

MISSING = object()

counts = st.one_of(
    st.integers(min_value=-5, max_value=10**9 + 5),
    st.sampled_from([0, 10**9, 10**9 + 1, -1, 2**70]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([3.0, 2.5, -0.0, True, False, "7", None, [], {}]),
    st.just(MISSING),
)
USAGE_KEYS = (
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens",
)
SPLIT_KEYS = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")


def _usage(values: list[object], split: list[object] | None) -> dict[str, Any]:
    usage: dict[str, Any] = {
        k: v for k, v in zip(USAGE_KEYS, values, strict=True) if v is not MISSING
    }
    if split is not None:
        usage["cache_creation"] = {
            k: v for k, v in zip(SPLIT_KEYS, split, strict=True) if v is not MISSING
        }
    return usage


def _plain_counts(usage: dict[str, Any]) -> tuple[object, ...]:
    """The counts as ``usage_record`` read them before the shortcut: one at a time."""
    return _checked_counts(usage_fields(usage))


def _outcome(fn: Any, usage: dict[str, Any]) -> tuple[object, ...]:
    try:
        return ("ok", fn(usage))
    except BadLine as exc:
        return ("bad", str(exc))


@settings(max_examples=400, deadline=None)
@given(
    values=st.lists(counts, min_size=4, max_size=4),
    split=st.one_of(st.none(), st.lists(counts, min_size=2, max_size=2)),
)
def test_usage_counts_match_the_plain_reading(
    values: list[object], split: list[object] | None
) -> None:
    usage = _usage(values, split)
    assert _outcome(usage_counts, usage) == _outcome(_plain_counts, usage)


def test_usage_counts_of_a_split_that_is_not_an_object() -> None:
    usage = {k: 1 for k in USAGE_KEYS} | {"cache_creation": [5]}
    assert usage_counts(usage) == (1, 1, 1, 1, None, None)


def test_usage_record_ttl() -> None:
    usage = {k: 1 for k in USAGE_KEYS} | {"cache_creation": {SPLIT_KEYS[1]: 1}}
    assert usage_record(usage, 0.0, stream="main").ttl == "1h"
    assert ttl_of(None) == ttl_of(0) == "5m"


def test_the_record_of_a_line_has_every_field_in_its_place() -> None:
    """The reader builds records with positional arguments: each value lands where the
    keyword would put it (every field a different value, so a swap shows)."""
    line = {
        "type": "assistant",
        "uuid": "u1",
        "requestId": "req_1",
        "timestamp": "2025-06-01T12:00:00.500Z",
        "message": {
            "model": "claude-x",
            "id": "msg_1",
            "usage": {
                "input_tokens": 11,
                "cache_read_input_tokens": 12,
                "cache_creation_input_tokens": 13,
                "output_tokens": 14,
                "cache_creation": {"ephemeral_5m_input_tokens": 5, "ephemeral_1h_input_tokens": 8},
            },
            "diagnostics": {"cache_miss_reason": {"type": "tools_changed"}},
            "context_management": {"applied_edits": [{}, {}]},
        },
    }
    session = SessionLog("s", "f", "claude-code")
    reader = TranscriptReader(session, "f", file_stream=("agent-a", StreamKind.SUBAGENT))
    got = reader.feed_line(json.dumps(line).encode(), 7)
    assert got == RequestRecord(
        at=parse_timestamp(line["timestamp"]),
        input_tokens=11,
        cache_read_tokens=12,
        cache_creation_tokens=13,
        output_tokens=14,
        ttl="1h",
        cache_creation_5m_tokens=5,
        cache_creation_1h_tokens=8,
        model="claude-x",
        request_id="req_1",
        message_id="msg_1",
        stream="agent-a",
        line=7,
        server_reason=ServerReason(type="tools_changed"),
        applied_edits=2,
    )
