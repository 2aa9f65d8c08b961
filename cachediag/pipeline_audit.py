"""From paths to an ``Audit``: the library call behind ``cachediag audit``.

Sessions are independent, so many files are read in worker processes (one per core);
each sends back a ``SessionAudit``, a few small dicts, never its requests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from cachediag.analysis.audit import Audit, SessionAudit, audit_session
from cachediag.analysis.session import analyze_session
from cachediag.errors import CachediagError
from cachediag.ingest.discover import SessionSource, discover
from cachediag.ingest.reader import read_session
from cachediag.model import LineIssue
from cachediag.parallel import map_ordered, workers_for
from cachediag.pricing import price_function

MAX_LISTED_ISSUES = 5


@dataclass(slots=True, frozen=True)
class AuditOptions:
    since: float | None = None
    until: float | None = None
    top: int = 10
    pricing_file: Path | None = None


@dataclass(slots=True)
class AuditRun:
    audit: Audit
    pricing_source: str
    sessions_read: int = 0
    errors: list[str] = field(default_factory=list)
    issues: list[LineIssue] = field(default_factory=list)


def audit_source(
    src: SessionSource, options: AuditOptions
) -> tuple[SessionAudit | None, list[LineIssue], str | None]:
    """Read and audit one session; errors come back as text (this runs in a worker)."""
    try:
        log = read_session(src)
    except CachediagError as exc:
        return None, [], str(exc)
    analysis = analyze_session(log, 0.0)
    result = audit_session(
        analysis,
        price_function(options.pricing_file),
        since=options.since,
        until=options.until,
        top=options.top,
    )
    return result, log.issues[:MAX_LISTED_ISSUES], None


def run_audit(
    paths: list[Path],
    options: AuditOptions,
    *,
    on_start: Callable[[int], None] | None = None,
    on_done: Callable[[], None] | None = None,
    workers: int | None = None,
) -> AuditRun:
    from cachediag.pricing import pricing_source

    sources = discover(paths)
    run = AuditRun(Audit(top=options.top), pricing_source(options.pricing_file))
    if on_start is not None:
        on_start(len(sources))
    jobs = workers_for(sources, workers)

    def collect(result: tuple[SessionAudit | None, list[LineIssue], str | None]) -> None:
        session, issues, error = result
        if error is not None:
            run.errors.append(error)
        if session is not None:
            run.sessions_read += 1
            run.audit.add(session)
        run.issues.extend(issues)
        if on_done is not None:
            on_done()

    for result in map_ordered(partial(audit_source, options=options), sources, jobs):
        collect(result)
    run.audit.sessions.sort(key=lambda s: (s.first_at or 0.0, s.session_id))
    return run
