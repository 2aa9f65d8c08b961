"""``cachediag warm``: the sessions whose prompt cache is still warm, and for how long."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.analysis.warm import LONGEST_TTL_S
from cachediag.cli.common import agent_option, jq_option, pricing_option
from cachediag.cli.window import zone_option
from cachediag.commands.window import zone_or_local
from cachediag.console import emit_json, finish_reading

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
@agent_option
def warm(
    paths: tuple[Path, ...],
    as_json: bool,
    jq_filter: str | None,
    now: float | None,
    zone: tzinfo | None,
    pricing_file: Path | None,
    agent: str | None = None,
) -> None:
    """Sessions whose prompt cache is still warm: time left and what going cold costs.

    Each session is judged by its provider's cache: Claude Code's by its own TTL, as its
    log shows it (5 minutes, or an hour when its last entry was written for an hour);
    Codex's and opencode's OpenAI sessions by the model's retention (5 or 30 minutes, 24
    hours when extended); Gemini CLI's by Gemini's. For each: the time left, what
    resuming now costs (its last prompt read from the cache) and what resuming after
    expiry costs (that prompt written again at the TTL's write price; OpenAI and Gemini
    charge no write: sent again at the input price). Newest first. PATHS as for
    analyze; default: every agent's history found, or --agent's (only files written to
    in the last day are read).

    \b
    Examples:
      cachediag warm
      cachediag warm --jq '.sessions[] | "\\(.session_id) \\(.seconds_left)"'
      cachediag warm --agent codex
    """
    from cachediag.commands.agents import agents_for, names_agents
    from cachediag.ingest.discover import discover
    from cachediag.pipeline import Run, default_paths
    from cachediag.pricing import pricing_source
    from cachediag.report.warm import report_json, warm_report

    clock = time.time() if now is None else now
    if pricing_file is not None:
        pricing_source(pricing_file)  # an unusable price file: an error before reading
    agents = agents_for(agent)
    run = Run(agents=agents)
    # A file last written before the longest TTL can hold no warm cache: not read at all.
    # One named on the command line is still looked at (its first lines only), so a path
    # that is not a log fails as it does in every other command.
    named = {p for p in paths if p.is_file()}
    recent: list[Path] = []
    for src in discover(list(paths) or default_paths(agents), run.unreadable.append):
        if (p := src.main) is None:
            continue
        if agents is not None and not src.explicit and (src.reader or "claude") not in agents:
            continue  # another agent's file in a folder: not read (it is named to Run below)
        if _mtime(p, wal=src.reader == "opencode") >= clock - LONGEST_TTL_S:
            recent.append(p)
        elif p in named and (why := _not_a_log(p, src.reader)) is not None:
            run.errors.append(why)
    tagged = run.tagged(recent, None, clock, WarmRender(clock, pricing_file))
    rows = [(whose, r) for whose, r in tagged if r]
    naming = names_agents(agent, run.agents_found)
    report = warm_report(
        [r.model_copy(update={"agent": whose if naming else None}) for whose, r in rows], clock
    )
    if not rows and (run.errors or run.nothing_read):
        pass  # nothing was read: only the error, not "no warm cache" as if one had been
    elif as_json or jq_filter is not None:
        emit_json([report_json(report)], jq_filter)
    else:
        from cachediag.console import SafeConsole
        from cachediag.report.warm import warm_table

        # Session ids are file names or OTel ``session.id`` values: anything at all.
        console = SafeConsole()
        others = any(whose != "claude" for whose, _ in rows)
        table = warm_table(
            report, zone=zone_or_local(zone), width=console.width, other_agents=others
        )
        console.print(table)
    finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)


def _not_a_log(path: Path, reader: str | None) -> str | None:
    """Why a file is not a log cachediag reads (from its first lines), or ``None``.
    Another agent's file (a rollout, a chat, opencode's database) is judged when read:
    named on the command line and old, it is looked at only for being readable."""
    from cachediag.ingest.sniff import open_file

    if reader is not None:
        try:
            path.open("rb").close()
        except OSError as exc:
            return f"{path}: {exc.strerror or exc}"
        return None

    try:
        opened = open_file(path, None)
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    opened.fp.close()
    return None if opened.error is None else str(opened.error)


def _mtime(path: Path, *, wal: bool = False) -> float:
    """When ``path`` was last written; with ``wal``, a SQLite database's write-ahead log
    counts (opencode's commits land there, the database file changes at checkpoints)."""
    times = [path, Path(f"{path}-wal")] if wal else [path]
    found = 0.0
    for p in times:
        try:
            found = max(found, p.stat().st_mtime)
        except OSError:
            continue
    return found


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
