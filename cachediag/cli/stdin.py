"""Is a log piped in? stdin as the commands that take logs see it.

A shell tool, an ssh session or a CI runner hands a command a pipe that nobody writes
to, and cron hands it an empty one. Neither is a log: an empty pipe (or empty file)
means "nothing piped" and the history is read instead; a pipe that stays silent gets a
one-line hint on stderr after a second, and is still read when its data comes.
"""

from __future__ import annotations

import io
import os
import select
import stat
import sys
from typing import IO

import click

HINT_AFTER_S = 1.0
FIRST_READ = 1 << 16
WHITESPACE_BOUND = 1 << 20


class _Prefixed(io.RawIOBase):
    """The bytes already read from a pipe, then the rest of the pipe."""

    def __init__(self, first: bytes, fd: int) -> None:
        self._first = memoryview(first)
        self._fd = fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        if self._first:
            n = min(len(view), len(self._first))
            view[:n] = self._first[:n]
            self._first = self._first[n:]
            return n
        data = os.read(self._fd, len(view))
        view[: len(data)] = data
        return len(data)


def _fd_mode(stream: IO[bytes]) -> tuple[int, int] | None:
    try:
        fd = stream.fileno()
        return fd, os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def piped_log(command: str, stream: IO[bytes] | None = None) -> IO[bytes] | None:
    """stdin when a log is piped or redirected in; ``None`` when nothing is: a terminal,
    ``/dev/null``, an empty file or a pipe closed without data. ``command`` names the
    command in the hint a silent pipe gets."""
    stream = sys.stdin.buffer if stream is None else stream
    found = _fd_mode(stream)
    if found is None:
        return None
    fd, mode = found
    if stat.S_ISREG(mode):
        try:
            at = os.lseek(fd, 0, os.SEEK_CUR)
            left = os.fstat(fd).st_size - at
            blank = 0 < left <= WHITESPACE_BOUND and not os.pread(fd, left, at).strip()
        except OSError:
            return stream
        return stream if left > 0 and not blank else None
    if not stat.S_ISFIFO(mode) and not stat.S_ISSOCK(mode):
        return None
    try:
        ready, _, _ = select.select([fd], [], [], HINT_AFTER_S)
    except (OSError, ValueError):
        ready = [fd]
    if not ready:
        click.echo(
            f"cachediag: waiting for a log on stdin; to read files instead, pass a path "
            f"(cachediag {command} ~/.claude/projects) or run with </dev/null",
            err=True,
        )
    first = os.read(fd, FIRST_READ)
    # ``echo '' |`` or a script printing a stray newline sends no log either: read on
    # while only whitespace came (kept, so line numbers stay right), up to a bound.
    while first and not first.strip() and len(first) < WHITESPACE_BOUND:
        more = os.read(fd, FIRST_READ)
        if not more:
            return None
        first += more
    if not first:
        return None
    return io.BufferedReader(_Prefixed(first, fd))
