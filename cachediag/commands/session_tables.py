"""The tables ``analyze`` prints, for Claude Code's sessions and every other agent's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from cachediag.commands.window import Window, first_at, in_window

if TYPE_CHECKING:
    from rich.console import RenderableType

    from cachediag.analysis.session_analysis import SessionAnalysis


def print_session_tables(
    sessions: Iterable[SessionAnalysis],
    pricing_file: Path | None,
    window: Window,
    zone: tzinfo,
    *,
    read_clean: Callable[[], bool],
    read_done: Callable[[], None] | None = None,
) -> None:
    """Each session's tables in the order the sessions started, then the totals when there
    are several. ``read_done`` runs once every session is read (a progress bar gives the
    terminal back); ``read_clean`` says whether reading went without errors, asked only
    then, so that "No sessions" is not said over the errors."""
    # rich and the pricing load only for the tables, not for JSON output.
    from cachediag.console import SafeConsole, echo
    from cachediag.pricing import price_function, pricing_source
    from cachediag.report.tables import SessionTotals, session_report, totals_lines

    price_of, source = price_function(pricing_file), pricing_source(pricing_file)
    console = SafeConsole()
    shown: list[tuple[float, int, list[RenderableType]]] = []
    totals = SessionTotals()
    for a in sessions:
        if not window.open and not in_window(a, window):
            continue
        totals.add(a, price_of)
        parts = session_report(a, price_of, source, zone=zone, width=console.width)
        shown.append((first_at(a), len(shown), list(parts)))
    if read_done is not None:
        read_done()
    for n, (_, _, parts) in enumerate(sorted(shown, key=lambda s: (s[0], s[1]))):
        if n:
            console.print()
        for part in parts:
            console.print(part, soft_wrap=True)
    if len(shown) > 1:
        console.print()
        for part in totals_lines(totals, width=console.width):
            console.print(part, soft_wrap=True)
    if not shown and read_clean():
        echo("No sessions found." if window.open else "No sessions in that window.", err=True)
