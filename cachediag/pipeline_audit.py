"""From paths to an ``Audit``: the library call behind ``cachediag audit``.

Sessions are read as ``analyze`` reads them (``pipeline.Run``); each worker process
sends back a ``SessionAudit``, a few small dicts, never its requests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from pathlib import Path
from typing import IO, Generic, TypeVar

from cachediag.analysis.audit import Audit, SessionAudit, audit_session
from cachediag.analysis.session import SessionAnalysis
from cachediag.model import LineIssue
from cachediag.pipeline import Run
from cachediag.pricing import price_function

T = TypeVar("T")


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
) -> AuditRun[T]:
    """Audit every session under ``paths`` (``-``: the log ``stdin`` holds) with the
    reading of ``cachediag analyze`` (same discovery, deduplication across continued
    sessions and worker processes).

    ``keep`` (it must pickle) runs on each analysed session in the process that read it;
    what it returns is kept in ``AuditRun.kept`` for the sessions the audit counts.
    """
    from cachediag.pricing import pricing_source

    run: AuditRun[T] = AuditRun(Audit(top=options.top), pricing_source(options.pricing_file))
    reading = Run(jobs=workers)
    started = False

    def progress(done: int, total: int) -> None:
        nonlocal started
        if not started and on_start is not None:
            on_start(total)
        started = True
        if on_done is not None:
            on_done()

    reading.on_progress = progress
    for session, kept in reading.rendered(paths, stdin, 0.0, AuditRender(options, keep)):
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
