"""Reading sessions: files found by ``discover`` or lines piped on stdin."""

from __future__ import annotations

import contextlib
import io
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from cachediag.errors import NotALogError
from cachediag.ingest.detect import CLAUDE_CODE, SNIFF_LINES, detect_format
from cachediag.ingest.discover import AgentFile, SessionSource
from cachediag.ingest.fields import SESSION, numbered_fields
from cachediag.ingest.lines import OVERLONG, BadLine, scan_chunk, scan_lines
from cachediag.ingest.needles import MAX_LINE_BYTES, needles_for
from cachediag.ingest.transcript import (
    FORMAT,
    TranscriptReader,
)
from cachediag.model import MAIN_STREAM, LineIssue, SessionLog, StreamKind


def _peek(stream: IO[bytes]) -> tuple[list[bytes], Iterator[bytes]]:
    """The first lines, each held to ``MAX_LINE_BYTES``: a longer one (a 1 GB line, a
    file of zero bytes) is read past in chunks and stands as ``OVERLONG``, a bad line."""
    head: list[bytes] = []
    while len(head) < SNIFF_LINES:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            break
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            del raw  # never hold two of them
            while (chunk := stream.readline(1 << 20)) and not chunk.endswith(b"\n"):
                pass
            head.append(OVERLONG)
            continue
        head.append(raw)
    return head, itertools.chain(head, stream)


def _head_of(data: bytes) -> list[bytes]:
    """The first lines of a file read whole, as ``_peek`` gives them (a file held whole
    is shorter than ``MAX_LINE_BYTES``: no line of it is overlong)."""
    head: list[bytes] = []
    start = 0
    find = data.find
    while len(head) < SNIFF_LINES:
        stop = find(b"\n", start) + 1
        if not stop:
            if start < len(data):
                head.append(data[start:])
            break
        head.append(data[start:stop])
        start = stop
    return head


def _lines_holding(data: bytes, needles: tuple[bytes, ...]) -> Iterator[tuple[int, bytes]]:
    """``_matching_lines`` over a file read whole: one scan, no stream."""
    found, _ = scan_chunk(data, 0, len(data), needles)
    for index, start, stop in found:
        yield index + 1, data[start:stop]


SMALL_FILE_BYTES = 1 << 20
"""A file no larger is read whole in one call and scanned where it lies: most session
files are a few kB, and a history of 10,000 of them spent more on reading line by line
(peeking, chaining, chunking) than on the lines. Larger ones stream in chunks."""


def _open_whole(src: SessionSource, path: Path) -> tuple[IO[bytes], bytes | None]:
    """``path`` opened, and its bytes when the walk saw it small (``None``: stream it).
    A file that grew past what the walk saw is streamed from its start."""
    seen = src.stats.get(str(path))
    if seen is None or seen[0] > SMALL_FILE_BYTES:
        return path.open("rb"), None
    raw = path.open("rb", buffering=0)
    try:
        data = raw.read(seen[0] + 1)
    except BaseException:
        raw.close()
        raise
    if len(data) <= seen[0]:
        return raw, data
    raw.seek(0)
    return io.BufferedReader(raw), None


def _matching_lines(
    head: list[bytes], rest: IO[bytes], needles: tuple[bytes, ...]
) -> Iterator[tuple[int, bytes]]:
    """Numbered lines holding a needle: the peeked head, then the rest of the stream.

    The head is scanned as one block, as the rest is (a small session file is mostly
    head); with an overlong line in it, line by line."""
    if OVERLONG in head:
        for number, raw in enumerate(head, start=1):
            text = raw.strip()
            odd = text and not (text.startswith(b"{") and text.endswith(b"}"))
            if odd or any(needle in raw for needle in needles):
                yield number, raw
    elif head:
        block = b"".join(head)
        found, _ = scan_chunk(block, 0, len(block), needles)
        for index, start, stop in found:
            yield index + 1, block[start:stop]
    yield from scan_lines(rest, needles, first_line=len(head) + 1)


Sniffed = tuple[IO[bytes], list[bytes], NotALogError | None, bytes | None]
"""A file already opened and its format decided: its stream, first lines, when it is not
a log why, and its bytes when it was read whole (``read_sessions`` looks at a lone file
once, not once per reader)."""


def _sniff(
    fp: IO[bytes], source: str, data: bytes | None = None
) -> tuple[list[bytes], str | None, NotALogError | None]:
    head = _peek(fp)[0] if data is None else _head_of(data)
    try:
        return head, detect_format(head, source), None
    except NotALogError as exc:
        return head, None, exc


def _feed_file(
    reader: TranscriptReader,
    path: Path,
    session: SessionLog,
    *,
    strict: bool,
    sniffed: Sniffed | None = None,
) -> bool:
    """Feed one file to ``reader``; False when it is not a log (and ``strict`` is off) or
    cannot be read (then listed in ``session.unreadable``: the run goes on without it)."""
    source = str(path)
    try:
        with contextlib.ExitStack() as stack:
            fp: IO[bytes]
            data: bytes | None = None
            if sniffed is None:
                fp = stack.enter_context(path.open("rb"))
                head, _, error = _sniff(fp, source)
            else:
                fp, head, error, data = sniffed
            if error is not None:
                if strict:
                    raise error
                session.issues.append(LineIssue(source, 0, str(error).removeprefix(f"{source}: ")))
                return False
            needles = needles_for(head, follow_chains=reader.file_stream is None)
            if data is None:
                matching = _matching_lines(head, fp, needles)
            else:
                matching = _lines_holding(data, needles)
            for number, fields in numbered_fields(matching, source, session.issues):
                try:
                    reader.take(fields, number)
                except BadLine as exc:
                    session.issues.append(LineIssue(source, number, str(exc)))
    except OSError as exc:
        session.unreadable.append(LineIssue(source, 0, unreadable_reason(exc)))
        return False
    return True


