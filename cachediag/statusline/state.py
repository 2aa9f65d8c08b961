"""The private state file: per transcript, where reading stopped and the ledgers so far.

One file per main transcript under ``$XDG_CACHE_HOME/cachediag/statusline/`` (mode 0600,
folder 0700). Line 1 is the header the warm path needs (file positions, per-stream
summaries, saved prices); line 2 holds the readers' deduplication keys, parsed only when
new bytes must be read. No prompt text is ever stored: ids, counts, times and model names.

Writes go to a temporary file and ``os.replace``, so a reader always sees a whole state.
An exclusive ``flock`` on a side lock file elects one writer per transcript; a run that
cannot take it computes from the last whole state and leaves it unwritten.
"""

from __future__ import annotations

import os
import time
import zlib

from cachediag.follow.files import (
    cursor,
    file_signature,
    jsonl_below,
    resumable,
    unchanged_since,
)
from cachediag.ingest.needles import WANTED, WANTED_WITH_CHAINS, wanted_lines
from cachediag.paths import cache_dir
from cachediag.statusline import jsonlite

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from types import TracebackType
    from typing import Any, TypeAlias

    State: TypeAlias = dict[str, Any]

STATE_VERSION = 1
"""Bump when the layout or the accounting changes: older states are then recomputed."""


def state_path(transcript: str, root: str | None = None) -> str:
    """``<session stem>-<two checksums of the full path>.json``: readable, and distinct for
    two sessions of the same id in different folders. (zlib, not hashlib: OpenSSL takes
    longer to load than the rest of the warm path; the header's ``transcript`` field
    guards against a collision anyway.)"""
    full = os.path.abspath(transcript).encode("utf-8", "surrogateescape")
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in os.path.basename(transcript))
    key = f"{stem[:80]}-{zlib.crc32(full):08x}{zlib.adler32(full):08x}"
    return os.path.join(root or cache_dir(), "statusline", key + ".json")


def load_header(path: str) -> tuple[dict[str, Any] | None, bytes]:
    """The header (or ``None`` when absent, corrupt or from another version) and the raw
    rest of the file, which ``load_readers`` parses only when it is needed."""
    try:
        with open(path, "rb") as fp:
            data = fp.read()
    except OSError:
        return None, b""
    head, _, rest = data.partition(b"\n")
    try:
        header = jsonlite.loads(head)
    except (ValueError, RecursionError):
        return None, b""
    if not isinstance(header, dict) or header.get("version") != STATE_VERSION:
        return None, b""
    return header, rest


def save(path: str, header: bytes, readers: bytes) -> None:
    """Write both serialized parts atomically; the file is private to the user from its
    creation. ``header`` must carry ``"version": STATE_VERSION``."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    body = header + b"\n" + readers + b"\n"
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fp:
            fp.write(body)
        os.replace(tmp, path)
    except BaseException:
        try:  # noqa: SIM105 - contextlib is one more import on the warm path
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _remove_stale_temporaries(path)


STALE_TMP_S = 60.0


def _remove_stale_temporaries(path: str) -> None:
    """Temporary files of runs killed mid-write (Claude Code cancels with SIGKILL too)."""
    folder, name = os.path.split(path)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        if entry.name.startswith(name + ".") and entry.name.endswith(".tmp"):
            try:
                if now - entry.stat().st_mtime > STALE_TMP_S:
                    os.unlink(entry.path)
            except OSError:
                pass


class WriterLock:
    """``with WriterLock(path) as may_write``: True when this run may write the state,
    False when another run holds it (or locking is impossible).

    Never blocks: a status line that waited for a slower sibling would be cancelled by
    Claude Code's next update anyway. The lock is released when its descriptor closes,
    also when the process is killed.
    """

    def __init__(self, path: str) -> None:
        self.path = path + ".lock"
        self.fd: int | None = None

    def __enter__(self) -> bool:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock (Windows): never write concurrently
            return False
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def agent_files(transcript: str) -> list[str]:
    """A session's subagent transcripts: ``<session>/subagents/**/*.jsonl``, sorted."""
    return sorted(jsonl_below(os.path.join(os.path.splitext(transcript)[0], "subagents")))


def unchanged(header: dict[str, Any], files: list[str]) -> bool:
    """True when every file is exactly as the state last saw it (the warm path)."""
    saved = header.get("files")
    if not isinstance(saved, dict) or set(saved) != set(files):
        return False
    return all(unchanged_since(saved[path], path) for path in files)


def skip_request_free_appends(header: dict[str, Any], files: list[str]) -> dict[str, Any] | None:
    """The header moved past what the files gained, when that holds no request at all.

    Claude Code appends progress, hook and user lines between responses, and a status line
    with ``refreshInterval`` runs while it does: such runs need neither the reader nor
    the ledger. ``None`` when any new complete line could matter (or a file is new, gone,
    truncated or rewritten): the caller then reads them properly.
    """
    saved = header.get("files")
    if not isinstance(saved, dict) or set(saved) != set(files):
        return None
    moved = dict(saved)
    for path in files:
        entry = saved[path]
        if file_signature(path) is None or not isinstance(entry, dict):
            return None
        if unchanged_since(entry, path):
            continue
        if not resumable(path, entry):
            return None
        needles = WANTED_WITH_CHAINS if path == files[0] else WANTED
        offset, lines = entry.get("offset"), entry.get("lines")
        if not isinstance(offset, int) or not isinstance(lines, int):
            return None
        try:
            with open(path, "rb") as fp:
                st = os.fstat(fp.fileno())
                fp.seek(offset)
                data = fp.read()
                end = data.rfind(b"\n") + 1
                if wanted_lines(data, end, needles):
                    return None
                lines += data.count(b"\n", 0, end)
                moved[path] = cursor(fp.fileno(), st, offset, len(data), end, lines)
        except OSError:
            return None
    return {**header, "files": moved}
