"""``daily``, ``weekly``, ``monthly``, ``session``, ``blocks``: ccusage's reports, same
options and short flags, with the prompt cache in every row (``commands.usage``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from cachediag.cli.common import agent_option, pricing_option
from cachediag.cli.window import BoundType, ZoneType
from cachediag.commands.options import JOBS
from cachediag.commands.usage import UsageOptions, usage_report

F = TypeVar("F", bound=Callable[..., Any])
WHEN = "YYYYMMDD, YYYY-MM-DD, an ISO date-time, or back from now: 7d, 2w"


def _shared(func: F) -> F:
    """The options every usage report takes, in ccusage's order on --help."""
    decorators = [
        click.argument("paths", nargs=-1, type=click.Path(path_type=Path)),
        click.option("-s", "--since", type=BoundType(), help=f"From this day on: {WHEN}."),
        click.option(
            "-u", "--until", type=BoundType(), help="Up to this day, included (same forms)."
        ),
        click.option(
            "-j", "--json", "as_json", is_flag=True, help="ccusage's JSON, plus promptCache."
        ),
        click.option(
            "-o",
            "--order",
            type=click.Choice(["asc", "desc"]),
            default="asc",
            show_default=True,
            help="Oldest first (asc) or newest first (desc).",
        ),
        click.option(
            "-m",
            "--mode",
            type=click.Choice(["auto", "calculate", "display"]),
            default="auto",
            show_default=True,
            help="Cost: a transcript line's own costUSD when it has one, else cachediag's "
            "prices (auto); always the prices (calculate); the line's only (display).",
        ),
        click.option("-b", "--breakdown", is_flag=True, help="A line per model under each row."),
        click.option(
            "-O",
            "--offline/--no-offline",
            default=False,
            help="Accepted for ccusage's scripts; changes nothing here: cachediag's prices "
            "are always read from this machine.",
        ),
        click.option(
            "-z",
            "--timezone",
            "zone",
            type=ZoneType(),
            metavar="TZ",
            help="Zone of days, weeks and months (UTC, Europe/Paris); default: this machine's.",
        ),
        click.option("--project", "-p", metavar="NAME", help="Only this project (folder or path)."),
        agent_option,
        click.option("--now", type=float, metavar="EPOCH", help="Pin the clock (Unix seconds)."),
        pricing_option,
        click.option(
            "--jobs",
            type=click.IntRange(min=JOBS.low),
            metavar="N",
            default=None,
            help="Processes, this one included (default: by the input's size).",
        ),
        click.option("--single-thread", is_flag=True, help="One process (--jobs 1)."),
        click.option(
            "--no-index",
            "no_index",
            is_flag=True,
            help="Read every transcript; by default unchanged ones are answered from the "
            "private history index ($XDG_CACHE_HOME/cachediag/history).",
        ),
        click.option(
            "--compact", is_flag=True, help="Tables of at most 80 columns, whatever the terminal."
        ),
        click.option(
            "--color/--no-color",
            default=None,
            help="Colour in tables (default: when stdout is a terminal; NO_COLOR=1 turns it off).",
        ),
    ]
    for decorate in reversed(decorators):
        func = decorate(func)
    return func


def _instances(func: F) -> F:
    func = click.option(
        "--last",
        type=click.IntRange(min=1),
        metavar="N",
        help="Only the most recent N periods (1: today, this week or this month).",
    )(func)
    return click.option(
        "-i", "--instances", is_flag=True, help="Each project's rows on their own."
    )(func)


def _run(report: str, **kw: Any) -> None:
    kw.pop("offline", None)
    kw["index"] = not kw.pop("no_index")
    if kw.pop("single_thread"):
        kw["jobs"] = 1
    compact, color = kw.pop("compact"), kw.pop("color")
    paths = tuple(kw.pop("paths"))
    options = UsageOptions(report=report, paths=paths, json=kw.pop("as_json"), **kw)
    if options.json:  # text, no table: rich (tens of ms to import) is not loaded
        click.echo(usage_report(options))
        return
    from cachediag.console import SafeConsole

    console = SafeConsole(
        highlight=False,
        no_color=None if color is None else not color,
        force_terminal=True if color else None,
    )
    options = _with_width(options, min(console.width, 80) if compact else console.width)
    out = usage_report(options)
    if isinstance(out, str):
        click.echo(out)
        return
    for part in out:
        console.print(part)


def _with_width(options: UsageOptions, width: int) -> UsageOptions:
    from dataclasses import replace

    return replace(options, width=width)


EXAMPLES = """
\b
Examples:
  cachediag {name}                      # every agent's history found
  cachediag {name} -s 20260201 -z UTC -b
  cachediag {name} --json | jq '.totals.totalCost'
"""


@click.command(epilog=EXAMPLES.format(name="daily"))
@_shared
@_instances
def daily(**kw: Any) -> None:
    """Usage by day, with the prompt cache (ccusage's `daily`)."""
    _run("daily", **kw)


@click.command(epilog=EXAMPLES.format(name="weekly"))
@_shared
@_instances
@click.option(
    "-w",
    "--start-of-week",
    type=click.Choice(
        ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
    ),
    default=None,
    help="The day weeks start on (default: sunday; monday across agents, as ccusage).",
)
def weekly(**kw: Any) -> None:
    """Usage by week, with the prompt cache (ccusage's `weekly`)."""
    _run("weekly", **kw)


@click.command(epilog=EXAMPLES.format(name="monthly"))
@_shared
@_instances
def monthly(**kw: Any) -> None:
    """Usage by month, with the prompt cache (ccusage's `monthly`)."""
    _run("monthly", **kw)


@click.command(epilog=EXAMPLES.format(name="session"))
@_shared
@click.option("-i", "--id", "session_id", metavar="ID", help="Only this session.")
def session(**kw: Any) -> None:
    """Usage by session, costliest first, with the prompt cache (ccusage's `session`)."""
    _run("session", **kw)


@click.command(epilog=EXAMPLES.format(name="blocks"))
@_shared
@click.option("-a", "--active", is_flag=True, help="Only the active block, with projections.")
@click.option(
    "-r", "--recent", is_flag=True, help="Blocks of the last 3 days (and the active one)."
)
@click.option(
    "-t",
    "--token-limit",
    metavar="N|max",
    help="Warn past this many tokens a block ('max': the most a finished block used).",
)
@click.option(
    "-n",
    "--session-length",
    "session_hours",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    help="Hours a block lasts.",
)
def blocks(**kw: Any) -> None:
    """5-hour billing blocks, with burn rate and projection (ccusage's `blocks`)."""
    _run("blocks", **kw)
