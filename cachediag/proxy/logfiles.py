"""The capture log: one JSON Lines file per UTC day in a private folder.

Files are 0600 in a 0700 folder, opened relative to the folder with ``O_NOFOLLOW`` so a
planted symlink can neither redirect a write nor widen a mode. Each record is one
``write`` of one whole line on an ``O_APPEND`` descriptor: lines from concurrent
requests (or two proxies on one folder) never interleave, and a crash leaves at most
one unfinished last line, which the next write first closes with a newline so that only
that one line is lost. Standard library only: the status line reads these files too.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

from cachediag.errors import CachediagError

DEFAULT_KEEP_DAYS = 30
_DAY_FILE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.jsonl$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def default_log_dir() -> Path:
    """``$XDG_STATE_HOME/cachediag/captures`` (absolute XDG paths only), else
    ``~/.local/state/cachediag/captures``."""
    base = os.environ.get("XDG_STATE_HOME", "").strip()
    if not base or not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "cachediag" / "captures"


def day_file_name(at: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(at)) + ".jsonl"


def day_files(folder: Path) -> list[Path]:
    """The folder's day files, oldest first (other files are not ours)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [folder / n for n in sorted(names) if _DAY_FILE.match(n)]


def _open_private_dir(folder: Path) -> int:
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise CachediagError(f"{folder}: cannot create the capture folder ({exc})") from exc
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except OSError as exc:
        why = "it is a symlink" if folder.is_symlink() else str(exc)
        raise CachediagError(f"{folder}: not usable as the capture folder ({why})") from exc
    if stat.S_IMODE(os.fstat(fd).st_mode) != 0o700:
        os.fchmod(fd, 0o700)
    return fd


class CaptureLog:
    """Appends record lines to today's file; one instance per proxy, used by one thread."""

    def __init__(self, folder: Path, keep_days: int = DEFAULT_KEEP_DAYS) -> None:
        self.folder = folder
        self.keep_days = keep_days
        self._dir_fd = _open_private_dir(folder)
        self._name: str | None = None
        self._fd: int | None = None

    def append(self, line: bytes, at: float | None = None) -> None:
        """Write one record (``line`` without its newline) to the file of ``at``'s day."""
        name = day_file_name(time.time() if at is None else at)
        if name != self._name:
            self._switch(name)
        assert self._fd is not None
        os.write(self._fd, line + b"\n")

    def _switch(self, name: str) -> None:
        self.close_file()
        fd = os.open(name, _FILE_FLAGS, 0o600, dir_fd=self._dir_fd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise CachediagError(f"{self.folder / name}: not a regular file")
        if stat.S_IMODE(info.st_mode) != 0o600:
            os.fchmod(fd, 0o600)
        if info.st_size and not _ends_with_newline(name, self._dir_fd):
            # Close the line a crash left unfinished. (Another proxy's append seen half
            # done makes this a blank line after it, which readers skip.)
            os.write(fd, b"\n")
        self._fd, self._name = fd, name
        self.prune()

    def prune(self, now: float | None = None) -> list[str]:
        """Delete day files older than ``keep_days`` (0 keeps everything); their names."""
        if self.keep_days <= 0:
            return []
        cutoff = day_file_name((time.time() if now is None else now) - self.keep_days * 86400)
        removed = []
        for path in day_files(self.folder):
            if path.name < cutoff and path.name != self._name:
                try:
                    os.unlink(path.name, dir_fd=self._dir_fd)
                except OSError:
                    continue
                removed.append(path.name)
        return removed

    def close_file(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = self._name = None

    def close(self) -> None:
        self.close_file()
        if self._dir_fd >= 0:
            os.close(self._dir_fd)
            self._dir_fd = -1


def _ends_with_newline(name: str, dir_fd: int) -> bool:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        size = os.fstat(fd).st_size
        return size == 0 or os.pread(fd, 1, size - 1) == b"\n"
    finally:
        os.close(fd)
