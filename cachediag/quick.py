"""``cachediag analyze --json PATH...`` without click: argument recognition and dispatch.

Scripts run ``analyze --json`` over and over, and on a short history loading click and
every command's options is a visible part of each run (docs/benchmarks.md has today's
figure). So ``entry`` hands the arguments here first. When they are only paths and the
options of ``commands.options.ANALYZE`` (``analyze_args``), the run happens here as
``cli.analyze`` does it, from the same pieces (``commands.analyze``): the same lines in
the same order, the same notes, errors and exit status (``console.run_guarded``).
Anything else (help, another option, stdin, an odd value) goes to click, which reads and
checks it.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cachediag.commands.options import ANALYZE, FLAG, INT, Option, by_flag
from cachediag.console import plain_streams, run_guarded


@dataclass(slots=True)
class QuickArgs:
    """What ``analyze`` arguments the quick path takes say."""

    paths: list[Path]
    requests: bool = False
    now: float | None = None
    jobs: int | None = None
    no_captures: bool = False


QUICK_FLAGS = {o.flag: o.name for o in ANALYZE if o.kind == FLAG}
"""The flags the quick path reads, each by the name of the ``cli.analyze`` parameter it
sets; ``QUICK_VALUES`` the options with a value. tests/test_robustness.py holds both to
the click command's declarations, so that an option renamed or added there cannot be
read otherwise here."""
QUICK_VALUES = {o.flag: o.name for o in ANALYZE if o.kind != FLAG}
_ANALYZE = by_flag(ANALYZE)


def writes_json(as_json: bool, requests: bool, jq_filter: str | None) -> bool:
    """Whether ``analyze`` writes JSON (else tables): the one rule, for both ways in."""
    return as_json or requests or jq_filter is not None


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
        option = _ANALYZE.get(arg)
        if option is None:
            if not add_path(arg, taken.paths):
                return None
        elif option.kind == FLAG:
            if option.name == "as_json":
                as_json = True
            else:
                setattr(taken, option.name, True)
        elif (value := read_value(option, next(given, ""))) is None:
            return None
        else:
            setattr(taken, option.name, value)
    # Tables (no flag of the JSON output given) need click's command and rich.
    json_out = writes_json(as_json, taken.requests, None)
    return taken if json_out and paths_click_takes(taken.paths) else None


def read_value(option: Option, text: str) -> float | None:
    """``text`` as click reads the value of ``option`` (a whole number or a number in its
    range); ``None`` for a value out of range or a form left to click."""
    if option.kind == INT:
        low = 0 if option.low is None else int(option.low)
        number: float | None = plain_count(text, low)
    else:
        number = plain_float(text)
    return number if number is not None and option.holds(number) else None


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
    from cachediag.commands.analyze import SessionJson, json_lines, table_progress
    from cachediag.commands.captures import capture_join
    from cachediag.console import finish_reading
    from cachediag.pipeline import Run

    clock = time.time() if args.now is None else args.now
    run = Run(jobs=args.jobs, enrich=capture_join(None, args.no_captures))
    progress = table_progress()
    run.on_progress = progress.update if progress else None
    render = SessionJson(args.requests, None)
    json_lines(run, args.paths, None, clock, render, None, progress, None)
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
