"""What the commands share: JSON output with ``--jq``, notes on skipped lines."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import click

from cachediag.errors import CachediagError
from cachediag.output import (
    MAX_LISTED_ISSUES,
    MAX_LISTED_UNREADABLE,
    Progress,
    echo_lines,
    finish_reading,
    report_issues,
    report_unreadable,
)
from cachediag.text import sanitize

__all__ = [
    "EPOCH",
    "MAX_LISTED_ISSUES",
    "MAX_LISTED_UNREADABLE",
    "USD",
    "CachediagError",
    "Progress",
    "echo_lines",
    "emit_json",
    "finish_reading",
    "jq_option",
    "pricing_option",
    "report_issues",
    "report_unreadable",
]


class FiniteFloat(click.ParamType):  # type: ignore[type-arg]
    """A number within bounds; NaN and infinities are usage errors (click's FloatRange
    lets NaN through: every comparison with it is false)."""

    def __init__(self, name: str, low: float, high: float) -> None:
        self.name = name
        self.low, self.high = low, high

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not self.low <= number <= self.high:
            self.fail(f"{value!r} is not between {self.low:g} and {self.high:g}", param, ctx)
        return number


EPOCH = FiniteFloat("epoch", 0, 1e11)
"""Unix seconds up to the year 5138: beyond that no date library can show it."""
USD = FiniteFloat("usd", 0, 1e12)

jq_option = click.option(
    "--jq",
    "jq_filter",
    metavar="FILTER",
    help="Apply a jq program to the JSON object (implies --json); strings print raw.",
)
"""``--jq`` of the commands whose JSON is one object."""

pricing_option = click.option(
    "--pricing",
    "pricing_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Price file: LiteLLM's JSON or cachediag's own (docs/audit.md).",
)


def emit_json(objects: Iterable[Any], jq_filter: str | None) -> None:
    """Print one JSON document per line, or what ``jq_filter`` makes of each."""
    from cachediag.report.serialize import json_line  # C1 controls escaped, as all JSON

    if jq_filter is None:
        for obj in objects:
            click.echo(json_line(obj))
        return
    import jq  # only when asked: the binding is not needed otherwise

    try:
        program = jq.compile(jq_filter)
    except ValueError as exc:
        raise click.UsageError(f"--jq: {exc}") from exc
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
                    click.echo(sanitize(value, lines=True))
                else:
                    click.echo(json_line(value))
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
