"""``cachediag audit``: what the cache saved and wasted across many sessions."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from cachediag.cli.common import CachediagError, pricing_option, report_issues

if TYPE_CHECKING:
    from cachediag.analysis.session import SessionAnalysis
    from cachediag.pipeline_audit import AuditRun

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

BY_CHOICES = ["session", "project", "day", "model", "cause", "stream-kind"]


def _epoch(day: datetime | None, *, end: bool = False) -> float | None:
    if day is None:
        return None
    start = day.replace(tzinfo=UTC)
    return (start + timedelta(days=1) if end else start).timestamp()


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


def audit_inputs(command: F) -> F:
    """The inputs, window, prices and reading of an audit; ``report`` takes the same.

    The decorated function receives ``paths``, ``since``, ``until``, ``top``,
    ``pricing_file``, ``progress`` and ``jobs``; ``read_audit`` turns them into a run.
    """
    options = [
        click.argument("paths", nargs=-1, type=click.Path(path_type=Path)),
        click.option(
            "--since", type=click.DateTime(["%Y-%m-%d"]), help="Requests from this UTC day on."
        ),
        click.option(
            "--until",
            type=click.DateTime(["%Y-%m-%d"]),
            help="Requests up to and including this UTC day.",
        ),
        click.option(
            "--top",
            type=click.IntRange(min=0),
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
            default=None,
            help="Processes, this one included (default: one per core from 4 MB of input, "
            "else 1).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def read_audit(
    paths: tuple[Path, ...],
    since: datetime | None,
    until: datetime | None,
    top: int,
    pricing_file: Path | None,
    progress: bool | None,
    jobs: int | None,
    keep: Callable[[SessionAnalysis], T] | None = None,
) -> AuditRun[T]:
    """Run the audit the options of ``audit_inputs`` ask for (``keep``: see ``run_audit``)."""
    from cachediag.pipeline import default_paths
    from cachediag.pipeline_audit import AuditOptions, run_audit

    options = AuditOptions(
        since=_epoch(since), until=_epoch(until, end=True), top=top, pricing_file=pricing_file
    )
    show = sys.stderr.isatty() if progress is None else progress
    with _progress(show) as (on_start, on_done):
        return run_audit(
            list(paths) or default_paths(),
            options,
            on_start=on_start,
            on_done=on_done,
            workers=jobs,
            keep=keep,
        )


def report_run_errors(run: AuditRun[Any]) -> None:
    """Skipped lines on stderr, then the run's errors (the last one fails the command)."""
    report_issues(run.issues)
    if run.errors:
        for message in run.errors[:-1]:
            click.echo(f"Error: {message}", err=True)
        raise CachediagError(run.errors[-1])


@click.command()
@audit_inputs
@click.option(
    "--by",
    "by",
    type=click.Choice(BY_CHOICES),
    default="project",
    show_default=True,
    help="Break totals down by this.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object (see --schema).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV: a header row, then one row per group.")
@click.option("--schema", is_flag=True, help="Print the JSON Schema of --json output and exit.")
def audit(
    paths: tuple[Path, ...],
    by: str,
    since: datetime | None,
    until: datetime | None,
    top: int,
    as_json: bool,
    as_csv: bool,
    schema: bool,
    pricing_file: Path | None,
    progress: bool | None,
    jobs: int | None,
) -> None:
    """Cost audit: totals, breakdowns, the most expensive misses and a TTL what-if.

    PATHS are transcripts, session or project folders; default: all Claude Code history
    (~/.claude/projects or $CLAUDE_CONFIG_DIR/projects). Prices come from the bundled
    genai-prices data unless --pricing names a file; a model without a price is shown
    as unpriced, never counted as $0.

    \b
    Examples:
      cachediag audit --by day --since 2026-01-01
      cachediag audit --json | jq '.whatif.recommendation'
      cachediag audit --by model --csv > costs.csv
    """
    from cachediag.analysis.audit import GroupBy
    from cachediag.report.audit import AuditReport

    if schema:
        click.echo(json.dumps(AuditReport.model_json_schema(), indent=2))
        return
    if as_json and as_csv:
        raise click.UsageError("--json and --csv are exclusive")
    from cachediag.report.audit import build_report

    run: AuditRun[None] = read_audit(paths, since, until, top, pricing_file, progress, jobs)
    report = build_report(
        run.audit,
        GroupBy(by),
        run.pricing_source,
        since=None if since is None else since.date().isoformat(),
        until=None if until is None else until.date().isoformat(),
    )
    if as_json:
        click.echo(report.model_dump_json())
    elif as_csv:
        from cachediag.report.audit import report_csv

        click.echo(report_csv(report), nl=False)
    else:
        from rich.console import Console

        from cachediag.report.audit import audit_tables

        if run.sessions_read == 0 and not run.errors:
            click.echo("No sessions found.", err=True)
        else:
            Console().print(audit_tables(report))
    report_run_errors(run)
