"""Reading sessions: files found by ``discover`` or lines piped on stdin, each through
the stages of ``ingest.stages`` (this module is the one that runs them, in order)."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from cachediag.errors import InputError
from cachediag.ingest.detect import CLAUDE_CODE, detect
from cachediag.ingest.discover import AgentFile, SessionSource
from cachediag.ingest.fields import pick_fields
from cachediag.ingest.files import unreadable_reason
from cachediag.ingest.lines import scan
from cachediag.ingest.skipped import Skipped, issues_first
from cachediag.ingest.sniff import sniff_file, sniff_stream
from cachediag.ingest.stages import SESSION, Detected, LineFields
from cachediag.ingest.transcript import FORMAT, TranscriptReader, parse
from cachediag.model import MAIN_STREAM, LineIssue, SessionLog, StreamKind


def _feed_file(
    reader: TranscriptReader,
    path: Path,
    session: SessionLog,
    *,
    strict: bool,
    size: int | None = None,
    found: Detected | None = None,
) -> bool:
    """Feed one file to ``reader``; False when it is not a log (and ``strict`` is off) or
    cannot be read (then listed in ``session.unreadable``: the run goes on without it).
    ``size``: the file's size as the walk saw it; ``found``: the file already sniffed and
    detected (its caller closes it)."""
    try:
        if found is not None:
            return _feed_found(reader, found, session, strict)
        sniffed = sniff_file(path, size)
        with sniffed.fp:
            return _feed_found(reader, detect(sniffed, reader.file_stream is None), session, strict)
    except OSError as exc:
        session.unreadable.append(LineIssue(str(path), 0, unreadable_reason(exc)))
        return False


def _feed_found(
    reader: TranscriptReader, found: Detected, session: SessionLog, strict: bool
) -> bool:
    """The last three stages over a detected file: scan, pick, parse."""
    source = found.sniffed.source
    error = found.error
    if error is not None:
        if strict:
            raise error
        session.issues.append(LineIssue(source, 0, str(error).removeprefix(f"{source}: ")))
        return False
    parse(pick_fields(scan(found), source, session.issues), source, reader)
    return True


def _read_lone_file(src: SessionSource, path: Path, claimed: Claims | None) -> list[SessionLog]:
    """A session of one file: a capture, usage log or export named on its own, or a
    transcript. The file is sniffed and its format decided once, for either reader."""
    try:
        sniffed = sniff_file(path, _walk_size(src, path))
    except OSError:  # the transcript reader reports it
        return [_read_transcript_session(src, claimed)]
    with sniffed.fp:
        found = detect(sniffed)
        fmt = found.fmt
        if found.error is not None and src.explicit:
            raise found.error
        if fmt is None or fmt == CLAUDE_CODE:
            return [_read_lone_transcript(src, path, claimed, found)]
        from cachediag.ingest.requestlog import read_request_logs

        try:
            logs = read_request_logs(fmt, sniffed.lines(), str(path), src.session_id, path)
        except OSError:  # read again by the transcript reader, which reports it
            return [_read_transcript_session(src, claimed)]
    for log in logs:
        log.project = log.project or src.project
    return logs


def _read_lone_transcript(
    src: SessionSource, path: Path, claimed: Claims | None, found: Detected
) -> SessionLog:
    """``_read_transcript_session`` of a session that is one main file, already sniffed
    and detected: most sessions of a history, read without the copies' and agents'
    bookkeeping."""
    source = str(path)
    session = SessionLog(src.session_id, source, FORMAT, issues=Skipped(), project=src.project)
    session.stream(MAIN_STREAM, StreamKind.MAIN, source=source)
    reader = TranscriptReader(session, source, claimed=claimed)
    readable = _feed_file(reader, path, session, strict=src.explicit, found=found)
    session.main_unreadable = not readable
    session.main_present = not session.unreadable
    return session


Claims = dict[tuple[str, str | None], str]


def _largest_first(paths: list[Path]) -> list[Path]:
    """Copies of one file, the most complete (largest) first: its lines number the
    records; an earlier backup then adds nothing, and ties keep the order found."""
    if len(paths) < 2:
        return paths

    def size(path: Path) -> int:
        try:
            return path.stat().st_size
        except OSError:
            return -1

    return sorted(paths, key=lambda p: -size(p))


def _feed_copies(
    reader: TranscriptReader,
    src: SessionSource,
    paths: list[Path],
    session: SessionLog,
    *,
    strict: bool,
) -> tuple[bool, set[str]]:
    """Feed every copy of one file to the same reader, so that each response counts once.

    Returns whether any copy was a readable log, and the streams a later copy added to
    (their items are then put back in time order)."""
    if len(paths) == 1:  # most files have no copy
        size = _walk_size(src, paths[0])
        return _feed_file(reader, paths[0], session, strict=strict, size=size), set()
    readable = False
    grown: set[str] = set()
    for i, path in enumerate(_largest_first(paths)):
        before = {sid: len(s.items) for sid, s in session.streams.items()} if i else {}
        fed = _feed_file(reader, path, session, strict=strict, size=_walk_size(src, path))
        readable = fed or readable
        if i:
            grown.update(
                sid for sid, s in session.streams.items() if len(s.items) > before.get(sid, 0)
            )
    return readable, grown


def _walk_size(src: SessionSource, path: Path) -> int | None:
    """The file's size as the folder walk saw it (``None``: not walked, e.g. named)."""
    seen = src.stats.get(str(path))
    return None if seen is None else seen[0]


