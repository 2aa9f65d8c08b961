"""``cachediag audit --json PATH...`` without click (as ``quick`` runs ``analyze``), and
the audit's inputs, window and report, which ``cli.audit`` and ``cli.report`` share.

The quick path takes paths, ``--json``, ``--by`` (any grouping a transcript has),
``--top``, ``--now``, ``--jobs``, ``--no-captures`` and ``--progress``/``--no-progress``
(captures are joined from the proxy's default folder, as ``analyze`` joins them);
anything else, and
paths that are all datasets (``cachediag export``), goes to click.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cachediag.console import echo_bytes, finish_reading, plain_streams, run_guarded
from cachediag.quick import (
    Window,
    add_path,
    capture_join,
    paths_click_takes,
    plain_count,
    plain_float,
    resolve_window,
    zone_or_local,
)

if TYPE_CHECKING:
    from cachediag.analysis.rollup import GroupBy
    from cachediag.analysis.session_analysis import SessionAnalysis
    from cachediag.cli.window import Bound
    from cachediag.pipeline_audit import AuditRun
    from cachediag.report.audit_report import AuditReport

T = TypeVar("T")

BY_CHOICES = [
    "session",
    "project",
    "day",
    "week",
    "month",
    "gap",
    "model",
    "cause",
    "stream-kind",
    "host",
    "user",
]


def iso_bound(at: float | None) -> str | None:
    """A window's end for JSON: the instant in UTC, the same whatever --timezone said."""
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


@contextmanager
def progress_bar(enabled: bool) -> Iterator[tuple[Any, Any]]:
    """A progress bar on stderr; callbacks that do nothing when it is off."""
    if not enabled:
        yield (lambda n: None), (lambda: None)
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    # No refresh thread: sessions are read in forked processes, and a fork must not
    # copy a thread's locks mid-use; the bar is redrawn on each session instead.
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        auto_refresh=False,
    ) as bar:
        task = bar.add_task("sessions", total=None)

        def advance() -> None:
            bar.advance(task)
            bar.refresh()

        yield (lambda n: bar.update(task, total=n, refresh=True)), advance


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

    def window(self) -> tuple[Window, tzinfo]:
        """The window the options describe, and the zone days begin in."""
        display = zone_or_local(self.zone)
        now = time.time() if self.now is None else self.now
        return resolve_window(self.since, self.until, now, display), display

    def read(
        self, window: Window, zone: tzinfo, keep: Callable[[SessionAnalysis], T] | None = None
    ) -> AuditRun[T]:
        """Run the audit (``keep``: see ``run_audit``). With no ``paths``, a log piped
        on stdin; with none piped (or an empty pipe), the Claude Code history."""
        from cachediag.pipeline import default_paths
        from cachediag.pipeline_audit import AuditOptions, run_audit

        paths = self.paths
        stdin = sys.stdin.buffer if "-" in map(str, paths) else None
        if not paths:  # never on the quick path, which names paths: click is loaded
            import click

            from cachediag.cli.stdin import piped_log

            stdin = piped_log(click.get_current_context().info_name or "audit")
        inputs = list(paths) or ([Path("-")] if stdin is not None else default_paths())
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


_QUICK_BY = frozenset(BY_CHOICES) - {"host", "user"}
"""What ``--by`` the quick path takes: host and user need a dataset."""


@dataclass(slots=True)
class QuickAudit:
    """What ``audit`` arguments the quick path takes say (defaults: the command's)."""

    paths: list[Path]
    by: str = "project"
    top: int = 10
    now: float | None = None
    jobs: int | None = None
    progress: bool | None = None
    no_captures: bool = False


def audit_args(args: list[str]) -> QuickAudit | None:
    """What ``audit`` arguments say when ``--json`` is given with paths and only the
    options the quick path takes (the last of a repeated option counts, but for ``--by``,
    which click refuses twice); ``None`` for anything else."""
    taken = QuickAudit([])
    as_json = False
    by_given = False
    given = iter(args)
    for arg in given:
        if arg == "--json":
            as_json = True
        elif arg in ("--progress", "--no-progress"):
            taken.progress = arg == "--progress"
        elif arg == "--no-captures":
            taken.no_captures = True
        elif arg == "--jobs":
            taken.jobs = plain_count(next(given, ""), 1)
            if taken.jobs is None:
                return None
        elif arg == "--top":
            if (top := plain_count(next(given, ""), 0)) is None:
                return None
            taken.top = top
        elif arg == "--by":
            # A second --by is click's usage error (one grouping per audit), not the last.
            if by_given:
                return None
            by_given = True
            taken.by = next(given, "")
            if taken.by not in _QUICK_BY:
                return None
        elif arg == "--now":
            taken.now = plain_float(next(given, ""))
            if taken.now is None:
                return None
        elif not add_path(arg, taken.paths):
            return None
    if not as_json or not paths_click_takes(taken.paths):
        return None
    from cachediag.dataset.schema import is_dataset

    if all(is_dataset(p) for p in taken.paths):
        return None
    return taken


def audit(args: QuickAudit) -> None:
    """``cli.audit.audit`` for the arguments ``audit_args`` takes."""
    from cachediag.analysis.rollup import GroupBy
    from cachediag.report.audit_report import report_json

    inputs = AuditInputs(
        tuple(args.paths),
        None,
        None,
        None,
        args.now,
        args.top,
        None,
        args.progress,
        args.jobs,
        no_captures=args.no_captures,
    )
    window, display = inputs.window()
    run: AuditRun[None] = inputs.read(window, display)
    echo_bytes(report_json(audit_report(run, GroupBy(args.by), window)))
    finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)


def main(args: list[str]) -> None:
    """Run ``cachediag audit ARGS`` here and exit when click is not needed for them;
    return (having done nothing) when it is."""
    taken = audit_args(args[1:]) if args[:1] == ["audit"] and plain_streams() else None
    if taken is not None:
        sys.exit(run_guarded(lambda: audit(taken)))
