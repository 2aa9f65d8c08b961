"""``cachediag warm``: the sessions whose prompt cache is still warm, and for how long."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cachediag.analysis.session import SessionAnalysis
from cachediag.analysis.warm import LONGEST_TTL_S
from cachediag.cli.common import emit_json, jq_option, pricing_option, report_issues
from cachediag.cli.window import zone_option, zone_or_local
from cachediag.output import raise_errors

if TYPE_CHECKING:
    from cachediag.report.warm import WarmOut


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object (sessions newest first).")
@jq_option
@click.option(
    "--now", type=float, metavar="EPOCH", help="Judge warmth at this moment (Unix seconds)."
)
@zone_option
@pricing_option
def warm(
    paths: tuple[Path, ...],
    as_json: bool,
    jq_filter: str | None,
    now: float | None,
    zone: tzinfo | None,
    pricing_file: Path | None,
) -> None:
    """Sessions whose prompt cache is still warm: time left and what going cold costs.

    Each session is judged by its own TTL, as its log shows it (5 minutes, or an hour
    when its last entry was written for an hour). For each: the time left, what
    resuming now costs (its last prompt read from the cache) and what resuming after
    expiry costs (that prompt written again at the TTL's write price). Newest first.
    PATHS as for analyze; default: the Claude Code history (only files written to in
    the last day are read).

    \b
    Examples:
      cachediag warm
      cachediag warm --jq '.sessions[] | "\\(.session_id) \\(.seconds_left)"'
    """
    from cachediag.ingest.discover import discover
    from cachediag.pipeline import Run, default_paths
    from cachediag.pricing import pricing_source
    from cachediag.report.warm import warm_report

    clock = time.time() if now is None else now
    if pricing_file is not None:
        pricing_source(pricing_file)  # an unusable price file: an error before reading
    # A file last written before the longest TTL can hold no warm cache: not read at all.
    recent = [
        p
        for src in discover(list(paths) or default_paths())
        if (p := src.main) is not None and _mtime(p) >= clock - LONGEST_TTL_S
    ]
    run = Run()
    rows = [r for r in run.rendered(recent, None, clock, WarmRender(clock, pricing_file)) if r]
    report = warm_report(rows, clock)
    if as_json or jq_filter is not None:
        emit_json([report.model_dump(mode="json")], jq_filter)
    else:
        from cachediag.report.console import SafeConsole
        from cachediag.report.warm import warm_table

        # Session ids are file names or OTel ``session.id`` values: anything at all.
        console = SafeConsole()
        console.print(warm_table(report, zone=zone_or_local(zone), width=console.width))
    report_issues(run.issues)
    raise_errors(run.errors)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


@dataclass(slots=True, frozen=True)
class WarmRender:
    """A session -> its warm row, or ``None`` (in the worker that read it)."""

    now: float
    pricing_file: Path | None

    def __call__(self, a: SessionAnalysis) -> WarmOut | None:
        from cachediag.analysis.warm import warmth
        from cachediag.pricing import price_function
        from cachediag.report.warm import warm_out

        w = warmth(a, self.now, price_function(self.pricing_file))
        return None if w is None else warm_out(a, w)
