"""What the commands share: JSON output with ``--jq``, notes on skipped lines."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from cachediag.errors import CachediagError
from cachediag.model import LineIssue
from cachediag.text import sanitize

__all__ = [
    "EPOCH",
    "USD",
    "CachediagError",
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

MAX_LISTED_ISSUES = 5

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
    if jq_filter is None:
        for obj in objects:
            click.echo(json.dumps(obj, ensure_ascii=False))
        return
    import jq  # only when asked: the binding is not needed otherwise

    try:
        program = jq.compile(jq_filter)
    except ValueError as exc:
        raise click.UsageError(f"--jq: {exc}") from exc
    for obj in objects:
        try:
            results = program.input_value(obj).all()
        except ValueError as exc:
            raise CachediagError(f"--jq: {exc}") from exc
        for value in results:
            # Like gh's --jq: strings print raw (but never an escape sequence from a log),
            # everything else as JSON.
            if isinstance(value, str):
                click.echo(sanitize(value, lines=True))
            else:
                click.echo(json.dumps(value, ensure_ascii=False))


ECHO_BLOCK_CHARS = 1 << 20


def echo_lines(lines: Iterable[str]) -> None:
    """``click.echo`` of each line, in blocks of about ``ECHO_BLOCK_CHARS``: a write (and
    flush) per line is 10,000 of them for a history of 10,000 sessions. The bytes are the
    same: what click strips from text sent to a file never spans a newline."""
    block: list[str] = []
    size = 0
    for line in lines:
        block.append(line)
        size += len(line)
        if size >= ECHO_BLOCK_CHARS:
            click.echo("\n".join(block))
            block, size = [], 0
    if block:
        click.echo("\n".join(block))


def report_issues(issues: list[LineIssue]) -> None:
    """Say on stderr how many lines were skipped and where (never what they held)."""
    files = [i for i in issues if i.line == 0]
    lines = [i for i in issues if i.line != 0]
    for label, group in (("file(s)", files), ("line(s)", lines)):
        if not group:
            continue
        shown = "; ".join(
            f"{i.source}:{i.line}: {i.reason}" if i.line else f"{i.source}: {i.reason}"
            for i in group[:MAX_LISTED_ISSUES]
        )
        shown = sanitize(shown)
        extra = len(group) - MAX_LISTED_ISSUES
        more = f" (+{extra} more)" if extra > 0 else ""
        click.echo(f"cachediag: skipped {len(group)} {label}: {shown}{more}", err=True)


MAX_LISTED_UNREADABLE = 20


def report_unreadable(unreadable: list[LineIssue]) -> None:
    """Name on stderr each file or folder that could not be read, and why."""
    if not unreadable:
        return
    shown = "; ".join(f"{i.source}: {i.reason}" for i in unreadable[:MAX_LISTED_UNREADABLE])
    shown = sanitize(shown)  # a file name may hold control characters
    extra = len(unreadable) - MAX_LISTED_UNREADABLE
    more = f" (+{extra} more)" if extra > 0 else ""
    click.echo(f"cachediag: could not read {len(unreadable)} path(s): {shown}{more}", err=True)


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
    if errors:
        for message in errors[:-1]:
            click.echo(f"Error: {sanitize(message, lines=True)}", err=True)
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
