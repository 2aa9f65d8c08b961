"""What went wrong in a run: one line each in ``statusline.log`` under the cache dir, and
kept for the run, so that a person testing by hand (a terminal, ``--check``) hears why
the line fell back instead of finding out from the log.

Claude Code shows nothing the status line writes on stderr and blanks a line that
errors, so the line itself never carries a reason: stdout stays one line. Nothing here
ever holds stdin content or a line of a log: messages are ours (exception names, file
positions, paths the user gave).
"""

from __future__ import annotations

import os
import time

from cachediag.paths import cache_dir
from cachediag.safefiles import open_private, private_dir
from cachediag.statusline.render import UsageError
from cachediag.statusline.state import BadState

MAX_LOG_BYTES = 256 * 1024


class Heard:
    """What this run reported: ``problems`` (a fallback, a file not read, a state not
    used or not saved), ``notes`` (housekeeping, recomputes: normal work) and ``facts``
    for ``--check`` (which state file, how it was brought up to date)."""

    __slots__ = ("facts", "notes", "problems")

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.facts: dict[str, object] = {}


heard = Heard()
"""This process's reports; ``fast.run`` restarts it for each run."""


def log_failure(message: str, *, problem: bool = True) -> None:
    """Append to ``<cache dir>/statusline.log`` and to this run's reports; never raises."""
    (heard.problems if problem else heard.notes).append(message)
    try:
        folder = cache_dir()
        private_dir(folder, folder)
        path = os.path.join(folder, "statusline.log")
        try:
            if os.lstat(path).st_size > MAX_LOG_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        with os.fdopen(fd, "a", encoding="utf-8", errors="replace") as fp:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            fp.write(f"{stamp} pid={os.getpid()} {message}\n")
    except Exception:  # the log is best effort; the line must still print
        pass


def note(message: str) -> None:
    """Logged like a failure, but normal work (a recompute, housekeeping)."""
    log_failure(message, problem=False)


def describe(exc: BaseException) -> str:
    """The exception's class and where it happened; its message only when it is ours: a
    ValueError from parsing log values may quote them."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(frames))
    text = str(exc)[:200] if isinstance(exc, UsageError | BadState | OSError) else ""
    return f"{type(exc).__name__}: {text} at {where}"