def unreadable_reason(exc: OSError) -> str:
    """Why a file could not be read, in a few words (a vanished file says so)."""
    if isinstance(exc, FileNotFoundError):
        return "vanished before it could be read"
    return f"cannot read ({exc.strerror or exc})"


def _read_lone_file(src: SessionSource, path: Path, claimed: Claims | None) -> list[SessionLog]:
    """A session of one file: a capture, usage log or export named on its own, or a
    transcript. The file is opened and its format decided once, for either reader."""
    source = str(path)
    try:
        fp, data = _open_whole(src, path)
    except OSError:  # the transcript reader reports it
        return [_read_transcript_session(src, claimed)]
    with fp:
        try:
            head, fmt, error = _sniff(fp, source, data)
            if error is not None and src.explicit:
                raise error
            if fmt is not None and fmt != CLAUDE_CODE:
                from cachediag.ingest.requestlog import read_request_logs

                lines = itertools.chain(head, fp) if data is None else io.BytesIO(data)
                logs = read_request_logs(fmt, lines, source, src.session_id, path)
                for log in logs:
                    log.project = log.project or src.project
                return logs
        except OSError:  # read again by the transcript reader, which reports it
            return [_read_transcript_session(src, claimed)]
        return [_read_transcript_session(src, claimed, (fp, head, error, data))]


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
    paths: list[Path],
    session: SessionLog,
    *,
    strict: bool,
    sniffed: Sniffed | None = None,
) -> tuple[bool, set[str]]:
    """Feed every copy of one file to the same reader, so that each response counts once.

    Returns whether any copy was a readable log, and the streams a later copy added to
    (their items are then put back in time order)."""
    readable = False
    grown: set[str] = set()
    for i, path in enumerate(_largest_first(paths)):
        before = {sid: len(s.items) for sid, s in session.streams.items()}
        # A lone file (no copies) may come opened already: then ``paths`` is only it.
        first = sniffed if i == 0 else None
        readable = _feed_file(reader, path, session, strict=strict, sniffed=first) or readable
        if i:
            grown.update(
                sid for sid, s in session.streams.items() if len(s.items) > before.get(sid, 0)
            )
    return readable, grown


def read_session(src: SessionSource, claimed: Claims | None = None) -> SessionLog:
    """Read one session, every copy of each of its files; ``claimed`` is shared across the
    sessions of a project so that a response copied into a continued session's file
    counts once, in the first file read. (A file holding several sessions gives its
    first: see ``read_sessions``.)"""
    return read_sessions(src, claimed)[0]


def read_sessions(src: SessionSource, claimed: Claims | None = None) -> list[SessionLog]:
    """The sessions of one source: one, except for an OpenTelemetry export, which holds
    a session per ``session.id``."""
    if src.main is not None and not src.agents and not src.copies:
        return _read_lone_file(src, src.main, claimed)
    return [_read_transcript_session(src, claimed)]


def _read_transcript_session(
    src: SessionSource, claimed: Claims | None, sniffed: Sniffed | None = None
) -> SessionLog:
    session = SessionLog(src.session_id, src.source, FORMAT, project=src.project)
    mains = src.mains
    session.main_present = bool(mains)
    session.stream(MAIN_STREAM, StreamKind.MAIN, source=str(src.main) if mains else None)
    grown: set[str] = set()
    if mains:
        reader = TranscriptReader(session, str(mains[0]), claimed=claimed)
        strict = src.explicit and len(mains) == 1
        readable, grown = _feed_copies(reader, mains, session, strict=strict, sniffed=sniffed)
        session.main_unreadable = not readable
        # A main file that could not be read at all: its conversation is not known.
        session.main_present = len(session.unreadable) < len(mains)
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
        grown |= _feed_copies(reader, [f.path for f in files], session, strict=False)[1]
        if len(session.unreadable) - unreadable == len(files):
            del session.streams[stream_id]  # no file of it could be read: not a stream
    for stream_id in grown:
        # A copy held responses the first did not (two diverging backups): time order.
        session.streams[stream_id].items.sort(key=lambda item: item.at)
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
    for number, fields in numbered_fields(matching, source, issues):
        session_id = fields[SESSION] or source
        pair = sessions.get(session_id)
        if pair is None:
            log = SessionLog(session_id, source, FORMAT)
            log.stream(MAIN_STREAM, StreamKind.MAIN, source=source)
            pair = sessions[session_id] = (log, TranscriptReader(log, source, claimed=claimed))
        try:
            pair[1].take(fields, number)
        except BadLine as exc:
            pair[0].issues.append(LineIssue(source, number, str(exc)))
    logs = [log for log, _ in sessions.values()]
    if not logs:
        logs = [SessionLog(source, source, FORMAT)]
        logs[0].stream(MAIN_STREAM, StreamKind.MAIN, source=source)
    # Lines that failed to parse belong to no session; report them with the first.
    logs[0].issues[:0] = issues
    return logs
