"""From paths to an ``Audit``: the library call behind ``cachediag audit``.

Sessions are read as ``analyze`` reads them (``pipeline.Run``); each worker process
sends back a ``SessionAudit``, a few small dicts, never its requests.

Each response counts once in a run, however many files hold it (``rendered_once``):
the rule ``audit PATHS`` and ``cachediag export`` share, so that an audit of the logs
and an audit of their dataset agree.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from pathlib import Path
from typing import IO, Generic, TypeVar

from cachediag.analysis.rollup import (
    Audit,
    SessionAudit,
    audit_session,
    valid_or_none,
    valid_text,
)
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.model import LineIssue, RequestRecord, SessionLog
from cachediag.pipeline import Run
from cachediag.pricing import price_function

T = TypeVar("T")


def response_id(message_id: str | None, request_id: str | None) -> str | None:
    """What makes two records one response: its ids (a provider never gives two
    responses the same), as the dataset's ``request_key`` holds them; ``None`` without
    any (such a record is only ever its own file's)."""
    if message_id or request_id:
        return f"{message_id or ''}|{request_id or ''}"
    return None


def _id_hash(message_id: str | None, request_id: str | None) -> int | None:
    """``response_id`` as 8 bytes: a run keeps one a response. Python's string hash is
    the same in the worker processes, which are forks of this one."""
    if message_id or request_id:
        return hash((message_id or "", request_id or ""))
    return None


def writable_names(log: SessionLog) -> None:
    """The names of ``log`` (session, file, project, streams) made writable in UTF-8
    (``valid_text``): a folder or file name in other bytes, or a lone surrogate in the
    log's JSON, would stop every writer (JSON, HTML, Parquet) of the audit, the report
    and the export; here, once for all of them, before anything is made of the log."""
    log.session_id = valid_text(log.session_id)
    log.source = valid_text(log.source)
    log.project = valid_or_none(log.project)
    log.cwd = valid_or_none(log.cwd)
    for stream in log.streams.values():
        stream.id = valid_text(stream.id)
        stream.source = valid_or_none(stream.source)


@dataclass(slots=True, frozen=True)
class _Keyed(Generic[T]):
    """``render`` of a session, with what the run needs to count its responses once:
    the session, its file and the ``_id_hash`` of each of its responses."""

    render: Callable[[SessionAnalysis], T]

    def __call__(self, analysis: SessionAnalysis) -> tuple[T, str, str, array[int]]:
        log = analysis.log
        source = log.source  # as the file system names it, to read it again
        writable_names(log)
        keys: array[int] = array("q")
        for stream in analysis.streams:
            for entry in stream.entries:
                key = _id_hash(entry.record.message_id, entry.record.request_id)
                if key is not None:
                    keys.append(key)
        return self.render(analysis), log.session_id, source, keys


@dataclass(slots=True, frozen=True)
class _Dropping:
    """The pipeline's ``enrich`` that leaves out responses counted in an earlier file
    (after the run's own ``enrich``, if any)."""

    counted: frozenset[int]
    then: Callable[[SessionLog], SessionLog] | None = None

    def __call__(self, log: SessionLog) -> SessionLog:
        if self.then is not None:
            log = self.then(log)
        for stream in log.streams.values():
            stream.items = [
                item
                for item in stream.items
                if not isinstance(item, RequestRecord)
                or _id_hash(item.message_id, item.request_id) not in self.counted
            ]
        return log


def rendered_once(
    reading: Run,
    paths: list[Path],
    stdin: IO[bytes] | None,
    render: Callable[[SessionAnalysis], T],
) -> Iterator[T]:
    """``reading.rendered``, each response counted in the first session (in input
    order) that holds it: a transcript and the proxy's capture of it, an OpenTelemetry
    export of the same sessions, the same log named twice.

    A session none of whose responses was seen before is rendered once, as read; one
    holding responses of an earlier session is read again without them (its file only,
    once for all the sessions it holds), so its gaps and outcomes are those of what it
    alone holds. Memory: one 8-byte key per response. Stdin cannot be read twice: its
    sessions come first and are taken as read.
    """
    seen: set[int] = set()
    again: dict[str, tuple[T, array[int]]] = {}
    again_source: str | None = None
    for value, session_id, source, keys in reading.rendered(paths, stdin, 0.0, _Keyed(render)):
        if source != "-" and not seen.isdisjoint(keys):
            if again_source != source:
                again_source = source
                again = _read_again(reading, source, frozenset(seen), render)
            if session_id in again:
                value, keys = again.pop(session_id)
        seen.update(keys)
        yield value


def _read_again(
    reading: Run, source: str, counted: frozenset[int], render: Callable[[SessionAnalysis], T]
) -> dict[str, tuple[T, array[int]]]:
    """The sessions of ``source`` read again without the responses in ``counted``, by id
    (none if it can no longer be read: the first reading stands)."""
    again = Run(jobs=1, enrich=_Dropping(counted, reading.enrich))
    found = again.rendered([Path(source)], None, 0.0, _Keyed(render))
    return {session_id: (value, keys) for value, session_id, _, keys in found}


@dataclass(slots=True)  # not frozen: cachediag.analysis says why
class AuditOptions:
    since: float | None = None
    until: float | None = None
    top: int = 10
    pricing_file: Path | None = None
    zone: tzinfo = UTC
    """Where days, weeks and months begin."""


@dataclass(slots=True)
class AuditRun(Generic[T]):
    audit: Audit
    pricing_source: str
    sessions_read: int = 0
    errors: list[str] = field(default_factory=list)
    issues: list[LineIssue] = field(default_factory=list)
    kept: list[T] = field(default_factory=list)
    """What ``keep`` made of each session that has requests in the window, in input order."""
    unreadable: list[LineIssue] = field(default_factory=list)
    """Files and folders that could not be read, as ``pipeline.Run`` reports them."""
    nothing_read: bool = False


@dataclass(slots=True)  # not frozen: cachediag.analysis says why
class AuditRender(Generic[T]):
    """One analysed session -> its small ``SessionAudit`` (built in the worker process),
    and what ``keep`` makes of it there too."""

    options: AuditOptions
    keep: Callable[[SessionAnalysis], T] | None = None

    def __call__(self, analysis: SessionAnalysis) -> tuple[SessionAudit, T | None]:
        o = self.options
        audited = audit_session(
            analysis,
            price_function(o.pricing_file),
            since=o.since,
            until=o.until,
            top=o.top,
            zone=o.zone,
        )
        if o.pricing_file is None:
            from cachediag.pricing.disk import DISK

            DISK.flush()  # prices this worker looked up, for the next run
        return audited, None if self.keep is None else self.keep(analysis)


def run_audit(
    paths: list[Path],
    options: AuditOptions,
    *,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[], None] | None = None,
    workers: int | None = None,
    keep: Callable[[SessionAnalysis], T] | None = None,
    stdin: IO[bytes] | None = None,
    enrich: Callable[[SessionLog], SessionLog] | None = None,
    agents: frozenset[str] | None = None,
) -> AuditRun[T]:
    """Audit every session under ``paths`` (``-``: the log ``stdin`` holds) with the
    reading of ``cachediag analyze`` (same discovery, deduplication across continued
    sessions and worker processes).

    ``keep`` (it must pickle) runs on each analysed session in the process that read it;
    what it returns is kept in ``AuditRun.kept`` for the sessions the audit counts.
    ``enrich`` (``quick.capture_join``: the proxy's captures) runs on each session before
    it is analysed, and again on a session read again by ``rendered_once``, so a request
    it adds is counted once, as the transcript's own are.
    """
    from cachediag.pricing import pricing_source

    run: AuditRun[T] = AuditRun(Audit(top=options.top), pricing_source(options.pricing_file))
    reading = Run(jobs=workers, enrich=enrich, agents=agents)
    known = -1

    def progress(done: int, total: int) -> None:
        # ``on_start`` again whenever the count changes: a call with ``done == 0`` (the
        # sessions found, before any is read) gives the bar its total up front.
        nonlocal known
        if total != known and on_start is not None:
            on_start(total)
        known = total
        if done and on_done is not None:
            on_done()

    reading.on_progress = progress
    for session, kept in rendered_once(reading, paths, stdin, AuditRender(options, keep)):
        run.sessions_read += 1
        run.audit.add(session)
        if kept is not None and session.totals.requests:
            run.kept.append(kept)
    run.errors.extend(reading.errors)
    run.issues.extend(reading.issues)
    run.unreadable.extend(reading.unreadable)
    run.nothing_read = reading.nothing_read
    run.audit.sessions.sort(key=lambda s: (s.first_at or 0.0, s.session_id))
    return run
