"""The reader's shortcuts give exactly what the plain, one-field-at-a-time code gives."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cachediag.ingest.anthropic import (
    _checked_counts,
    ttl_of,
    usage_counts,
    usage_fields,
    usage_record,
)
from cachediag.ingest.lines import BadLine
from cachediag.ingest.transcript import merged_copy
from cachediag.model import Fingerprint, RequestRecord, ServerReason

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


def _distinct_value(i: int, f: dataclasses.Field[Any]) -> Any:
    """A value unlike the field's default and every other field's, so that a field the
    copy drops or swaps shows."""
    values: dict[str, object] = {
        "ttl": "1h",
        "model": "m",
        "request_id": "req",
        "message_id": "msg",
        "stream": "agent-x",
        "server_reason": ServerReason(type="tools_changed", missed_tokens=3),
        "fingerprint": Fingerprint(model="m"),
    }
    return values.get(f.name, 17 + i)


def test_merged_copy_keeps_every_field() -> None:
    record = RequestRecord(
        **{f.name: _distinct_value(i, f) for i, f in enumerate(dataclasses.fields(RequestRecord))}
    )
    merged = merged_copy(record, 99, 1.5)
    assert merged == dataclasses.replace(record, output_tokens=99, at=1.5)
