"""The analyze run's JSON output: each session's line, built where it was analysed, put
in the tables' order, printed with or without ``--jq``. ``cli.analyze`` and the quick path
(``quick``) both write it from here.
"""

from __future__ import annotations

import functools
import gc
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from cachediag.commands.window import Window, first_at, in_window
from cachediag.console import Progress, echo_lines, emit_json

if TYPE_CHECKING:
    from cachediag.analysis.costs import PriceFn
    from cachediag.analysis.session_analysis import SessionAnalysis
    from cachediag.pipeline import Run


def writes_json(as_json: bool, requests: bool, jq_filter: str | None) -> bool:
    """Whether ``analyze`` writes JSON (else tables): the one rule, for both ways in."""
    return as_json or requests or jq_filter is not None


@dataclass(slots=True, frozen=True)
class SessionJson:
    """One session -> its JSON line; built in the worker that analysed it."""

    requests: bool
    pricing_file: Path | None
    window: Window = field(default_factory=Window)

    def __call__(self, a: SessionAnalysis) -> tuple[float, str]:
        """When the session started, and its JSON line (empty for a session with no
        request in the window)."""
        if not self.window.open and not in_window(a, self.window):
            return first_at(a), ""
        price_function, pricing_source, session_dict, json_line = _renderers()
        obj = session_dict(
            a,
            requests=self.requests,
            price_of=price_function(self.pricing_file),
            pricing_source=pricing_source(self.pricing_file),
        )
        return first_at(a), json_line(obj)


_Renderers = tuple[
    Callable[[Path | None], "PriceFn"],
    Callable[[Path | None], str],
    Callable[..., dict[str, Any]],
    Callable[[object], str],
]


@functools.cache
def _renderers() -> _Renderers:
    """What ``SessionJson`` calls, imported on its first session (this module is imported
    by commands that render none), not looked up again for each of 10,000 sessions."""
    from cachediag.pricing import price_function, pricing_source
    from cachediag.report.serialize import json_line, session_dict

    return price_function, pricing_source, session_dict, json_line


class TimeOrder:
    """JSON lines put in the tables' order: by the session's start, then as read.

    The lines wait in memory up to ``MEMORY_CHARS``; past that (with ``--requests`` a
    long history makes hundreds of MB of them) they all go to a private temporary file,
    and only their start times and places are kept in memory. Use it as a context
    manager: the file is closed (and so removed) at the end."""

    MEMORY_CHARS = 16 << 20

    def __init__(self) -> None:
        self._held: list[tuple[float, int, str]] = []
        self._held_chars = 0
        self._file: IO[bytes] | None = None
        self._places: list[tuple[float, int, int, int]] = []

    def __enter__(self) -> TimeOrder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._file is not None:
            self._file.close()

    def add(self, at: float, line: str) -> None:
        if not line:
            return
        if self._file is None:
            self._held.append((at, len(self._held), line))
            self._held_chars += len(line)
            if self._held_chars > self.MEMORY_CHARS:
                self._spill()
            return
        data = line.encode()
        self._places.append((at, len(self._places), self._file.tell(), len(data)))
        self._file.write(data)

    def _spill(self) -> None:
        import tempfile  # only for a large output: most runs need no temporary file

        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by __exit__)
        held, self._held = self._held, []
        for at, _, line in held:
            self.add(at, line)

    def lines(self) -> Iterator[str]:
        if self._file is None:
            for _, _, line in sorted(self._held):
                yield line
            return
        for _, _, offset, size in sorted(self._places):
            self._file.seek(offset)
            yield self._file.read(size).decode()


def table_progress() -> Progress | None:
    return Progress("reading sessions") if sys.stderr.isatty() else None


def json_lines(
    run: Run,
    paths: list[Path],
    stdin: IO[bytes] | None,
    now: float,
    render: SessionJson,
    jq_filter: str | None,
    progress: Progress | None,
    agent: str | None = "claude",
) -> None:
    """Every session's JSON line (or what ``jq_filter`` makes of it), oldest first, once
    all are read; ``progress`` is closed before the output starts. ``agent`` is the
    ``--agent`` choice: each line starts with ``"agent"`` when it says so
    (``commands.agents.names_agents``)."""
    from cachediag.commands.agents import names_agents, tag_line

    with TimeOrder() as spool:
        # Reading makes many small objects and next to no garbage cycles: the collector
        # looks at what start-up made only once (frozen), and at new objects less often
        # (a measurable share of a run over many small files). Worker processes inherit both.
        threshold = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(threshold[0], 20_000), *threshold[1:])
        try:
            for whose, (at, line) in run.tagged(paths, stdin, now, render):
                if names_agents(agent, run.agents_found) and line:
                    line = tag_line(whose, line)
                spool.add(at, line)
        finally:
            gc.set_threshold(*threshold)
            gc.unfreeze()
        if progress:
            progress.close()
        if jq_filter is None:
            echo_lines(spool.lines())
        else:
            emit_json(map(json.loads, spool.lines()), jq_filter)
