"""``daily``, ``weekly``, ``monthly``, ``session``, ``blocks``: paths -> rows -> report.

Click-free: ``cli.usage`` reads the options into ``UsageOptions`` and prints what
``usage_report`` returns. Rows come from one place, ``rows_for``: the seam where an
index of rows kept per transcript file plugs in.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import tzinfo
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from cachediag.commands.window import Bound, Window, resolve_window, zone_or_local
from cachediag.errors import UsageError

if TYPE_CHECKING:
    from rich.console import RenderableType

    from cachediag.analysis.session_analysis import SessionAnalysis
    from cachediag.usage.rows import RequestRow

REPORTS = ("daily", "weekly", "monthly", "session", "blocks")


@dataclass(slots=True, frozen=True)
class UsageOptions:
    """Everything a usage report needs besides its rows."""

    report: str
    paths: tuple[Path, ...] = ()
    since: Bound | None = None
    until: Bound | None = None
    zone: tzinfo | None = None
    now: float | None = None
    json: bool = False
    order: str = "asc"
    breakdown: bool = False
    instances: bool = False
    project: str | None = None
    session_id: str | None = None
    start_of_week: str | None = None
    """``--start-of-week``; ``None``: as ccusage, Sunday in Claude Code's report, Monday
    in the one across agents (and opencode's)."""
    active: bool = False
    recent: bool = False
    token_limit: str | None = None
    session_hours: float = 5.0
    mode: str = "auto"
    last: int | None = None
    pricing_file: Path | None = None
    jobs: int | None = None
    width: int = 80
    index: bool = True
    """Answer unchanged transcripts from the on-disk history index (``--no-index``: read
    every file, as the index itself would on its first run)."""
    agent: str | None = None
    """``--agent``: claude, codex, gemini, opencode or all; ``None``: every agent found
    (``usage_build.json_shape`` says which JSON each prints)."""

    def clock(self) -> float:
        return time.time() if self.now is None else self.now

    def display_zone(self) -> tzinfo:
        return zone_or_local(self.zone)

    def window(self) -> Window:
        return resolve_window(self.since, self.until, self.clock(), self.display_zone())


def _session_rows(analysis: SessionAnalysis, pricing_file: Path | None) -> list[RequestRow]:
    # Runs in the worker that read the session: rows travel back, not the analysis.
    from cachediag.pricing import price_function
    from cachediag.usage.rows import session_rows

    return session_rows(analysis, price_function(pricing_file))


def rows_for(paths: Iterable[Path], options: UsageOptions) -> list[RequestRow]:
    """Every request row of the transcripts under ``paths`` (files or folders; none: the
    Claude Code history), each response once, in no promised order.

    Unless ``options.index`` is off, the on-disk history index (``history.report_rows``)
    answers: the same rows for the same files, read again only for the project groups
    whose files changed; every report below depends on nothing else. Lines skipped and
    files that could not be read are reported on stderr here; an error stops the run
    (``CachediagError``).
    """
    from cachediag.console import echo, finish_reading
    from cachediag.pipeline import Run, default_paths

    if options.index:
        from cachediag.history.report_rows import indexed_rows_for

        try:
            return indexed_rows_for(paths, options)
        except OSError as exc:  # a cache folder not ours alone, a full disk: read it all
            why = exc.strerror or str(exc)
            echo(f"note: history index unavailable ({why}); reading every file", err=True)
    from cachediag.commands.agents import agents_for

    agents = agents_for(options.agent)
    inputs = list(paths) or default_paths(agents)
    run = Run(jobs=options.jobs, agents=agents)
    render = partial(_session_rows, pricing_file=options.pricing_file)
    rows = [row for batch in run.rendered(inputs, None, options.clock(), render) for row in batch]
    finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)
    return rows


def select_rows(rows: Iterable[RequestRow], options: UsageOptions) -> list[RequestRow]:
    """``--agent``, ``--project``, ``--id`` and ``--mode`` applied; the window is the
    report's (by its dates)."""
    from cachediag.usage.rows import priced

    kept = [priced(r, options.mode) for r in rows]
    if options.agent not in (None, "all"):
        kept = [r for r in kept if r.agent == options.agent]
    if options.project is not None:
        kept = [r for r in kept if options.project in (r.project, r.cwd)]
    if options.session_id is not None:
        kept = [r for r in kept if r.transcript_session == options.session_id]
    return kept


def usage_report(options: UsageOptions) -> str | list[RenderableType]:
    """The report: ccusage's JSON text with ``--json``, else tables for people."""
    if options.report not in REPORTS:
        raise UsageError(f"unknown report {options.report!r} (one of {', '.join(REPORTS)})")
    rows = select_rows(rows_for(options.paths, options), options)
    from cachediag.commands.usage_build import build_report

    return build_report(rows, options)
