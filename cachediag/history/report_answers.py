"""The usage reports' answers (``history.answers``) as ``commands.usage_quick`` keeps and
replays them: which reports, which files each depends on, what it printed.

Kept: ``daily``, ``weekly``, ``monthly`` and ``session`` as the quick path runs them (no
window, zone or price option: ``--json``, ``--offline`` and paths), whose output depends
on the files and the zone only. ``blocks`` is not: its active block and time left move
with the clock. The files: each input path (none given: the Claude Code history and each
other agent's home, ``ingest.agents``, whether there or not), the zone's (``$TZ`` and
``/etc/localtime``), cachediag's own code and the price data's package. What the run
printed on stderr (skipped lines, unreadable files) is replayed with its output; a run
that ended in an error is not kept.
"""

from __future__ import annotations

import os
import sys

from cachediag.history import answers
from cachediag.text import plain_text_stream

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the replay, which loads nothing else, milliseconds
    from collections.abc import Callable
    from typing import Any

    from cachediag.commands.usage import UsageOptions

KEPT = ("daily", "weekly", "monthly", "session")
_CODE = frozenset({"__pycache__"})


def replay(args: list[str], root: str | None = None) -> bool:
    """Print the answer kept for ``cachediag ARGS`` and say so; ``False`` (having printed
    nothing) when there is none for the files as they are now."""
    if (
        not args
        or args[0] not in KEPT
        or not plain_text_stream(sys.stdout)
        or not plain_text_stream(sys.stderr)
    ):
        return False
    import cachediag

    try:
        key = answers.answer_key(args, cachediag.__version__)
    except OSError:  # no working folder: relative paths mean nothing now
        return False
    found = answers.stored_answer(key, root)
    if found is None:
        return False
    out, err = found
    for stream, text in ((sys.stderr, err), (sys.stdout, out)):  # in the order run
        if text:
            stream.write(text)
            stream.flush()
    return True


def keeping(
    args: list[str], options: UsageOptions, run: Callable[[], str], root: str | None = None
) -> str:
    """``run()``'s output (the report's text), kept under ``args`` with the snapshot of
    its inputs taken first, when this report can be kept. Nothing is kept when the run
    raises, or when the cache folder cannot be used (the report stands on its own)."""
    if options.report not in KEPT or not options.index:
        return run()
    import time

    import cachediag

    try:
        key = answers.answer_key(args, cachediag.__version__)
    except OSError:
        return run()
    taken = time.time_ns()
    snap = answers.snapshot(inputs_of(options))
    snap.update((p, answers.signature(p)) for p in _sidecars(options))
    too_recent = answers.racy(snap, taken)
    # The code is checked for changes but not for racy times: an install or an edit does
    # not write a file twice in one clock tick, and a checkout being worked on would
    # otherwise keep nothing.
    snap.update(answers.snapshot(_code_folders(), _CODE))
    stderr = sys.stderr
    err: list[str] = []
    sys.stderr = _Tee(stderr, err)
    try:
        out = run()
    finally:
        sys.stderr = stderr
    text = out + "\n"  # as ``console.echo`` prints it
    if not too_recent and "\x1b" not in text:  # escape codes: kept or not by the terminal
        from contextlib import suppress

        # Not kept: a folder not usable (rows_for said so already), or a name that is not
        # UTF-8, which JSON cannot hold; the report stands on its own.
        with suppress(OSError, ValueError, TypeError):
            answers.save_answer(key, snap, text, "".join(err), root)
    return out


def inputs_of(options: UsageOptions) -> list[str]:
    """Every path whose change may change the report: the inputs and, with none given,
    every place a history may appear; the zone's files."""
    from cachediag.commands.agents import agents_for
    from cachediag.ingest.agents import AGENTS
    from cachediag.ingest.discover import claude_projects_dirs
    from cachediag.pipeline import default_paths

    if options.paths:
        places = [str(p) for p in options.paths]
    else:  # what rows_for reads, and every place another file may turn up
        places = [str(p) for p in default_paths(agents_for(options.agent))]
        places += [str(p) for p in claude_projects_dirs()]
        for agent in AGENTS.values():
            parts = agent.pattern.split("/")
            places.append(os.path.join(agent.home(), *parts[: _first_glob(parts)]))
    places += _zone_files()
    return list(dict.fromkeys(places))


def _sidecars(options: UsageOptions) -> list[str]:
    """The files SQLite keeps beside a database named as an input (opencode's): what a
    reader sees of it may be in them. Inside a folder signed whole, they are signed with
    the rest of it."""
    named = [str(p) for p in options.paths]
    return [f"{p}{end}" for p in named if os.path.isfile(p) for end in _SQLITE_ENDS]


_SQLITE_ENDS = ("-wal", "-shm", "-journal")


def _first_glob(parts: list[str]) -> int:
    return next((i for i, p in enumerate(parts) if set(p) & set("*?[")), len(parts))


def _zone_files() -> list[str]:
    found = ["/etc/localtime"]
    name = os.environ.get("TZ", "").lstrip(":")
    if name and not os.path.isabs(name) and ".." not in name:
        from zoneinfo import TZPATH

        found += [os.path.join(base, name) for base in TZPATH]
    return found


def _code_folders() -> list[str]:
    """cachediag's own files, the price data's package (its prices are the report's) and
    the zone database's version (its ``__init__``: 600 zone files are not worth a stat
    each on every run, and an upgrade replaces that file too)."""
    from importlib.util import find_spec

    import cachediag

    found = [os.path.dirname(os.path.abspath(cachediag.__file__))]
    for name, part in (("genai_prices", ""), ("tzdata", "__init__.py")):
        spec = find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            found += [os.path.join(p, part) if part else p for p in spec.submodule_search_locations]
    return found


class _Tee:
    """A text stream that keeps a copy of what is written through it."""

    def __init__(self, stream: Any, written: list[str]) -> None:
        self._stream = stream
        self._written = written

    def write(self, text: str) -> int:
        self._written.append(text)
        return int(self._stream.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
