"""The terminal side of every human-facing report: a rich ``Console`` whose output never
carries a control character or escape sequence that came from a log.

Tables, watch lines and notes show model names, agent ids, paths, causes and price
sources that other programs wrote. ``SafeConsole`` passes every piece of text rich is
about to print through ``cachediag.text.sanitize`` (rich's own styling is added after,
so colours still work); ``echo`` does the same for plain lines.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

import click
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from cachediag.text import sanitize


class SafeConsole(Console):
    """A ``Console`` that sanitises the text of every segment it renders."""

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


def echo(text: str, **kwargs: Any) -> None:
    """``click.echo`` of text that may hold log content (newlines and tabs kept)."""
    click.echo(sanitize(text, lines=True), **kwargs)
