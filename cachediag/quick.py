"""``cachediag analyze --json PATH...`` without click, and what it shares with the command.

Scripts run ``analyze --json`` over and over; loading click and the options of every
command is a tenth of what such a run costs on a short history. So ``entry`` hands the
arguments here first. When they are only paths, the JSON output's flags, ``--now`` and
``--jobs`` (``analyze_args``), the run happens here as ``cli.analyze`` does it: the
same ``Run``, the same lines in the same order, the same notes, errors and exit status.
Anything else (help, another option, stdin, an odd value) goes to click, which reads and
checks it. The pieces of the JSON output live here; ``cli.analyze`` uses them too.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from cachediag.console import (
    Progress,
    echo_lines,
    emit_json,
    finish_reading,
    plain_streams,
    run_guarded,
)
from cachediag.errors import InputError

if TYPE_CHECKING:
    from cachediag.analysis.costs import PriceFn
    from cachediag.analysis.session_analysis import SessionAnalysis
    from cachediag.cli.window import Bound
    from cachediag.pipeline import Run


@dataclass(slots=True, frozen=True)
class Window:
    """``[since, until)`` in epoch seconds; either end may be open (``None``)."""

    since: float | None = None
    until: float | None = None

    def holds(self, at: float) -> bool:
        return (self.since is None or at >= self.since) and (self.until is None or at < self.until)

    @property
    def open(self) -> bool:
        return self.since is None and self.until is None


FIRST_USABLE_S = -62135510400.0
"""0001-01-02T00:00Z: from here to ``LAST_USABLE_S`` every instant is a date in every
zone (offsets stay within a day; ``datetime`` holds years 1 to 9999 only)."""
LAST_USABLE_S = 253402214400.0
"""9999-12-31T00:00Z."""


def resolve_window(since: Bound | None, until: Bound | None, now: float, zone: tzinfo) -> Window:
    """The window the two bounds describe; an empty or inverted one is a usage error.

    A bound past the dates every zone can show (``--since 0001-01-01`` in Tokyo is year 0
    in UTC) is held to the nearest one that can be: no log holds a time that far out, and
    the commands show and compare bounds in UTC and in the display zone."""
    start = None if since is None else _usable(since.resolve(now, zone, end=False))
    # "--until 2026-02-11" includes that whole day; "--until 2h" means two hours ago.
    stop = None if until is None else _usable(until.resolve(now, zone, end=True))
    if start is not None and stop is not None and stop <= start:
        import click  # only for this error: the quick JSON runs give no bounds

        raise click.UsageError(
            f"--until {until.text if until else ''} is not after --since "
            f"{since.text if since else ''}: the window is empty"
        )
    return Window(start, stop)


def _usable(at: float) -> float:
    return min(max(at, FIRST_USABLE_S), LAST_USABLE_S)


def local_zone() -> tzinfo:
    """This machine's zone, as ccusage defaults to: ``$TZ``, then ``/etc/localtime``."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    link = Path("/etc/localtime")
    try:
        target = str(link.resolve())
        if "zoneinfo/" in target:
            return ZoneInfo(target.split("zoneinfo/", 1)[1])
        from cachediag.safefiles import open_regular  # never waits on a FIFO

        with open_regular(str(link)) as f:
            return ZoneInfo.from_file(f, key="localtime")
    except (OSError, ZoneInfoNotFoundError, ValueError):
        pass
    # No zone database: the current offset, which is right outside DST changes.
    return datetime.now().astimezone().tzinfo or ZoneInfo("UTC")


def zone_or_local(zone: tzinfo | None) -> tzinfo:
    return local_zone() if zone is None else zone


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


def in_window(a: SessionAnalysis, window: Window) -> bool:
    return any(window.holds(e.record.at) for s in a.streams for e in s.entries)


def first_at(a: SessionAnalysis) -> float:
    """When the session started; sessions without requests sort last."""
    times = [s.entries[0].record.at for s in a.streams if s.entries]
    return min(times) if times else float("inf")


def table_progress() -> Progress | None:
    return Progress("reading sessions") if sys.stderr.isatty() else None


def capture_join(captures_dir: Path | None, no_captures: bool) -> Any:
    """The pipeline's ``enrich`` for ``--captures``/``--no-captures``, or ``None``; the
    index is built now, so worker processes inherit it instead of each scanning the
    folder."""
    if no_captures:
        return None
    if captures_dir is None:
        # The proxy's folder is looked for without importing the index (most runs have
        # no captures): as ``proxy.index.default_captures_dir`` does.
        from cachediag.proxy.logfiles import default_log_dir

        folder = default_log_dir()
        if not folder.is_dir():
            return None
    else:
        folder = captures_dir.expanduser()
        if not folder.is_dir():
            raise InputError(f"--captures {folder}: no such folder")
    from cachediag.proxy.index import CaptureJoin

    join = CaptureJoin(folder)
    join.load()
    return join


