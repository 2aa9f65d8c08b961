"""The history's spend read beside the cache pass, in a child process, when both read
a transcript whole.

A first run on a session (no state yet) with ``{today_cost}`` or the block's fields
reads the transcript twice: the cache pass (``refresh``: reader and ledger from byte 0)
and the history index's usage rows (``spend``: every transcript of the config folder).
The two share nothing but the files, so as the cache pass starts, a forked child
computes the spend as ``fast._add_spend`` would and saves it (the index and its
one-line summary); the parent waits for it after its own pass, and its ``spend_view``
is then answered by that summary. On two cores a cold ``--preset full`` costs the
longer of the two reads instead of their sum; the work and its results are the same.
Not for an append or the session's cost alone: the cache pass is then short, and a
child importing what the parent also imports costs more than it overlaps (measured:
appended 171 -> 197 ms wall, 167 -> 236 ms CPU), and the session's check is built a
50 ms slice at a time that a child would spend on its imports.

Not used: on one core (nothing to gain), in a process that is not the status line's own
(``main`` enables it: the tests call ``run`` inside pytest, which must not fork), where
``os.fork`` is missing, or with ``CACHEDIAG_STATUSLINE_AHEAD=0``. A child that fails,
or is still running shortly after the deadline (it stops reading at the deadline
itself; one waiting on the index's lock is then killed: the index is replaced whole, so
stopping it anywhere leaves it consistent), leaves the parent to do the work itself,
as without it; the child dies with the parent (Linux: ``PR_SET_PDEATHSIG``). It
prints nothing and never runs ``atexit`` (``os._exit``); prices it looked up are saved
before it goes.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from collections.abc import Callable

ENV = "CACHEDIAG_STATUSLINE_AHEAD"
GRACE_S = 0.1
"""How long past the deadline the child may take to save what it read (the budget keeps
``1 - READ_SHARE`` of itself for saving and printing)."""
POLL_S = 0.002
"""How often the parent looks whether the child is done (a few wake-ups per run)."""

enabled = False
"""Set by ``fast.main``: only the status line's own process forks."""


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def usable() -> bool:
    return enabled and hasattr(os, "fork") and os.environ.get(ENV) != "0" and _cores() > 1


class Ahead:
    """A child computing ``work()``: ``start`` forks it, ``finish`` waits for it."""

    def __init__(self, work: Callable[[], object]) -> None:
        self._work = work
        self._pid: int | None = None

    def start(self) -> bool:
        """Fork the child; False (nothing started) where it is not ``usable``."""
        if not usable():
            return False
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            return False  # no process to spare: the parent reads after its pass
        if pid == 0:  # the child: the work, then out without a trace
            code = 1
            try:
                _die_with(parent)
                self._work()
                code = 0
            finally:
                _flush_prices()
                os._exit(code)
        self._pid = pid
        return True

    def finish(self, deadline: float | None) -> bool:
        """Wait for the child until ``deadline`` (``time.monotonic``) and ``GRACE_S``
        more (its own reading stops at the deadline, then it saves); True when it ended
        well. One still running then (waiting on the index's lock) is killed."""
        pid, self._pid = self._pid, None
        if pid is None:
            return False
        if deadline is not None:
            deadline += GRACE_S
        while True:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return False
            if done:
                return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            if deadline is not None and time.monotonic() > deadline:
                _kill(pid)
                return False
            time.sleep(POLL_S)


def _die_with(parent: int) -> None:
    """Linux: the child is killed if the status line is (Claude Code stops a slow one),
    rather than read on alone."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, 9)  # SIGKILL
    except (OSError, AttributeError, ImportError):  # not Linux: the deadline still ends it
        return
    if os.getppid() != parent:  # the parent went before the call above took effect
        os._exit(1)


_PR_SET_PDEATHSIG = 1


def _kill(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _flush_prices() -> None:
    """Save the prices the child looked up (``atexit``, which would, does not run)."""
    import sys

    disk = sys.modules.get("cachediag.pricing.disk")
    if disk is not None:
        from contextlib import suppress

        with suppress(Exception):  # a cache not saved costs only speed
            disk.DISK.save()
