"""The audit's inputs, run and report, shared by ``cli.audit``, ``cli.report`` and the
quick path (``quick_audit``)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from cachediag.commands.captures import capture_join
from cachediag.commands.options import BY_CHOICES as BY_CHOICES
from cachediag.commands.window import Bound, Window, resolve_window, zone_or_local
from cachediag.console import progress_bar

if TYPE_CHECKING:
    from cachediag.analysis.rollup import GroupBy
    from cachediag.analysis.session_analysis import SessionAnalysis
    from cachediag.pipeline_audit import AuditRun
    from cachediag.report.audit_report import AuditReport

T = TypeVar("T")


def iso_bound(at: float | None) -> str | None:
    """A window's end for JSON: the instant in UTC, the same whatever --timezone said."""
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


@dataclass(slots=True, frozen=True)
class AuditInputs:
    """What ``audit`` and ``report`` read, and how: the options ``audit_inputs`` adds."""

    paths: tuple[Path, ...]
    since: Bound | None
    until: Bound | None
    zone: tzinfo | None
    now: float | None
    top: int
    pricing_file: Path | None
    progress: bool | None
    jobs: int | None
    captures_dir: Path | None = None
    no_captures: bool = False
    agent: str | None = None
    """``--agent``: whose sessions (``commands.agents.agents_for``); ``None``: every
    agent's found."""

    def window(self) -> tuple[Window, tzinfo]:
        """The window the options describe, and the zone days begin in."""
        display = zone_or_local(self.zone)
        now = time.time() if self.now is None else self.now
        return resolve_window(self.since, self.until, now, display), display

    def read(
        self,
        window: Window,
        zone: tzinfo,
        keep: Callable[[SessionAnalysis], T] | None = None,
        piped: Callable[[], IO[bytes] | None] | None = None,
    ) -> AuditRun[T]:
        """Run the audit (``keep``: see ``run_audit``). With no ``paths``, the log
        ``piped`` finds on stdin (the command line's look, which hints at a silent pipe);
        with none piped (or an empty pipe, or no ``piped``), the Claude Code history."""
        from cachediag.commands.agents import agents_for
        from cachediag.pipeline import default_paths
        from cachediag.pipeline_audit import AuditOptions, run_audit

        paths = self.paths
        stdin = sys.stdin.buffer if "-" in map(str, paths) else None
        if not paths and piped is not None:
            stdin = piped()
        agents = agents_for(self.agent)
        inputs = list(paths) or ([Path("-")] if stdin is not None else default_paths(agents))
        # Before the workers fork: they inherit the capture index instead of each
        # scanning the folder; no folder, no index (nothing imported).
        enrich = capture_join(self.captures_dir, self.no_captures)
        options = AuditOptions(
            since=window.since,
            until=window.until,
            top=self.top,
            pricing_file=self.pricing_file,
            zone=zone,
        )
        show = sys.stderr.isatty() if self.progress is None else self.progress
        with progress_bar(show) as (on_start, on_done):
            return run_audit(
                inputs,
                options,
                on_start=on_start,
                on_done=on_done,
                workers=self.jobs,
                keep=keep,
                stdin=stdin,
                enrich=enrich,
                agents=agents,
            )


def audit_report(run: AuditRun[Any], by: GroupBy, window: Window) -> AuditReport:
    """The report of an audit run, grouped ``by``, for the window it covered."""
    from cachediag.report.audit_report import build_report

    return build_report(
        run.audit,
        by,
        run.pricing_source,
        since=iso_bound(window.since),
        until=iso_bound(window.until),
        unreadable_files=len(run.unreadable),
    )
