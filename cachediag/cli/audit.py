"""``cachediag audit``: what the cache saved and wasted across many sessions."""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from cachediag.cli.common import emit_json, finish_reading, pricing_option
from cachediag.cli.window import Bound, Window, resolve_window, window_options, zone_or_local

if TYPE_CHECKING:
    from cachediag.analysis.session import SessionAnalysis
    from cachediag.pipeline_audit import AuditRun

R = TypeVar("R")
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
def _progress(enabled: bool) -> Iterator[tuple[Any, Any]]:
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
        from cachediag.cli.stdin import piped_log
        from cachediag.pipeline import default_paths
        from cachediag.pipeline_audit import AuditOptions, run_audit

        paths = self.paths
        stdin = sys.stdin.buffer if "-" in map(str, paths) else None
        if not paths:
            stdin = piped_log(click.get_current_context().info_name or "audit")
        inputs = list(paths) or ([Path("-")] if stdin is not None else default_paths())
        options = AuditOptions(
            since=window.since,
            until=window.until,
            top=self.top,
            pricing_file=self.pricing_file,
            zone=zone,
        )
        show = sys.stderr.isatty() if self.progress is None else self.progress
        with _progress(show) as (on_start, on_done):
            return run_audit(
                inputs,
                options,
                on_start=on_start,
                on_done=on_done,
                workers=self.jobs,
                keep=keep,
                stdin=stdin,
            )


_INPUT_OPTIONS = [
    click.argument("paths", nargs=-1, type=click.Path(path_type=Path)),
    window_options,
    click.option(
        "--now",
        type=float,
        metavar="EPOCH",
        help="Pin the clock (Unix seconds) that spans like --since 7d count back from.",
    ),
    click.option(
        "--top",
        type=click.IntRange(min=0),
        metavar="N",
        default=10,
        show_default=True,
        help="How many of the most expensive misses to list.",
    ),
    pricing_option,
    click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress bar on stderr (default: when stderr is a terminal).",
    ),
    click.option(
        "--jobs",
        type=click.IntRange(min=1),
        metavar="N",
        default=None,
        help="Processes, this one included (default: one per core from 4 MB of input, else 1).",
    ),
]
_INPUT_NAMES = tuple(f.name for f in fields(AuditInputs))


def audit_inputs(command: Callable[..., R]) -> Callable[..., R]:
    """The inputs, window, prices and reading of an audit; ``report`` takes the same.

    The decorated command receives them as one ``AuditInputs`` (its first argument),
    then its own options."""

    @functools.wraps(command)
    def with_inputs(**options: Any) -> R:
        inputs = AuditInputs(**{name: options.pop(name) for name in _INPUT_NAMES})
        return command(inputs, **options)

    decorated: Callable[..., R] = with_inputs
    for option in reversed(_INPUT_OPTIONS):
        decorated = option(decorated)
    return decorated


def report_run_errors(run: AuditRun[Any]) -> None:
    """Skipped lines and unreadable paths on stderr, then the run's errors (the last one
    fails the command, as does a run where nothing could be read)."""
    finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)


