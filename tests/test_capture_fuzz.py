"""Whatever a capture record holds, reading it never raises: it is used or skipped."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cachediag.ingest.capture import read_capture

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
KEYS = st.sampled_from(
    [
        "model",
        "messages",
        "system",
        "tools",
        "thinking",
        "output_config",
        "usage",
        "body",
        "body_raw",
        "timestamp",
        "url",
        "headers",
        "id",
        "status_code",
        "diagnostics",
        "context_management",
    ]
)


def _record(base: dict[str, Any], where: str, key: str, value: Any) -> dict[str, Any]:
    record = json.loads(json.dumps(base))
    target = record["request"]["body"] if where == "body" else record[where]
    target[key] = value
    return record


BASE = {
    "request": {
        "timestamp": 1.0,
        "url": "https://x/v1/messages",
        "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    },
    "response": {"timestamp": 2.0, "body": {"id": "a", "usage": {"input_tokens": 1}}},
}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["body", "request", "response"]), KEYS, JSON)
@example(where="request", key="headers", value=[[[], None]])  # found on a CI run
def test_mutated_records_never_raise(where: str, key: str, value: Any) -> None:
    line = json.dumps(_record(BASE, where, key, value)).encode() + b"\n"
    session = read_capture([line, line], "x", "x")
    used = sum(len(s.requests) for s in session.streams.values())
    # Every record is accounted for: used, skipped with a note, an API error, or passed
    # over as not a model request.
    assert used + len(session.issues) + session.api_errors + session.non_model_calls == 2
