"""Defects a security review of issue 24's fixes found, each with the test that failed
before its fix (the larger ones live next to their area's tests)."""

from __future__ import annotations

import json

from cachediag.ingest.fingerprint import canonical_json
from cachediag.proxy.recording import Exchange, build_record, record_line
from tests.proxy_support import sse_events

HOSTILE = "claude\u009b[2J\u0085\u2028x"
"""CSI (8-bit), NEL, LINE SEPARATOR: raw, each moves or clears a terminal that ``cat``s."""


def test_a_proxy_record_line_holds_no_raw_c1_control() -> None:
    body = json.dumps(
        {
            "model": HOSTILE,
            "tools": [{"name": "Read" + HOSTILE, "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": "hi"}],
        },
        ensure_ascii=False,
    ).encode()
    ex = Exchange(sent_at=1764590400.0, request_body=body, status=200, request_id="req_1")
    ex.first_byte_at, ex.done_at = ex.sent_at + 0.5, ex.sent_at + 1
    ex.chunks = sse_events("msg_" + HOSTILE)
    line = record_line(ex)
    for raw in ("\u009b", "\u0085", "\u2028"):
        assert raw.encode() not in line
    assert b"\\u009b" in line
    # Only the writing changes: the record, its fingerprint's hashes included, is the same.
    record = build_record(ex)
    assert json.loads(line) == json.loads(canonical_json(record))
    assert HOSTILE in json.dumps(json.loads(line), ensure_ascii=False)
