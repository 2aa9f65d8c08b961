"""Whatever an OpenAI or OpenRouter record holds, reading it never raises: it is used or
skipped, in a capture and in a log of responses alone."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cachediag.ingest.capture import read_capture
from cachediag.ingest.usage import read_usage
from tests.test_capture_fuzz import JSON

KEYS = st.sampled_from(
    [
        "model",
        "input",
        "messages",
        "instructions",
        "tools",
        "reasoning",
        "reasoning_effort",
        "text",
        "response_format",
        "verbosity",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "previous_response_id",
        "conversation",
        "usage",
        "prompt_cache_diagnostics",
        "provider",
        "id",
        "input_tokens_details",
        "prompt_tokens_details",
        "cached_tokens",
        "cache_write_tokens",
        "cost",
        "cost_details",
        "is_byok",
        "body_raw",
    ]
)
BASE: dict[str, Any] = {
    "request": {
        "timestamp": 1.0,
        "url": "https://x/v1/responses",
        "body": {
            "model": "gpt-5.6",
            "instructions": "be brief",
            "input": [{"role": "user", "content": "hi"}],
            "prompt_cache_options": {"comparison_response_id": "resp_0"},
        },
    },
    "response": {
        "timestamp": 2.0,
        "body": {
            "id": "resp_1",
            "provider": "P",
            "prompt_cache_diagnostics": {"type": "cache_miss", "reason": "tools_changed"},
            "usage": {
                "input_tokens": 3000,
                "input_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 0},
                "output_tokens": 5,
                "cost": 0.01,
            },
        },
    },
}
WHERE = st.sampled_from(["body", "response", "usage", "details", "diagnostics"])


def _record(where: str, key: str, value: Any) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(json.dumps(BASE))
    body = record["response"]["body"]
    target = {
        "body": record["request"]["body"],
        "response": body,
        "usage": body["usage"],
        "details": body["usage"]["input_tokens_details"],
        "diagnostics": body["prompt_cache_diagnostics"],
    }[where]
    target[key] = value
    return record


@settings(max_examples=300, deadline=None)
@given(WHERE, KEYS, JSON)
def test_mutated_openai_records_never_raise(where: str, key: str, value: Any) -> None:
    record = _record(where, key, value)
    line = json.dumps(record).encode() + b"\n"
    session = read_capture([line, line], "x", "x")
    used = sum(len(s.requests) for s in session.streams.values())
    assert used + len(session.issues) + session.api_errors + session.non_model_calls == 2
    # The same response logged alone.
    alone = json.dumps(record["response"]["body"]).encode() + b"\n"
    usage = read_usage([alone, alone], "x", "x")
    used = sum(len(s.requests) for s in usage.streams.values())
    assert used + len(usage.issues) + usage.api_errors == 2
