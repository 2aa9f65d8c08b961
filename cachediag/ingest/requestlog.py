"""The request-log formats behind one call: which reader turns a detected format into a
session (formats.md §2-3). Transcripts have their own, richer path in ``reader``."""

from __future__ import annotations

from collections.abc import Iterable

from cachediag.ingest.detect import API_CAPTURE, API_USAGE, RECORDS, SSE_TEXT
from cachediag.model import SessionLog

FORMATS = (API_CAPTURE, API_USAGE, SSE_TEXT, RECORDS)


def read_request_log(fmt: str, lines: Iterable[bytes], source: str, session_id: str) -> SessionLog:
    if fmt == API_CAPTURE:
        from cachediag.ingest.capture import read_capture

        return read_capture(lines, source, session_id)
    if fmt == RECORDS:
        from cachediag.ingest.records import read_records

        return read_records(lines, source, session_id)
    from cachediag.ingest.usage import read_usage

    return read_usage(lines, source, session_id, sse_text=fmt == SSE_TEXT)
