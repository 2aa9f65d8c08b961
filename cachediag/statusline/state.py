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
from cachediag.follow.needles import saved_needles
from cachediag.ingest.needles import wanted_lines
from cachediag.paths import cache_dir
from cachediag.safefiles import open_private, open_regular, private_dir, read_private, write_atomic
from cachediag.statusline import jsonlite

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from types import TracebackType
    from typing import Any, TypeAlias

    State: TypeAlias = dict[str, Any]

STATE_VERSION = 2
"""Bump when the layout or the accounting changes: older states are then recomputed."""
MAGIC = b"cachediag-state %d " % STATE_VERSION
"""Line 0: this, then the crc32 of the header line. The header carries ``readers_crc``
for line 2. Any damage (a cut, a flipped byte, a hand edit) fails a checksum and the
state is recomputed, whatever the damage would otherwise have raised."""
MAX_STATE_BYTES = 256 << 20
"""A state file larger than this is not ours (or is broken): it is not read."""


class BadState(ValueError):
    """A state file that cannot be used; it is recomputed (and the reason logged)."""


def state_dir(root: str | None = None) -> str:
    """The state folder, made 0700 where missing; raises ``OSError`` (``UnsafeFile``)
    when it, or the cache folder above it, is not this user's alone."""
    top = root or cache_dir()
    return private_dir(os.path.join(top, "statusline"), top)


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
    """The header (or ``None`` when absent) and the raw rest of the file, which
    ``readers`` parses only when it is needed. Raises ``BadState`` for a file that is
    there but cannot be used (damaged, another version, not a regular file)."""
    try:
        data = read_private(path, MAX_STATE_BYTES)
    except FileNotFoundError:
        return None, b""
    except OSError as exc:
        raise BadState(f"state file not readable ({type(exc).__name__})") from exc
    magic, _, data = data.partition(b"\n")
    head, _, rest = data.partition(b"\n")
    if not magic.startswith(MAGIC):
        raise BadState("state file of another version or damaged (first line)")
    if magic[len(MAGIC) :] != b"%08x" % zlib.crc32(head):
        raise BadState("state file damaged (header checksum)")
    try:
        header = jsonlite.loads(head)
    except Exception as exc:  # whatever a damaged header raises, it is one answer
        raise BadState(f"state header unreadable ({type(exc).__name__})") from exc
    if not isinstance(header, dict) or header.get("version") != STATE_VERSION:
        raise BadState("state header of another version")
    return header, rest


def stamp(path: str) -> tuple[int, int, int, int] | None:
    """The state file's identity now (``None``: not there). ``save`` renames a new file
    over it, so a state saved since the stamp has another: a run that loaded the header
    before the writer lock parses it again only then."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def readers(rest: bytes, header: dict[str, Any]) -> bytes:
    """Line 2 of a state file, checked against the header's ``readers_crc``."""
    body = rest.rstrip(b"\n")
    if header.get("readers_crc") != zlib.crc32(body):
        raise BadState("state file damaged (readers checksum)")
    return body


def readers_crc(body: bytes) -> int:
    return zlib.crc32(body)


def save(path: str, header: bytes, readers: bytes) -> None:
    """Write both serialized parts atomically; the file is private to the user from its
    creation, never written through a link. ``header`` must carry ``"version":
    STATE_VERSION`` and ``"readers_crc"`` of ``readers``."""
    body = b"%s%08x\n%s\n%s\n" % (MAGIC, zlib.crc32(header), header, readers)
    write_atomic(path, body)
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


SWEEP_EVERY_S = 24 * 3600.0
SWEEP_MAX_FILES = 500
"""Housekeeping runs at most once a day and looks at no more than this many files."""


def sweep(folder: str, now: float | None = None) -> int:
    """Remove the state (and lock) of transcripts that no longer exist; returns how many
    states went. Cheap and bounded: at most once a day (a marker file's mtime), at most
    ``SWEEP_MAX_FILES`` files looked at, only the first two lines of each read."""
    now = time.time() if now is None else now
    marker = os.path.join(folder, ".swept")
    try:
        if now - os.lstat(marker).st_mtime < SWEEP_EVERY_S:
            return 0
    except FileNotFoundError:
        pass
    except OSError:
        return 0
    try:
        os.close(open_private(marker, os.O_WRONLY | os.O_CREAT))
        os.utime(marker, (now, now), follow_symlinks=False)
        entries = [e for _, e in zip(range(SWEEP_MAX_FILES), os.scandir(folder), strict=False)]
    except OSError:
        return 0
    removed = 0
    for entry in entries:
        if not entry.name.endswith(".json"):
            continue
        try:
            with open_regular(entry.path, follow=False) as fp:
                fp.readline()
                head = fp.readline(MAX_STATE_BYTES)
            header = jsonlite.loads(head)
            transcript = header.get("transcript") if isinstance(header, dict) else None
        except Exception:  # a damaged state: the next run on it recomputes it anyway
            continue
        if isinstance(transcript, str) and not os.path.exists(transcript):
            for path in (entry.path, entry.path + ".lock"):
                try:  # noqa: SIM105 - contextlib is one more import
                    os.unlink(path)
                except OSError:
                    pass
            removed += 1
    return removed


class WriterLock:
    """``with WriterLock(path) as may_write``: True when this run may write the state,
    False when another run holds it (or locking is impossible).

    Never blocks: a status line that waited for a slower sibling would be cancelled by
    Claude Code's next update anyway. The lock is released when its descriptor closes,
    also when the process is killed.
    """

    def __init__(self, path: str | None) -> None:
        self.path = None if path is None else path + ".lock"
        self.fd: int | None = None

    def __enter__(self) -> bool:
        if self.path is None:
            return False
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock (Windows): never write concurrently
            return False
        try:
            self.fd = open_private(self.path, os.O_RDWR | os.O_CREAT)
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
    """True when every file is exactly as the state last saw it (the warm path); an agent
    file that could not be read counts as unchanged while its signature is the same."""
    saved, bad = header.get("files"), header.get("unreadable") or {}
    if (
        not isinstance(saved, dict)
        or not isinstance(bad, dict)
        or set(saved) | set(bad) != set(files)
    ):
        return False
    return all(unchanged_since(bad[p] if p in bad else saved[p], p) for p in files)


SKIP_SCAN_BYTES = 4 << 20
"""Appends larger than this are left to the reader (bounded in time and memory)."""


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
        if not isinstance(entry.get("size"), int) or entry.get("skip"):
            return None
        if os.stat(path).st_size - entry["size"] > SKIP_SCAN_BYTES:
            return None  # much was written: the reader, with its time budget, reads it
        needles = saved_needles(entry, chains=path == files[0])
        offset, lines = entry.get("offset"), entry.get("lines")
        if not isinstance(offset, int) or not isinstance(lines, int):
            return None
        try:
            with open_regular(path) as fp:
                st = os.fstat(fp.fileno())
                fp.seek(offset)
                data = fp.read()
                end = data.rfind(b"\n") + 1
                if wanted_lines(data, end, needles):
                    return None
                lines += data.count(b"\n", 0, end)
                moved[path] = cursor(
                    fp.fileno(), st, offset, len(data), end, lines, needles=entry.get("needles")
                )
        except OSError:
            return None
    return {**header, "files": moved, "partial": False}
