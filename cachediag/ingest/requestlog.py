"""The request-log formats behind one call: which reader turns a detected format into a
session (formats.md §2-3, §5). Transcripts have their own, richer path in ``reader``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cachediag.ingest.detect import API_CAPTURE, API_USAGE, CODEX, GEMINI, OTEL, RECORDS, SSE_TEXT
from cachediag.model import SessionLog

FORMATS = (API_CAPTURE, API_USAGE, SSE_TEXT, RECORDS, OTEL, CODEX, GEMINI)


def read_request_log(fmt: str, lines: Iterable[bytes], source: str, session_id: str) -> SessionLog:
    if fmt == API_CAPTURE:
        from cachediag.ingest.capture import read_capture

        return read_capture(lines, source, session_id)
    if fmt == RECORDS:
        from cachediag.ingest.records import read_records

        return read_records(lines, source, session_id)
    if fmt == OTEL:
        raise ValueError("an OpenTelemetry export holds many sessions: use read_request_logs")
    if fmt == CODEX:
        # Another agent's session under a name its discovery does not know, or piped.
        from cachediag.ingest.codex import read_rollout_lines

        return read_rollout_lines(lines, source)
    if fmt == GEMINI:
        from cachediag.ingest.gemini import read_chat_lines

        return read_chat_lines([(source, lines)])
    from cachediag.ingest.usage import read_usage

    return read_usage(lines, source, session_id, sse_text=fmt == SSE_TEXT)


def read_request_logs(
    fmt: str, lines: Iterable[bytes], source: str, session_id: str, path: Path | None = None
) -> list[SessionLog]:
    """Like ``read_request_log``, for formats that hold many sessions in one file: an
    OpenTelemetry export (with the raw-body folders found beside ``path``)."""
    if fmt != OTEL:
        return [read_request_log(fmt, lines, source, session_id)]
    from cachediag.ingest.otel import read_otel
    from cachediag.ingest.otel_bodies import body_folders

    return read_otel(lines, source, session_id, body_dirs=body_folders(path) if path else ())
