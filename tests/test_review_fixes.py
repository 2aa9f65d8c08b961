"""Defects a security review of issue 24's fixes found, each with the test that failed
before its fix (the larger ones live next to their area's tests)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cachediag.dataset.schema import SCHEMA_FILE, schema_document
from cachediag.dataset.write import SCHEMA_MAX_BYTES, _check_schema, host_lock
from cachediag.errors import CachediagError
from cachediag.ingest.fingerprint import canonical_json
from cachediag.proxy.exchange import Exchange
from cachediag.proxy.recording import build_record, record_line
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


def test_the_export_lock_is_never_a_fifo_or_a_link(tmp_path: Path) -> None:
    fifo = tmp_path / ".export-h.lock"
    os.mkfifo(fifo)
    # A reader, so that the old ``open(lock, "a")`` returned (and was used) instead of
    # blocking the test for ever.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(CachediagError, match="not a regular file"), host_lock(tmp_path, "h"):
            pass
    finally:
        os.close(reader)
    target = tmp_path / "elsewhere"
    (tmp_path / ".export-l.lock").symlink_to(target)
    with pytest.raises(CachediagError, match="link"), host_lock(tmp_path, "l"):
        pass
    assert not target.exists()


def test_the_dataset_schema_is_read_only_from_a_regular_file(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(schema_document()))
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / SCHEMA_FILE).symlink_to(good)
    with pytest.raises(CachediagError, match="link"):
        _check_schema(tmp_path / "linked")
    (tmp_path / "big").mkdir()
    with open(tmp_path / "big" / SCHEMA_FILE, "wb") as fp:
        fp.truncate(SCHEMA_MAX_BYTES + 1)
    with pytest.raises(CachediagError, match="larger than"):
        _check_schema(tmp_path / "big")
    (tmp_path / "fresh").mkdir()
    _check_schema(tmp_path / "fresh")
    _check_schema(tmp_path / "fresh")  # its own file reads back