@click.command()
@audit_inputs
@click.option(
    "--by",
    "by",
    type=click.Choice(BY_CHOICES),
    default="project",
    show_default=True,
    help="Break totals down by this (day, week and month in --timezone; gap: the idle "
    "time before each request).",
)
@click.option("--tokens", is_flag=True, help="Token columns (input, output, cache write/read).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object (see --schema).")
@click.option(
    "--jq",
    "jq_filter",
    metavar="FILTER",
    help="Apply a jq program to the JSON object (implies --json); strings print raw.",
)
@click.option("--csv", "as_csv", is_flag=True, help="CSV: a header row, then one row per group.")
@click.option("--schema", is_flag=True, help="Print the JSON Schema of --json output and exit.")
@click.option(
    "--sql",
    "as_sql",
    is_flag=True,
    help="Print the SQL of this audit over a table named requests holding a dataset "
    "(cachediag export), for Spark, Trino, BigQuery..., and exit.",
)
@click.option(
    "--sql-dialect",
    type=click.Choice(["duckdb", "spark"]),
    default="duckdb",
    show_default=True,
    help="Quoting and types of --sql.",
)
def audit(
    inputs: AuditInputs,
    by: str,
    tokens: bool,
    as_json: bool,
    jq_filter: str | None,
    as_csv: bool,
    schema: bool,
    as_sql: bool,
    sql_dialect: str,
) -> None:
    """Cost audit: totals, breakdowns, the most expensive misses and a TTL what-if.

    PATHS are transcripts, session or project folders, or request logs ('-': stdin);
    default: a log piped on stdin, else all Claude Code history (~/.config/claude/projects
    and ~/.claude/projects, or each dir of $CLAUDE_CONFIG_DIR), each response counted once
    however many copies hold it. PATHS that are datasets written by `cachediag export`
    are audited by DuckDB over their Parquet files (--by host and --by user need one;
    prices are those of the export). Prices come from the bundled
    genai-prices data unless --pricing names a file; a model without a price is shown
    as unpriced, never counted as $0.

    \b
    Examples:
      cachediag audit --by day --since 2026-01-01 --timezone Europe/Paris
      cachediag audit --by week --since 4w --tokens
      cachediag audit --by gap                 miss rate by idle time: 5m or 1h TTL?
      cachediag audit --json | jq '.whatif.recommendation'
      cachediag audit --by model --csv > costs.csv
      cachediag audit /shared/cachediag --by host
      cachediag audit --sql --sql-dialect spark --by cause
    """
    from cachediag.analysis.audit import GroupBy

    if schema:
        from cachediag.report.audit import audit_schema

        click.echo(json.dumps(audit_schema(), indent=2))
        return
    as_json = as_json or jq_filter is not None
    if as_json and as_csv:
        raise click.UsageError("--json (or --jq) and --csv are exclusive")
    window, display = inputs.window()
    paths, top, pricing_file = inputs.paths, inputs.top, inputs.pricing_file
    from cachediag.dataset.query import is_dataset
    from cachediag.report.audit import build_report

    run: AuditRun[None]
    if as_sql or (paths and all(is_dataset(p) for p in paths)):
        from cachediag.dataset.audit import dataset_audit, dataset_sql
        from cachediag.pipeline_audit import AuditOptions

        options = AuditOptions(window.since, window.until, top, pricing_file, display)
        if as_sql:
            click.echo(dataset_sql(GroupBy(by), options, sql_dialect), nl=False)
            return
        # Only --json lists every session (whatif_by_session); tables and CSV count them.
        run = dataset_audit(list(paths), GroupBy(by), options, session_lines=as_json)
    elif by in ("host", "user"):
        raise click.UsageError(f"--by {by} needs a dataset (cachediag export)")
    else:
        run = inputs.read(window, display)
    report = build_report(
        run.audit,
        GroupBy(by),
        run.pricing_source,
        since=iso_bound(window.since),
        until=iso_bound(window.until),
        unreadable_files=len(run.unreadable),
    )
    if jq_filter is not None:
        from cachediag.report.audit import report_dict

        emit_json([report_dict(report)], jq_filter)
    elif as_json:
        from cachediag.report.audit import report_json

        click.echo(report_json(report))
    elif as_csv:
        from cachediag.report.audit import report_csv
        from cachediag.report.console import echo

        echo(report_csv(report), nl=False)
    else:
        from cachediag.report.audit_tables import audit_tables
        from cachediag.report.console import SafeConsole

        if run.sessions_read == 0:
            # Nothing read: no empty report; the errors below say why (exit 1).
            if not run.errors and not run.unreadable:
                click.echo("No sessions found.", err=True)
        else:
            console = SafeConsole()
            console.print(audit_tables(report, zone=display, tokens=tokens, width=console.width))
    report_run_errors(run)
