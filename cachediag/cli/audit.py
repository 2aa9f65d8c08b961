"""``cachediag audit``: what the cache saved and wasted across many sessions."""

from __future__ import annotations

import functools
import gc
import json
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from cachediag.cli.captures import captures_option
from cachediag.cli.common import agent_option, pricing_option
from cachediag.cli.window import window_options
from cachediag.commands.audit import AuditInputs, audit_report
from cachediag.commands.options import BY_CHOICES, BY_DEFAULT, JOBS, TOP
from cachediag.console import emit_json, finish_reading

if TYPE_CHECKING:
    from cachediag.pipeline_audit import AuditRun

__all__ = ["BY_CHOICES", "audit", "audit_inputs", "one_by", "report_run_errors"]

R = TypeVar("R")

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
        type=click.IntRange(min=TOP.low),
        metavar="N",
        default=TOP.default,
        show_default=True,
        help="How many of the most expensive misses to list.",
    ),
    pricing_option,
    captures_option,
    agent_option,
    click.option(
        "--progress/--no-progress",
        default=None,
        help="Progress bar on stderr (default: when stderr is a terminal).",
    ),
    click.option(
        "--jobs",
        type=click.IntRange(min=JOBS.low),
        metavar="N",
        default=None,
        help="Processes, this one included (default: one per core when 4 MB of the input "
        "lie outside its largest project folder, else 1).",
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


def one_by(given: tuple[str, ...]) -> str:
    """The grouping of ``--by`` given at most once (default: project); a second one is a
    usage error (exit 2), not a silent choice of the last."""
    if len(given) > 1:
        raise click.UsageError(
            f"--by was given {len(given)} times ({', '.join(given)}): an audit takes one "
            "--by; run one audit per grouping",
        )
    return given[0] if given else BY_DEFAULT


@click.command()
@audit_inputs
@click.option(
    "--by",
    "by",
    type=click.Choice(list(BY_CHOICES)),
    # The choices in the help text: as the metavar they pass 80 columns.
    metavar="KEY",
    # Taken as many times as given, so that a second --by is refused rather than
    # silently replacing the first (click keeps the last of a repeated option).
    multiple=True,
    show_default=BY_DEFAULT,
    help=f"Break totals down by KEY: {', '.join(BY_CHOICES)} (day, week and month in "
    "--timezone; gap: the idle time before each request). One --by per audit.",
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
    by: tuple[str, ...],
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
    and ~/.claude/projects, or each dir of $CLAUDE_CONFIG_DIR) and each other agent's
    home found (Codex, Gemini CLI, opencode; --agent picks one), each response counted once
    however many copies hold it (a transcript request and the proxy's record of it are
    one). The proxy's captures are joined as analyze joins them (--captures), so the
    requests only they hold (the compaction call Claude Code writes no transcript for)
    are counted too. PATHS that are datasets written by `cachediag export`
    are audited by DuckDB over their Parquet files (--by host and --by user need one;
    prices are those of the export). Prices come from the bundled
    genai-prices data unless --pricing names a file; a model without a price is shown
    as unpriced, never counted as $0.

    \b
    Examples:
      cachediag audit --by day --since 2026-01-01 --timezone Europe/Paris
      cachediag audit --by week --since 4w --tokens
      cachediag audit --by gap              miss rate by idle time: 5m or 1h TTL?
      cachediag audit --json | jq '.whatif.recommendation'
      cachediag audit --by model --csv > costs.csv
      cachediag audit /shared/cachediag --by host
      cachediag audit --sql --sql-dialect spark --by cause
    """
    from cachediag.analysis.rollup import GroupBy

    grouping = one_by(by)
    if schema:
        from cachediag.report.audit_report import audit_schema

        click.echo(json.dumps(audit_schema(), indent=2))
        return
    as_json = as_json or jq_filter is not None
    if as_json and as_csv:
        raise click.UsageError("--json (or --jq) and --csv are exclusive")
    window, display = inputs.window()
    paths, top, pricing_file = inputs.paths, inputs.top, inputs.pricing_file
    from cachediag.dataset.schema import is_dataset

    run: AuditRun[None]
    if as_sql or (paths and all(is_dataset(p) for p in paths)):
        from cachediag.dataset.dataset_audit import dataset_audit, dataset_sql
        from cachediag.pipeline_audit import AuditOptions

        options = AuditOptions(window.since, window.until, top, pricing_file, display)
        if as_sql:
            click.echo(dataset_sql(GroupBy(grouping), options, sql_dialect), nl=False)
            return
        # Only --json lists every session (whatif_by_session); tables and CSV count them.
        run = dataset_audit(list(paths), GroupBy(grouping), options, session_lines=as_json)
        if gc.isenabled():
            # The report of 100,000 sessions is a million small objects, no garbage:
            # the cycle collector would walk them over and over for nothing.
            gc.disable()
            click.get_current_context().call_on_close(gc.enable)
    elif grouping in ("host", "user"):
        raise click.UsageError(f"--by {grouping} needs a dataset (cachediag export)")
    else:
        from cachediag.cli.stdin import piped_log

        run = inputs.read(window, display, piped=functools.partial(piped_log, "audit"))
    report = audit_report(run, GroupBy(grouping), window)
    if jq_filter is not None:
        from cachediag.report.audit_report import report_dict

        emit_json([report_dict(report)], jq_filter)
    elif as_json:
        from cachediag.report.audit_report import report_json

        click.echo(report_json(report))
    elif as_csv:
        from cachediag.console import echo_safe as echo
        from cachediag.report.audit_report import report_csv

        echo(report_csv(report), nl=False)
    else:
        from cachediag.console import SafeConsole
        from cachediag.report.audit_tables import audit_tables

        if run.sessions_read == 0 or (not window.open and report.totals.requests == 0):
            # Nothing read, or nothing in the window: no report of zeros (as analyze
            # says it); when nothing could be read, the errors below say why (exit 1).
            if not run.errors and not run.unreadable:
                click.echo(
                    "No sessions found." if window.open else "No sessions in that window.",
                    err=True,
                )
        else:
            console = SafeConsole()
            console.print(audit_tables(report, zone=display, tokens=tokens, width=console.width))
    report_run_errors(run)
