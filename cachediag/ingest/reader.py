"""Reading sessions: files found by ``discover`` or lines piped on stdin."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from cachediag.errors import InputError, NotALogError
from cachediag.ingest.detect import CLAUDE_CODE, SNIFF_LINES, detect_format
from cachediag.ingest.discover import SessionSource
from cachediag.ingest.lines import BadLine, parse_numbered, scan_lines
from cachediag.ingest.needles import needles_for
from cachediag.ingest.transcript import (
    FORMAT,
    TranscriptReader,
)
from cachediag.model import MAIN_STREAM, LineIssue, SessionLog, StreamKind


def _peek(stream: IO[bytes]) -> tuple[list[bytes], Iterator[bytes]]:
    head = list(itertools.islice(stream, SNIFF_LINES))
    return head, itertools.chain(head, stream)


def _matching_lines(
    head: list[bytes], rest: IO[bytes], needles: tuple[bytes, ...]
) -> Iterator[tuple[int, bytes]]:
    """Numbered lines holding a needle: the peeked head, then the rest of the stream."""
    for number, raw in enumerate(head, start=1):
        text = raw.strip()
        odd = text and not (text.startswith(b"{") and text.endswith(b"}"))
        if odd or any(needle in raw for needle in needles):
            yield number, raw
    yield from scan_lines(rest, needles, first_line=len(head) + 1)


def _feed_file(reader: TranscriptReader, path: Path, session: SessionLog, *, strict: bool) -> bool:
    """Feed one file to ``reader``; False when it is not a log (and ``strict`` is off)."""
    source = str(path)
    try:
        with path.open("rb") as fp:
            head, _ = _peek(fp)
            try:
                detect_format(head, source)
            except NotALogError as exc:
                if strict:
                    raise
                session.issues.append(LineIssue(source, 0, str(exc).removeprefix(f"{source}: ")))
                return False
            needles = needles_for(head, follow_chains=reader.file_stream is None)
            matching = _matching_lines(head, fp, needles)
            for number, obj in parse_numbered(matching, source, session.issues):
                try:
                    reader.feed(obj, number)
                except BadLine as exc:
                    session.issues.append(LineIssue(source, number, str(exc)))
    except OSError as exc:
        raise InputError(f"{source}: cannot read ({exc.strerror or exc})") from exc
    return True


def _read_request_log_file(src: SessionSource, path: Path) -> list[SessionLog] | None:
    """A capture, usage log or export named on its own; ``None`` when it is a transcript."""
    from cachediag.ingest.requestlog import read_request_logs

    source = str(path)
    try:
        with path.open("rb") as fp:
            head, lines = _peek(fp)
            try:
                fmt = detect_format(head, source)
            except NotALogError:
                if src.explicit:
                    raise
                return None
            if fmt == CLAUDE_CODE:
                return None
            logs = read_request_logs(fmt, lines, source, src.session_id, path)
    except OSError as exc:
        raise InputError(f"{source}: cannot read ({exc.strerror or exc})") from exc
    for log in logs:
        log.project = log.project or src.project
    return logs


Claims = dict[tuple[str, str | None], str]


def read_session(src: SessionSource, claimed: Claims | None = None) -> SessionLog:
    """Read one session; ``claimed`` is shared across the sessions of a project so that a
    response copied into a continued session's file counts once, in the first file read.
    (A file holding several sessions gives its first: see ``read_sessions``.)"""
    return read_sessions(src, claimed)[0]


def read_sessions(src: SessionSource, claimed: Claims | None = None) -> list[SessionLog]:
    """The sessions of one source: one, except for an OpenTelemetry export, which holds
    a session per ``session.id``."""
    if src.main is not None and not src.agents:
        logs = _read_request_log_file(src, src.main)
        if logs is not None:
            return logs
    return [_read_transcript_session(src, claimed)]


def _read_transcript_session(src: SessionSource, claimed: Claims | None) -> SessionLog:
    session = SessionLog(src.session_id, src.source, FORMAT, project=src.project)
    if src.main is not None:
        pinned = (MAIN_STREAM, StreamKind.MAIN) if src.pin_main else None
        reader = TranscriptReader(session, str(src.main), file_stream=pinned, claimed=claimed)
        session.stream(MAIN_STREAM, StreamKind.MAIN, source=str(src.main))
        session.main_unreadable = not _feed_file(reader, src.main, session, strict=src.explicit)
    else:
        session.stream(MAIN_STREAM, StreamKind.MAIN)
    for agent in src.agents:
        session.stream(agent.stream_id, agent.kind, source=str(agent.path))
        reader = TranscriptReader(
            session, str(agent.path), file_stream=(agent.stream_id, agent.kind), claimed=claimed
        )
        _feed_file(reader, agent.path, session, strict=False)
    return session


def read_stdin(stream: IO[bytes], source: str = "-") -> list[SessionLog]:
    """Piped transcript lines, split into sessions by their ``sessionId``."""
    head, lines = _peek(stream)
    fmt = detect_format(head, source)
    if fmt != CLAUDE_CODE:
        from cachediag.ingest.requestlog import read_request_logs

        return read_request_logs(fmt, lines, source, source)
    sessions: dict[str, tuple[SessionLog, TranscriptReader]] = {}
    issues: list[LineIssue] = []
    claimed: Claims = {}
    matching = _matching_lines(head, stream, needles_for(head, follow_chains=True))
    for number, obj in parse_numbered(matching, source, issues):
        value = obj.get("sessionId")
        session_id = value if isinstance(value, str) and value else source
        pair = sessions.get(session_id)
        if pair is None:
            log = SessionLog(session_id, source, FORMAT)
            log.stream(MAIN_STREAM, StreamKind.MAIN, source=source)
            pair = sessions[session_id] = (log, TranscriptReader(log, source, claimed=claimed))
        try:
            pair[1].feed(obj, number)
        except BadLine as exc:
            pair[0].issues.append(LineIssue(source, number, str(exc)))
    logs = [log for log, _ in sessions.values()]
    if not logs:
        logs = [SessionLog(source, source, FORMAT)]
        logs[0].stream(MAIN_STREAM, StreamKind.MAIN, source=source)
    # Lines that failed to parse belong to no session; report them with the first.
    logs[0].issues[:0] = issues
    return logs
