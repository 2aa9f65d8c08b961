"""The index file: where it lives, how it is read and written, and its lock.

One file per kind of row, ``$XDG_CACHE_HOME/cachediag/history/<kind>.index`` (0600, in
a 0700 folder checked to be this user's alone, like the status line's states). Line 1 is
``cachediag-history <version> <crc32>``, line 2 the body: JSON of ``{"schema": ...,
"files": {path: entry}}``. Any damage (a cut, a flipped byte, another version or row
schema) fails a check and the index is simply rebuilt: it holds nothing that the
transcripts do not. It holds ids, counts, times, model names and paths, never prompt
text.

Writers hold an exclusive ``flock`` on ``<kind>.index.lock`` from reading the index to
replacing it, and replace it atomically (a temporary file created exclusively, then
renamed), so two processes updating it at once never interleave and a reader without
the lock always sees one whole index.
"""

from __future__ import annotations

import os
import zlib

from cachediag.paths import cache_dir
from cachediag.safefiles import open_private, private_dir, read_private, write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the status line's warm path milliseconds: not at run time
    from types import TracebackType
    from typing import Any

VERSION = 1
"""Bump when the entry layout changes: older indexes are then rebuilt."""
MAGIC = b"cachediag-history %d " % VERSION
MAX_INDEX_BYTES = 1 << 30

if TYPE_CHECKING:
    Index = dict[str, Any]
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


class BadIndex(ValueError):
    """An index that cannot be used; it is rebuilt."""


def index_dir(root: str | None = None) -> str:
    """The index folder, made 0700 where missing; raises ``OSError`` when it, or the
    cache folder above it, is not this user's alone."""
    top = root or cache_dir()
    return private_dir(os.path.join(top, "history"), top)


def index_path(kind: str, root: str | None = None) -> str:
    if not 1 <= len(kind) <= 40 or not set(kind) <= _NAME_CHARS:
        raise ValueError(f"not an index name: {kind!r}")
    return os.path.join(index_dir(root), f"{kind}.index")


def _loads(data: bytes) -> Any:
    """orjson when loaded already (the reports), else the C scanner without ``json``
    (the status line's warm path, which must not pay for importing either)."""
    import sys

    if "orjson" in sys.modules:
        return sys.modules["orjson"].loads(data)
    from cachediag.statusline import jsonlite

    return jsonlite.loads(data)


def _dumps(value: Any) -> bytes:
    try:
        import orjson

        return orjson.dumps(value)
    except ImportError:
        import json

        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


def load(path: str, schema: str) -> Index:
    """The index at ``path`` for rows of ``schema``; an empty one when there is none.
    Raises ``BadIndex`` for one that is there but cannot be used."""
    try:
        data = read_private(path, MAX_INDEX_BYTES)
    except FileNotFoundError:
        return {"schema": schema, "files": {}}
    except OSError as exc:
        raise BadIndex(f"index not readable ({type(exc).__name__})") from exc
    head, _, body = data.partition(b"\n")
    if not head.startswith(MAGIC) or head[len(MAGIC) :] != b"%08x" % zlib.crc32(body):
        raise BadIndex("index of another version or damaged")
    try:
        index = _loads(body)
    except ValueError as exc:
        raise BadIndex("index unreadable") from exc
    if (
        not isinstance(index, dict)
        or index.get("schema") != schema
        or not isinstance(index.get("files"), dict)
    ):
        raise BadIndex("index of another row schema")
    return index


def save(path: str, index: Index) -> None:
    body = _dumps(index)
    write_atomic(path, b"%s%08x\n%s" % (MAGIC, zlib.crc32(body), body))


class locked:
    """Hold the index's writer lock (blocking: an update takes milliseconds to seconds,
    and waiting for it is cheaper than reading the history again). A class, not
    ``contextlib``: one import less on the status line's path."""

    def __init__(self, path: str) -> None:
        self.path = path + ".lock"
        self.fd: int | None = None

    def __enter__(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock (Windows)
            return
        self.fd = open_private(self.path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self.fd)
            self.fd = None
            raise

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
            self.fd = None
