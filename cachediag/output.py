"""What the batch commands write besides their results, without importing click.

``analyze --json PATH...`` runs without click (``quick``), so what it writes comes from
here: ``echo`` is ``click.echo`` for text, and the notes every batch command prints
after reading (skipped lines, unreadable paths, errors) and the progress bar are shared
by both ways in. ``cli.common`` re-exports them for the commands.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable
from typing import Any

from cachediag.errors import CachediagError
from cachediag.model import LineIssue
from cachediag.text import sanitize

MAX_LISTED_ISSUES = 5
MAX_LISTED_UNREADABLE = 20
ECHO_BLOCK_CHARS = 1 << 20


def echo(text: str = "", *, err: bool = False) -> None:
    """``click.echo(text, err=err)``, byte for byte.

    Once click is loaded (every command but the quick JSON runs) this is click.echo
    itself. Without it, a text stream in an encoding other than ASCII (what click would
    use as it is) gets what click writes there: the text and a newline, colour codes
    stripped unless it is a terminal, then a flush. Any other stream goes to click."""
    stream = sys.stderr if err else sys.stdout
    if "click" not in sys.modules and _plain_text_stream(stream):
        out = text + "\n"
        if "\x1b" in out and not _isatty(stream):
            out = _strip_ansi(out)
        stream.write(out)
        stream.flush()
        return
    import click

    click.echo(text, err=err)


def echo_bytes(data: bytes) -> None:
    """``click.echo(data)`` for bytes, as ``echo`` is for text: the text stream flushed,
    then the bytes and a newline to its binary buffer, flushed."""
    stream = sys.stdout
    if "click" not in sys.modules and _plain_text_stream(stream):
        stream.flush()
        stream.buffer.write(data + b"\n")
        stream.buffer.flush()
        return
    import click

    click.echo(data)


def _plain_text_stream(stream: Any) -> bool:
    encoding = getattr(stream, "encoding", None)
    return (
        sys.platform != "win32"  # click writes to the console there in its own way
        and type(stream) is io.TextIOWrapper
        and isinstance(encoding, str)
        and encoding.lower().replace("_", "-") in ("utf-8", "utf8")
    )


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False


def _strip_ansi(text: str) -> str:
    import re

    # click's own pattern (click._compat._ansi_re).
    return re.sub(r"\033\[[0-?]*[ -/]*[@-~]", "", text)


def echo_lines(lines: Iterable[str]) -> None:
    """``echo`` of each line, in blocks of about ``ECHO_BLOCK_CHARS``: a write (and
    flush) per line is 10,000 of them for a history of 10,000 sessions. The bytes are the
    same: what click strips from text sent to a file never spans a newline."""
    block: list[str] = []
    size = 0
    for line in lines:
        block.append(line)
        size += len(line)
        if size >= ECHO_BLOCK_CHARS:
            echo("\n".join(block))
            block, size = [], 0
    if block:
        echo("\n".join(block))


def report_issues(issues: list[LineIssue]) -> None:
    """Say on stderr how many lines were skipped and where (never what they held)."""
    from cachediag.ingest.skipped import skipped_counts

    files = [i for i in issues if i.line == 0]
    lines = [i for i in issues if i.line != 0]
    counts = skipped_counts(issues)
    for label, group, count in zip(("file(s)", "line(s)"), (files, lines), counts, strict=True):
        if not count:
            continue
        shown = "; ".join(
            f"{i.source}:{i.line}: {i.reason}" if i.line else f"{i.source}: {i.reason}"
            for i in group[:MAX_LISTED_ISSUES]
        )
        shown = sanitize(shown)
        extra = count - min(len(group), MAX_LISTED_ISSUES)
        more = f" (+{extra} more)" if extra > 0 else ""
        echo(f"cachediag: skipped {count} {label}: {shown}{more}", err=True)


def report_unreadable(unreadable: list[LineIssue]) -> None:
    """Name on stderr each file or folder that could not be read, and why."""
    if not unreadable:
        return
    shown = "; ".join(f"{i.source}: {i.reason}" for i in unreadable[:MAX_LISTED_UNREADABLE])
    shown = sanitize(shown)  # a file name may hold control characters
    extra = len(unreadable) - MAX_LISTED_UNREADABLE
    more = f" (+{extra} more)" if extra > 0 else ""
    echo(f"cachediag: could not read {len(unreadable)} path(s): {shown}{more}", err=True)


def finish_reading(
    issues: list[LineIssue], unreadable: list[LineIssue], errors: list[str], nothing_read: bool
) -> None:
    """What every batch command says after reading: skipped lines, unreadable paths, and
    the errors (exit 1 for an error, or when paths were found and none could be read)."""
    report_issues(issues)
    if nothing_read and not errors and len(unreadable) == 1:
        only = unreadable[0]  # one path named, and it could not be read: say so, once
        raise CachediagError(f"{only.source}: {only.reason}")
    report_unreadable(unreadable)
    if nothing_read and not errors:
        errors = [f"nothing could be read ({len(unreadable)} path(s) unreadable)"]
    raise_errors(errors)


def raise_errors(errors: list[str]) -> None:
    """Each error but the last as an ``Error:`` line on stderr, sanitised (they name files
    and sessions); the last raised, for the command's one error exit (sanitised there)."""
    if errors:
        for message in errors[:-1]:
            echo(f"Error: {sanitize(message, lines=True)}", err=True)
        raise CachediagError(errors[-1])


class Progress:
    """A transient progress bar on stderr; shown only for long runs at a terminal."""

    MIN_ITEMS = 50

    def __init__(self, label: str) -> None:
        self.label = label
        self._bar: Any = None
        self._task: Any = None

    def update(self, done: int, total: int) -> None:
        if total < self.MIN_ITEMS:
            return
        if self._bar is None:
            from rich.console import Console
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=total)
        self._bar.update(self._task, completed=done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
