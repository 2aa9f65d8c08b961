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

DEFAULT_OUTPUT = "cachediag-report.html"


@click.command()
@audit_inputs
@click.option(
    "--output",
    "-o",
    default=None,
    metavar="FILE.html",
    help=f"Where to write the page; '-' for stdout. Default: ./{DEFAULT_OUTPUT} "
    "(a symbolic link there is refused, never written through).",
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
def report(inputs: AuditInputs, output: str | None, timelines: int, title: str) -> None:
    """One self-contained HTML page: every request on a timeline, misses and their causes.

    Takes the inputs, window (--since/--until), prices and captures (--captures: the
    requests only the proxy's records hold are counted) of `cachediag audit`. Per
    session: read / written / uncached tokens of every request on a time axis, misses
    marked with their cause, expected rebuilds, compactions and model switches marked,
    the TTL window shaded so a pause that outlived it shows; subagents and compaction
    agents as lanes of their own. Across sessions: totals, re-cache cost by cause (the
    extra cost of misses and expected rebuilds beyond a hit) with what to do about each, spend
    by day, project and model, the most expensive misses, the TTL what-if, and a list of
    sessions to sort, filter and open. The file opens offline, from disk; it fetches nothing and
    holds no prompt text.

    \b
    Examples:
      cachediag report                  (writes ./cachediag-report.html)
      cachediag report --output cache.html
      cachediag report ~/.claude/projects/-home-me-app --since 30d -o app.html
      cachediag report session.jsonl --output - > session.html
    """
    from cachediag import __version__
    from cachediag.cli.stdin import piped_log
    from cachediag.report.clock import zone_label
    from cachediag.report.html.data import SessionPage, page_data
    from cachediag.report.html.page import render_page
    from cachediag.text import sanitize

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
        where = write_page(output or DEFAULT_OUTPUT, text)
        size = len(text.encode("utf-8"))
        # Named as given with -o; the default file by its full path, so it can be found
        # (the current folder's name is not ours: sanitised for the terminal).
        shown = output or sanitize(where)
        click.echo(f"Wrote {shown}: {len(pages)} session(s), {size / 1e6:.2f} MB", err=True)
    report_run_errors(run)


def write_page(path: str, text: str) -> str:
    """Write the page to ``path`` and return its absolute path. A regular file (or none)
    is replaced atomically, mode 0600; a symbolic link is refused (never written through,
    never replaced); a device or FIFO (``-o /dev/null``) is written as it is."""
    import os
    import stat

    from cachediag.safefiles import write_atomic

    where = os.path.abspath(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise CachediagError(f"{path}: cannot write the report: {exc.strerror}") from exc
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise CachediagError(
            f"{path}: a symbolic link; the report is not written through it "
            "(remove the link or choose another --output)"
        )
    data = text.encode("utf-8")
    try:
        if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            with open(path, "wb") as out:
                out.write(data)
        else:
            write_atomic(path, data)
    except IsADirectoryError as exc:
        raise CachediagError(f"{path}: a folder; name a file with --output") from exc
    except OSError as exc:
        raise CachediagError(f"{path}: cannot write the report: {exc.strerror}") from exc
    return where
