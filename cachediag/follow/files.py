"""Where reading of a growing file stopped, and whether it can go on from there.

A cursor is a plain dict (the status line saves it as JSON): the file's identity
(``ino``, ``dev``), what was read of it (``size``, ``mtime_ns``, ``ctime_ns``), what the
file was when the read ended (``seen``: size, mtime, ctime), the byte ``offset`` just past
the last complete line read, the ``lines`` before that offset, a ``tail`` hash of the
bytes just before the offset, a ``sample`` hash of blocks spread over everything before
it, and ``skip`` when the offset is inside a line longer than ``MAX_LINE_BYTES`` that is
being skipped.

A file cannot be resumed when it was truncated (shorter than the offset), replaced (new
inode), rewritten at the same size (its size is what it was, its mtime or ctime is not:
an append always makes a file longer), or rewritten and grown (the tail or a sampled
block differs). What this cannot see: bytes changed in place, between sampled blocks,
without changing the length, in a file that also grew since the last read (that would
take re-reading everything read before, on every run). A half-written last line is
left for the next read.

Standard library only (``os``, ``zlib``): the status line's warm path imports this.
"""

from __future__ import annotations

import os
import zlib
from stat import S_ISREG

from cachediag.safefiles import NONBLOCK, UnsafeFile

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from collections.abc import Iterator
    from typing import Any


def file_signature(path: str) -> dict[str, int] | None:
    """What tells a file unchanged since the last read, or ``None`` when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return {
        "ino": st.st_ino,
        "dev": st.st_dev,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
    }


def unchanged_since(saved: Any, path: str) -> bool:
    """True when ``path`` is exactly as the cursor ``saved`` last saw it."""
    sig = file_signature(path)
    if sig is None or not isinstance(saved, dict):
        return False
    return all(saved.get(k) == v for k, v in sig.items())


TAIL_BYTES = 64
"""Bytes before the saved offset whose hash must still match: catches a file rewritten
in place with the same inode and at least the same length."""


SAMPLE_BLOCKS = 16
SAMPLE_BYTES = 512
"""Blocks hashed at spread positions before the offset (8 KiB read per check): a
rewrite that touches any of them, or that shifts bytes (an insertion or a removal), is
seen even when the file also grew."""


def tail_hash(fd: int, offset: int) -> str:
    """Two checksums of the bytes before ``offset`` (never the bytes: they are prompt text)."""
    n = min(TAIL_BYTES, offset)
    tail = os.pread(fd, n, offset - n)
    return f"{zlib.crc32(tail):08x}{zlib.adler32(tail):08x}"


def sample_hash(fd: int, offset: int) -> str:
    """A checksum of ``SAMPLE_BLOCKS`` blocks spread evenly over ``[0, offset)``, the
    first one at 0 (where a restored or re-serialised file differs first)."""
    crc = 0
    if offset > 0:
        step = max(SAMPLE_BYTES, offset // SAMPLE_BLOCKS)
        for start in range(0, offset, step):
            crc = zlib.crc32(os.pread(fd, min(SAMPLE_BYTES, offset - start), start), crc)
    return f"{crc:08x}"


def open_regular_fd(path: str) -> int:
    """A read-only descriptor of ``path`` if it is a regular file (a FIFO moved over a
    transcript must not block the reader); raises ``OSError`` otherwise."""
    fd = os.open(path, os.O_RDONLY | NONBLOCK)
    try:
        if not S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFile(f"{path}: not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def change_of(path: str, saved: Any) -> str | None:
    """``None`` when ``path`` still holds, unchanged, the bytes a cursor read up to its
    offset; otherwise why not: ``gone``, ``replaced``, ``truncated`` or ``rewritten``."""
    if not isinstance(saved, dict):
        return "rewritten"
    try:
        fd = open_regular_fd(path)
    except OSError:
        return "gone"
    try:
        st = os.fstat(fd)
        offset = saved.get("offset")
        seen = saved.get("seen")
        if (st.st_ino, st.st_dev) != (saved.get("ino"), saved.get("dev")):
            return "replaced"
        if not isinstance(offset, int) or offset < 0 or st.st_size < offset:
            return "truncated"
        if (
            isinstance(seen, list)
            and len(seen) == 3
            and st.st_size == seen[0]
            and [st.st_mtime_ns, st.st_ctime_ns] != seen[1:]
        ):
            return "rewritten"  # written to without growing: not an append
        if tail_hash(fd, offset) != saved.get("tail") or sample_hash(fd, offset) != saved.get(
            "sample"
        ):
            return "rewritten"
        return None
    finally:
        os.close(fd)


def resumable(path: str, saved: Any) -> bool:
    """True when ``path`` still holds, unchanged, the bytes a cursor read up to its offset."""
    return change_of(path, saved) is None


def cursor(
    fd: int,
    st: os.stat_result,
    offset: int,
    read: int,
    end: int,
    lines: int,
    *,
    skip: bool = False,
    needles: list[str] | None = None,
) -> Any:
    """The cursor after reading ``read`` bytes from ``offset``, of which the first ``end``
    were complete lines (``lines`` counted up to there); ``skip`` when the read ended
    inside an overlong line; ``needles``: which lines of the file can matter, decided
    from its first lines (``follow.needles``)."""
    after = os.fstat(fd)
    return {
        "ino": st.st_ino,
        "dev": st.st_dev,
        # What was read, not what the file holds: a read that stopped short of the end
        # (a limit, or bytes written meanwhile) must not look up to date.
        "size": offset + read,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "seen": [after.st_size, after.st_mtime_ns, after.st_ctime_ns],
        "offset": offset + end,
        "lines": lines,
        "tail": tail_hash(fd, offset + end),
        "sample": sample_hash(fd, offset + end),
        "skip": skip,
        **({} if needles is None else {"needles": needles}),
    }


def jsonl_below(root: str) -> Iterator[str]:
    """Every ``*.jsonl`` file below ``root`` (links not followed; unreadable folders skipped)."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.name.endswith(".jsonl") and entry.is_file():
                    yield entry.path
            except OSError:
                continue
