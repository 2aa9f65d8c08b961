"""Where reading of a growing file stopped, and whether it can go on from there.

A cursor is a plain dict (the status line saves it as JSON): the file's identity
(``ino``, ``dev``), what was seen of it (``size``, ``mtime_ns``), the byte ``offset`` just
past the last complete line read, the ``lines`` before that offset, and a ``tail`` hash of
the bytes before the offset. A file that was truncated, replaced (new inode) or rewritten
before the offset cannot be resumed; a half-written last line is left for the next read.

Standard library only (``os``, ``zlib``): the status line's warm path imports this.
"""

from __future__ import annotations

import os
import zlib

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
    return {"ino": st.st_ino, "dev": st.st_dev, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def unchanged_since(saved: Any, path: str) -> bool:
    """True when ``path`` is exactly as the cursor ``saved`` last saw it."""
    sig = file_signature(path)
    if sig is None or not isinstance(saved, dict):
        return False
    return all(saved.get(k) == v for k, v in sig.items())


TAIL_BYTES = 64
"""Bytes before the saved offset whose hash must still match: catches a file rewritten
in place with the same inode and at least the same length."""


def tail_hash(fd: int, offset: int) -> str:
    """Two checksums of the bytes before ``offset`` (never the bytes: they are prompt text)."""
    n = min(TAIL_BYTES, offset)
    tail = os.pread(fd, n, offset - n)
    return f"{zlib.crc32(tail):08x}{zlib.adler32(tail):08x}"


def resumable(path: str, saved: Any) -> bool:
    """True when ``path`` still holds, unchanged, the bytes a cursor read up to its offset."""
    if not isinstance(saved, dict):
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        offset = saved.get("offset")
        return (
            isinstance(offset, int)
            and (st.st_ino, st.st_dev) == (saved.get("ino"), saved.get("dev"))
            and st.st_size >= offset
            and tail_hash(fd, offset) == saved.get("tail")
        )
    finally:
        os.close(fd)


def cursor(fd: int, st: os.stat_result, offset: int, read: int, end: int, lines: int) -> Any:
    """The cursor after reading ``read`` bytes from ``offset``, of which the first ``end``
    were complete lines (``lines`` counted up to there)."""
    return {
        "ino": st.st_ino,
        "dev": st.st_dev,
        # What was read, not what the file holds: a read that stopped short of the end
        # (a limit, or bytes written meanwhile) must not look up to date.
        "size": offset + read,
        "mtime_ns": st.st_mtime_ns,
        "offset": offset + end,
        "lines": lines,
        "tail": tail_hash(fd, offset + end),
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
