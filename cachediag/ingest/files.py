"""How every file a reader finds is opened: regular files only, never waiting on one.

A folder of logs may hold anything: a FIFO named ``x.jsonl`` among the sessions, a
socket or a device where an OpenTelemetry body should be. Opening a FIFO for reading
waits for a writer, forever; reading a device never ends. Each file found (by the walk,
by an index, beside another file) is opened here, non-blocking, and checked on its
descriptor before a byte is read (``safefiles.open_regular``): anything but a regular
file is refused with ``UnsafeFile`` (an ``OSError``) and reported as not read, the rest
of the run goes on. A checked name (``Path.is_file``) would not do: the entry can be
replaced between the check and the open.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO, cast

from cachediag.safefiles import UnsafeFile, open_regular


def open_found(path: Path | str, *, follow: bool = True) -> IO[bytes]:
    """``path`` opened for reading if it is a regular file, else ``UnsafeFile``.
    ``follow=False`` refuses a symlink too (a file an untrusted index names)."""
    return open_regular(str(path), follow=follow)


def open_found_raw(path: Path | str) -> io.FileIO:
    """``open_found`` unbuffered: for a file read whole in one call."""
    fp = open_found(path)
    if isinstance(fp, io.BufferedReader):
        return cast(io.FileIO, fp.detach())
    fp.close()  # pragma: no cover - safefiles opens with os.fdopen(fd, "rb")
    raise TypeError("open_regular gave no buffered file")


def unreadable_reason(exc: OSError) -> str:
    """Why a file could not be read, in a few words (a vanished file says so)."""
    if isinstance(exc, FileNotFoundError):
        return "vanished before it could be read"
    if isinstance(exc, UnsafeFile):
        return "not a regular file (a FIFO, socket or device): not read"
    return f"cannot read ({exc.strerror or exc})"