def json_lines(
    run: Run,
    paths: list[Path],
    stdin: IO[bytes] | None,
    now: float,
    render: SessionJson,
    jq_filter: str | None,
    progress: Progress | None,
) -> None:
    """Every session's JSON line (or what ``jq_filter`` makes of it), oldest first, once
    all are read; ``progress`` is closed before the output starts."""
    with TimeOrder() as spool:
        # Reading makes many small objects and next to no garbage cycles: the collector
        # looks at what start-up made only once (frozen), and at new objects less often
        # (10,000 small files: 3% of the time). Worker processes inherit both.
        threshold = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(threshold[0], 20_000), *threshold[1:])
        try:
            for at, line in run.rendered(paths, stdin, now, render):
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


@dataclass(slots=True)
class QuickArgs:
    """What ``analyze`` arguments the quick path takes say."""

    paths: list[Path]
    requests: bool = False
    now: float | None = None
    jobs: int | None = None
    no_captures: bool = False


QUICK_FLAGS = {"--json": "as_json", "--requests": "requests", "--no-captures": "no_captures"}
"""The flags the quick path reads, each by the name of the ``cli.analyze`` parameter it
sets; ``QUICK_VALUES`` the options with a value. tests/test_robustness.py holds both to
the click command's declarations, so that an option renamed or added there cannot be
read otherwise here."""
QUICK_VALUES = {"--now": "now", "--jobs": "jobs"}


def writes_json(as_json: bool, requests: bool, jq_filter: str | None) -> bool:
    """Whether ``analyze`` writes JSON (else tables): the one rule, for both ways in."""
    return as_json or requests or jq_filter is not None


EPOCH_MAX = 1e11
"""``--now``'s bound, as ``cli.common.EPOCH`` has it."""


def analyze_args(args: list[str]) -> QuickArgs | None:
    """What ``analyze`` arguments say when they are only paths (one at least), the flags
    of ``QUICK_FLAGS`` (one of them making the output JSON: ``--json``, ``--requests``),
    ``--now EPOCH`` and ``--jobs N``, in any order, as click reads them (the last of a
    repeated option counts); ``None`` for anything else (tables among them), and for a
    value click might read otherwise.
    A path that exists and cannot be read is left to click, which refuses it."""
    taken = QuickArgs([])
    as_json = False
    given = iter(args)
    for arg in given:
        if (name := QUICK_FLAGS.get(arg)) is not None:
            if name == "as_json":
                as_json = True
            else:
                setattr(taken, name, True)
        elif (name := QUICK_VALUES.get(arg)) == "jobs":
            taken.jobs = plain_count(next(given, ""), 1)
            if taken.jobs is None:
                return None
        elif name == "now":
            taken.now = plain_float(next(given, ""))
            if taken.now is None or not 0 <= taken.now <= EPOCH_MAX:
                return None
        elif not add_path(arg, taken.paths):
            return None
    # Tables (no flag of the JSON output given) need click's command and rich.
    json_out = writes_json(as_json, taken.requests, None)
    return taken if json_out and paths_click_takes(taken.paths) else None


def plain_count(value: str, low: int) -> int | None:
    """``value`` as click's ``IntRange(min=low)`` reads plain digits; ``None`` for a form
    left to click (a sign, leading zeros, underscores, a huge number) or one below."""
    if not (value.isascii() and value.isdigit() and len(value) < 7):
        return None
    if value[0] == "0" and value != "0":
        return None
    number = int(value)
    return number if number >= low else None


def plain_float(value: str) -> float | None:
    """``value`` as click's ``float`` reads it (what ``float()`` takes), else ``None``."""
    try:
        return float(value)
    except ValueError:
        return None


def add_path(arg: str, paths: list[Path]) -> bool:
    """Take ``arg`` as a path when it is one to click (not an option, not stdin's ``-``)."""
    if not arg or arg.startswith("-"):
        return False
    paths.append(Path(arg))
    return True


def paths_click_takes(paths: list[Path]) -> bool:
    """At least one path, and none that click would refuse: it refuses a path that exists
    and cannot be read (one that does not exist is the pipeline's to report)."""
    return bool(paths) and all(map(_readable_or_absent, paths))


def _readable_or_absent(path: Path) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return True
    return os.access(path, os.R_OK)


def analyze(args: QuickArgs) -> None:
    """``cli.analyze.analyze`` for the arguments ``analyze_args`` takes."""
    from cachediag.pipeline import Run

    clock = time.time() if args.now is None else args.now
    run = Run(jobs=args.jobs, enrich=capture_join(None, args.no_captures))
    progress = table_progress()
    run.on_progress = progress.update if progress else None
    render = SessionJson(args.requests, None)
    json_lines(run, args.paths, None, clock, render, None, progress)
    finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)


def main(args: list[str]) -> None:
    """Run ``cachediag ARGS`` here and exit when click is not needed for them; return
    (having done nothing) when it is."""
    if args[:1] != ["analyze"]:
        return
    taken = analyze_args(args[1:]) if plain_streams() else None
    if taken is None:
        return
    sys.exit(run_guarded(lambda: analyze(taken)))
