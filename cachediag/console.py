"""Everything the commands print besides their results, in one place, without click.

``analyze --json PATH...`` and ``audit --json PATH...`` run without click (``quick``), so
what they write comes from here: ``echo`` is ``click.echo`` for text, byte for byte; the
notes every batch command prints after reading (skipped lines, unreadable paths,
errors), the progress bar, JSON lines with ``--jq``, and ``SafeConsole`` (rich, loaded
only when a table is printed: the JSON runs and the status line never load it) are
shared by every way in. This module never imports click: once a command's click has
loaded it, ``echo`` hands its text to ``click.echo`` from ``sys.modules``; the quick
paths run only on the plain streams (``plain_streams``) where they write it alike.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from cachediag.errors import CachediagError, UsageError
from cachediag.model import LineIssue
from cachediag.text import plain_text_stream, sanitize

if TYPE_CHECKING:
    from rich.console import Console

MAX_LISTED_ISSUES = 5
MAX_LISTED_UNREADABLE = 20
ECHO_BLOCK_CHARS = 1 << 20


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """``click.echo(text, err=err, nl=nl)``, byte for byte.

    Once click is loaded (every command but the quick JSON runs) this is click.echo
    itself. Without it, on a plain UTF-8 text stream (the only kind the quick paths run
    on) it writes what click writes there: the text and a newline, colour codes
    stripped unless it is a terminal, then a flush."""
    click = sys.modules.get("click")
    if click is not None:
        click.echo(text, err=err, nl=nl)
        return
    stream = sys.stderr if err else sys.stdout
    out = text + "\n" if nl else text
    if "\x1b" in out and not _isatty(stream):
        out = _strip_ansi(out)
    stream.write(out)
    stream.flush()


def echo_safe(text: str, *, err: bool = False, nl: bool = True) -> None:
    """``echo`` of text that may hold log content (newlines and tabs kept)."""
    echo(sanitize(text, lines=True), err=err, nl=nl)


def echo_bytes(data: bytes) -> None:
    """``click.echo(data)`` for bytes, as ``echo`` is for text: the text stream flushed,
    then the bytes and a newline to its binary buffer, flushed."""
    click = sys.modules.get("click")
    if click is not None:
        click.echo(data)
        return
    stream = sys.stdout
    stream.flush()
    stream.buffer.write(data + b"\n")
    stream.buffer.flush()


def plain_streams() -> bool:
    """Whether stdout and stderr are text streams ``echo`` writes to as click would
    without click: UTF-8 ``TextIOWrapper``s off Windows (click re-wraps an ASCII one and
    writes to the Windows console its own way). A quick path runs only on them."""
    return all(map(plain_text_stream, (sys.stdout, sys.stderr)))


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


@contextlib.contextmanager
def progress_bar(enabled: bool) -> Iterator[tuple[Any, Any]]:
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


def emit_json(objects: Iterable[Any], jq_filter: str | None) -> None:
    """Print one JSON document per line, or what ``jq_filter`` makes of each."""
    from cachediag.report.serialize import json_line  # C1 controls escaped, as all JSON

    if jq_filter is None:
        for obj in objects:
            echo(json_line(obj))
        return
    import jq  # only when asked: the binding is not needed otherwise

    try:
        program = jq.compile(jq_filter)
    except ValueError as exc:
        raise UsageError(f"--jq: {exc}") from exc
    try:
        for obj in objects:
            with _interrupt_kills():
                try:
                    results = program.input_value(obj).all()
                except ValueError as exc:
                    raise CachediagError(f"--jq: {exc}") from exc
            for value in results:
                # Like gh's --jq: strings print raw (but never an escape sequence from a
                # log), everything else as JSON.
                if isinstance(value, str):
                    echo(sanitize(value, lines=True))
                else:
                    echo(json_line(value))
    except KeyboardInterrupt:  # between two programs: ended as inside one
        _die_of_sigint()


@contextlib.contextmanager
def _interrupt_kills() -> Iterator[None]:
    """Ctrl-C ends the process at once while a jq program runs.

    The binding runs a program in C without giving the interpreter a chance to handle a
    signal (``def f: f; f`` never returns, and no thread can run meanwhile: it holds the
    GIL). So SIGINT gets its default action for that time: the process dies of it, as an
    interrupted program should (a shell sees status 130 and stops its loop), with what
    was printed already flushed and no traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals are the main thread's; other callers keep Python's handling
        return
    sys.stdout.flush()
    previous = signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        # None: a handler not set from Python; Python's own is then put back.
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)


def _die_of_sigint() -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    raise SystemExit(130)  # where a signal to itself does not end the process


def silence_stdout() -> None:
    """After a closed pipe (``| head -1``): stdout to /dev/null, so that Python's flush
    at exit does not complain again about the reader that went away."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if TYPE_CHECKING:

    class SafeConsole(Console):
        """A ``Console`` that sanitises the text of every segment it renders."""

else:

    def __getattr__(name: str) -> Any:
        # rich is loaded on the first use of SafeConsole, not with this module.
        if name != "SafeConsole":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return _safe_console_class()


@functools.cache
def _safe_console_class() -> type[Console]:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment

    class SafeConsole(Console):
        """A rich ``Console`` whose output never carries a control character or escape
        sequence that came from a log: the text of every segment passes through
        ``sanitize`` (rich's own styling is added after, so colours still work)."""

        def render(
            self, renderable: RenderableType, options: ConsoleOptions | None = None
        ) -> Iterable[Segment]:
            for segment in super().render(renderable, options):
                text = segment.text
                if segment.control or (text.isascii() and text.isprintable()) or text == "\n":
                    yield segment
                else:
                    yield Segment(sanitize(text, lines=True), segment.style, segment.control)

        def on_broken_pipe(self) -> None:
            """``cachediag analyze | head -1``: the reader has what it wanted; exit 0, as a
            closed pipe is not a failure of the command (rich's default exits 1)."""
            self.quiet = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(0)

    return SafeConsole


@dataclasses.dataclass(frozen=True, slots=True)
class Ending:
    """How a run that raised ends: its exit status and the ``Error:`` text it prints
    (sanitised; ``None``: nothing), the one rule for click's group and the quick paths."""

    status: int
    message: str | None = None
    usage: bool = False
    """A usage error: click prints the command's usage line before it."""
    aborted: bool = False
    """An interrupt or an EOF: an empty line, then ``Aborted!`` (click's ``main``)."""


def ending(exc: BaseException) -> Ending | None:
    """The end of a run that raised ``exc``; ``None`` for what is not ours to handle."""
    if isinstance(exc, BrokenPipeError):
        # The reader went away (``| head -1``): what it wanted was printed.
        silence_stdout()
        return Ending(0)
    if isinstance(exc, CachediagError):
        usage = isinstance(exc, UsageError)
        return Ending(2 if usage else 1, sanitize(str(exc), lines=True), usage)
    if isinstance(exc, EOFError | KeyboardInterrupt):
        return Ending(1, aborted=True)
    return None


def run_guarded(command: Callable[[], None]) -> int:
    """Run ``command`` without click; the exit status, after printing what click's
    ``main`` and the command group (``cli.Main``) print for the same ``ending``."""
    try:
        command()
    except BaseException as exc:
        end = ending(exc)
        if end is None:
            raise
        if end.aborted:
            echo(err=True)
            echo("Aborted!", err=True)
        elif end.message is not None:
            echo(f"Error: {end.message}", err=True)
        return end.status
    return 0
