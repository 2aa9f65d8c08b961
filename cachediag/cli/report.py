"""``cachediag report``: one HTML file of where the cache went cold."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import click

from cachediag.cli.audit import audit_inputs, report_run_errors
from cachediag.commands.audit import AuditInputs, iso_bound
from cachediag.errors import CachediagError

if TYPE_CHECKING:
    from cachediag.report.html.data import PageDict


@click.command()
@audit_inputs
@click.option(
    "--output",
    "-o",
    required=True,
    metavar="FILE.html",
    help="Where to write the page; '-' writes it to stdout.",
)
@click.option(
    "--timelines",
    type=click.IntRange(min=0),
    default=50,
    show_default=True,
    help="Keep every request of this many sessions (the most expensive); the others keep "
    "their summary and miss table, so the file stays small.",
)
@click.option("--title", default="cachediag report", show_default=True, help="Page title.")
def report(inputs: AuditInputs, output: str, timelines: int, title: str) -> None:
    """One self-contained HTML page: every request on a timeline, misses and their causes.

    Takes the inputs, window (--since/--until), prices and captures (--captures: the
    requests only the proxy's records hold are counted) of `cachediag audit`. Per
    session: read / written / uncached tokens of every request on a time axis, misses
    marked with their cause, expected rebuilds, compactions and model switches marked,
    the TTL window shaded so a pause that outlived it shows; subagents and compaction
    agents as lanes of their own. Across sessions: totals, spend by cause and by day,
    the most expensive misses and the TTL what-if. The file opens offline, from disk;
    it fetches nothing and holds no prompt text.

    \b
    Examples:
      cachediag report --output cache.html
      cachediag report ~/.claude/projects/-home-me-app --since 2026-11-01 -o app.html
      cachediag report session.jsonl --output - > session.html
    """
    from cachediag import __version__
    from cachediag.cli.stdin import piped_log
    from cachediag.report.clock import zone_label
    from cachediag.report.html.data import SessionPage, page_data
    from cachediag.report.html.page import render_page

    window, display = inputs.window()
    keep = SessionPage(inputs.pricing_file, window.since, window.until)
    run = inputs.read(window, display, keep=keep, piped=functools.partial(piped_log, "report"))
    pages: list[PageDict] = run.kept
    if not pages:
        report_run_errors(run)
        raise CachediagError("no session with requests found: no report written")
    data = page_data(
        run.audit,
        run.pricing_source,
        pages,
        timelines=timelines,
        since=iso_bound(window.since),
        until=iso_bound(window.until),
        generator=f"cachediag {__version__}",
        days_in=zone_label(display, min((p["first_at"] or 0.0) for p in pages)),
    )
    text = render_page(data, title)
    if output == "-":
        click.echo(text, nl=False)
    else:
        try:
            with open(output, "w", encoding="utf-8") as out:
                out.write(text)
        except OSError as exc:
            raise CachediagError(f"{output}: cannot write the report: {exc.strerror}") from exc
        size = len(text.encode("utf-8"))
        click.echo(f"Wrote {output}: {len(pages)} session(s), {size / 1e6:.2f} MB", err=True)
    report_run_errors(run)