def read_session(src: SessionSource, claimed: Claims | None = None) -> SessionLog:
    """Read one session, every copy of each of its files; ``claimed`` is shared across the
    sessions of a project so that a response copied into a continued session's file
    counts once, in the first file read. (A file holding several sessions gives its
    first: see ``read_sessions``.)"""
    return read_sessions(src, claimed)[0]


def read_sessions(src: SessionSource, claimed: Claims | None = None) -> list[SessionLog]:
    """The sessions of one source: one, except for an OpenTelemetry export, which holds
    a session per ``session.id``."""
    if src.reader is not None and src.main is not None:
        return _read_agent_file(src, src.main, src.reader, claimed)
    if src.main is not None and not src.agents and not src.copies:
        return _read_lone_file(src, src.main, claimed)
    return [_read_transcript_session(src, claimed)]


def _read_agent_file(
    src: SessionSource, path: Path, agent: str, claimed: Claims | None
) -> list[SessionLog]:
    """Another agent's file, by its reader; a file under such a name whose lines are not
    that agent's is read as any other log (and reported as one when it is none)."""
    from cachediag.ingest.agents import is_session, not_a_log, read_logs

    logs = read_logs(agent, path)
    kept = [log for log in logs if log.unreadable or is_session(log)]
    if kept or not logs:
        for log in kept:
            log.project = log.project or src.project
        return kept
    if src.strict:
        raise InputError(not_a_log(agent, path, logs))
    return _read_lone_file(src, path, claimed)


def _read_transcript_session(src: SessionSource, claimed: Claims | None) -> SessionLog:
    session = SessionLog(src.session_id, src.source, FORMAT, issues=Skipped(), project=src.project)
    mains = src.mains
    session.main_present = bool(mains)
    session.stream(MAIN_STREAM, StreamKind.MAIN, source=str(src.main) if mains else None)
    grown: set[str] = set()
    if mains:
        reader = TranscriptReader(session, str(mains[0]), claimed=claimed)
        strict = src.explicit and len(mains) == 1
        readable, grown = _feed_copies(reader, src, mains, session, strict=strict)
        session.main_unreadable = not readable
        # A main file that could not be read at all: its conversation is not known.
        session.main_present = len(session.unreadable) < len(mains)
    if src.agents:
        grown |= _read_agents(src, session, claimed)
    for stream_id in grown:
        # A copy held responses the first did not (two diverging backups): time order.
        session.streams[stream_id].items.sort(key=lambda item: item.at)
    return session


def _read_agents(src: SessionSource, session: SessionLog, claimed: Claims | None) -> set[str]:
    """Feed the session's agent files, a stream each (its copies to one reader); returns
    the streams a later copy added to."""
    grown: set[str] = set()
    agents: dict[str, list[AgentFile]] = {}
    for agent in src.agents:
        agents.setdefault(agent.stream_id, []).append(agent)
    for stream_id, files in agents.items():
        kind = files[0].kind
        session.stream(stream_id, kind, source=str(files[0].path))
        reader = TranscriptReader(
            session, str(files[0].path), file_stream=(stream_id, kind), claimed=claimed
        )
        unreadable = len(session.unreadable)
        paths = [f.path for f in files]
        grown |= _feed_copies(reader, src, paths, session, strict=False)[1]
        if len(session.unreadable) - unreadable == len(files):
            del session.streams[stream_id]  # no file of it could be read: not a stream
    return grown


def read_stdin(stream: IO[bytes], source: str = "-") -> list[SessionLog]:
    """Piped transcript lines, split into sessions by their ``sessionId`` (or a log of
    another format, read by its reader)."""
    sniffed = sniff_stream(stream, source)
    found = detect(sniffed)
    if found.error is not None:
        raise found.error
    fmt = found.fmt
    if fmt is not None and fmt != CLAUDE_CODE:  # (``None`` only with an error)
        from cachediag.ingest.requestlog import read_request_logs

        return read_request_logs(fmt, sniffed.lines(), source, source)
    sessions = _StdinSessions(source)
    unparsed = Skipped()
    parse(pick_fields(scan(found), source, unparsed), source, sessions)
    return sessions.logs(unparsed)


class _StdinSessions:
    """stdin's sessions (a ``stages.Sink``), made as the first line of each (by its
    ``sessionId``) is parsed."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.readers: dict[str, TranscriptReader] = {}
        self.claimed: Claims = {}

    def reader_of(self, fields: LineFields) -> TranscriptReader:
        session_id = fields[SESSION] or self.source
        reader = self.readers.get(session_id)
        if reader is None:
            log = SessionLog(session_id, self.source, FORMAT, issues=Skipped())
            log.stream(MAIN_STREAM, StreamKind.MAIN, source=self.source)
            reader = TranscriptReader(log, self.source, claimed=self.claimed)
            self.readers[session_id] = reader
        return reader

    def take(self, f: LineFields, line: int) -> object:
        return self.reader_of(f).take(f, line)

    def issues_of(self, f: LineFields) -> list[LineIssue]:
        return self.reader_of(f).session.issues

    def logs(self, unparsed: Skipped) -> list[SessionLog]:
        """The sessions, in the order their first lines came; lines that failed to parse
        belong to no session and are reported with the first."""
        logs = [reader.session for reader in self.readers.values()]
        if not logs:
            logs = [SessionLog(self.source, self.source, FORMAT, issues=Skipped())]
            logs[0].stream(MAIN_STREAM, StreamKind.MAIN, source=self.source)
        logs[0].issues = issues_first(unparsed, logs[0].issues)
        return logs
