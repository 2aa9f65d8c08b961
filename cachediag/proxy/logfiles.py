"""The capture log: one JSON Lines file per UTC day in a private folder.

The folder is the proxy's own: created by it (0700), or an existing folder that is already
0700 and owned by this user; anything else (a shared folder, somebody else's, a symlink)
is refused before anything is changed in it. Files are 0600, opened relative to the folder
with ``O_NOFOLLOW``, and a day file that is a link of any kind is never written.

A record is written whole or not at all: under an exclusive ``flock`` (other proxies on
the same folder take it too) the line goes in one append, a short write is rolled back
with ``ftruncate``, and a file that does not end in a newline (a crash mid-line) gets one
first, so a torn line is one bad line for the readers, never glued to the next record.

Pruning deletes only the names this module writes (``YYYY-MM-DD.jsonl``, a real date),
regular files of this user, and only in a folder the proxy holds as its own: one it
created, its default folder, or one that was empty when first used (each is marked with
a ``.cachediag-captures`` file). Standard library only: the status line reads these files.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from pathlib import Path

from cachediag.errors import CachediagError
from cachediag.safefiles import CLOEXEC, NOFOLLOW, NONBLOCK, make_dirs

DEFAULT_KEEP_DAYS = 30
MARKER = ".cachediag-captures"
"""Marks a folder whose day files the proxy may prune (it explains itself to a reader)."""
_MARKER_TEXT = (
    b"This folder holds the records of `cachediag proxy`. Files named YYYY-MM-DD.jsonl\n"
    b"older than its --keep-days are deleted here: keep no other files of that name.\n"
)
_DAY_NAME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\.jsonl")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW | CLOEXEC
_APPEND = os.O_RDWR | os.O_APPEND | NOFOLLOW | NONBLOCK | CLOEXEC


def default_log_dir() -> Path:
    """``$XDG_STATE_HOME/cachediag/captures`` (absolute XDG paths only), else
    ``~/.local/state/cachediag/captures``."""
    base = os.environ.get("XDG_STATE_HOME", "").strip()
    if not base or not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "cachediag" / "captures"


def day_file_name(at: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(at)) + ".jsonl"


def is_day_file_name(name: str) -> bool:
    """Exactly a name ``day_file_name`` writes: ASCII digits, a real date, nothing more.
    (Checked by hand: ``time.strptime`` would import ``_strptime`` on the status line.)"""
    if not _DAY_NAME.fullmatch(name):
        return False
    year, month, day = int(name[:4]), int(name[5:7]), int(name[8:10])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    return 1 <= month <= 12 and 1 <= day <= days[month - 1]


def day_files(folder: Path) -> list[Path]:
    """The folder's day files, oldest first: regular files under a day's name (a link, a
    FIFO or any other name is not one the proxy wrote, and is never read as one)."""
    try:
        with os.scandir(folder) as entries:
            names = [
                e.name
                for e in entries
                if is_day_file_name(e.name) and e.is_file(follow_symlinks=False)
            ]
    except OSError:
        return []
    return [folder / n for n in sorted(names)]


def _uid() -> int:
    return os.geteuid()


def open_log_dir(folder: Path) -> tuple[int, bool]:
    """A descriptor of the capture folder, and whether the proxy created it.

    Refuses, with nothing changed, a folder that is a symlink, not a folder, not owned by
    this user or not exactly 0700 (only a folder created here is given its mode)."""
    try:
        created = make_dirs(str(folder), 0o700)
    except OSError as exc:
        raise CachediagError(
            f"{folder}: cannot create the capture folder ({exc.strerror or exc})"
        ) from exc
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except OSError as exc:
        why = "it is a symlink" if folder.is_symlink() else (exc.strerror or str(exc))
        raise CachediagError(f"{folder}: not usable as the capture folder ({why})") from exc
    try:
        st = os.fstat(fd)
        refuse = "; not used as the capture folder (nothing changed)"
        if st.st_uid != _uid():
            raise CachediagError(f"{folder}: owned by uid {st.st_uid}, not by you{refuse}")
        mode = stat.S_IMODE(st.st_mode)
        if created and mode & 0o777 != 0o700:
            os.fchmod(fd, 0o700)  # ours, made a moment ago: only the umask narrowed it
        elif mode & 0o777 != 0o700:
            raise CachediagError(
                f"{folder}: mode {mode:03o}, not 0700 (others could read or change the "
                f"records){refuse}; give a new folder, or chmod 700 it if it is yours alone"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, created


def _is_marked(dir_fd: int) -> bool:
    try:
        st = os.stat(MARKER, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == _uid()


def _mark(dir_fd: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC
    fd = os.open(MARKER, flags, 0o600, dir_fd=dir_fd)
    try:
        os.write(fd, _MARKER_TEXT)
    finally:
        os.close(fd)


def _is_default(dir_fd: int) -> bool:
    try:
        return os.path.samestat(os.fstat(dir_fd), os.stat(default_log_dir()))
    except OSError:
        return False


class CaptureLog:
    """Appends record lines to today's file; one instance per proxy, used by one thread."""

    def __init__(self, folder: Path, keep_days: int = DEFAULT_KEEP_DAYS) -> None:
        self.folder = folder
        self.keep_days = keep_days
        self._dir_fd, created = open_log_dir(folder)
        self.owns_folder = _is_marked(self._dir_fd)
        """Whether old day files are pruned here (see the module's docstring)."""
        if not self.owns_folder and (
            created or _is_default(self._dir_fd) or not os.listdir(self._dir_fd)
        ):
            try:
                _mark(self._dir_fd)
                self.owns_folder = True
            except OSError:
                pass  # not marked: nothing is pruned, records are still written
        self._name: str | None = None
        self._fd: int | None = None

    def append(self, line: bytes, at: float | None = None) -> None:
        """Write one record (``line``, one line without its newline) to the file of
        ``at``'s day, whole or not at all (an ``OSError`` then says why)."""
        if b"\n" in line:
            raise ValueError("a record is one line")
        name = day_file_name(time.time() if at is None else at)
        if name != self._name:
            self._switch(name)
        assert self._fd is not None
        import fcntl

        fd = self._fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked = True
        except OSError:  # a filesystem without locks (some NFS): appends, no rollback
            locked = False
        try:
            start = os.fstat(fd).st_size
            data = line + b"\n"
            if start and os.pread(fd, 1, start - 1) != b"\n":
                data = b"\n" + data  # close a torn line: it stays one bad line, alone
            _write_whole(fd, data, start if locked else None)
        finally:
            if locked:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _switch(self, name: str) -> None:
        self.close_file()
        self._fd = _open_day_file(self.folder, name, self._dir_fd)
        self._name = name
        self.prune()

    def prune(self, now: float | None = None) -> list[str]:
        """Delete day files older than ``keep_days`` (0 keeps everything); their names.
        Only in a folder the proxy owns, only its own names, only regular files of ours."""
        if self.keep_days <= 0 or not self.owns_folder:
            return []
        cutoff = day_file_name((time.time() if now is None else now) - self.keep_days * 86400)
        removed = []
        for name in sorted(os.listdir(self._dir_fd)):
            if not is_day_file_name(name) or name >= cutoff or name == self._name:
                continue
            try:
                st = os.stat(name, dir_fd=self._dir_fd, follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode) or st.st_uid != _uid():
                    continue
                os.unlink(name, dir_fd=self._dir_fd)
            except OSError:
                continue
            removed.append(name)
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


def _open_day_file(folder: Path, name: str, dir_fd: int) -> int:
    """An append descriptor of a day file: created here 0600, or an existing regular file
    of this user with no other name (a hard link would put records into another file)."""
    for _ in range(3):  # created and deleted between two tries: try again
        try:
            fd = os.open(name, _APPEND | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dir_fd)
        except FileExistsError:
            pass
        else:
            if stat.S_IMODE(os.fstat(fd).st_mode) != 0o600:
                os.fchmod(fd, 0o600)  # just created here: only the umask narrowed it
            return fd
        try:
            fd = os.open(name, _APPEND, dir_fd=dir_fd)
        except FileNotFoundError:
            continue
        except OSError as exc:
            why = "a symlink" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
            raise CachediagError(f"{folder / name}: not written ({why})") from exc
        why = _not_appendable(os.fstat(fd))
        if why:
            os.close(fd)
            raise CachediagError(f"{folder / name}: not written ({why})")
        return fd
    raise CachediagError(f"{folder / name}: not written (it keeps vanishing)")


def _not_appendable(st: os.stat_result) -> str:
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != _uid():
        return f"owned by uid {st.st_uid}"
    return "a hard link to another name" if st.st_nlink != 1 else ""


def _write_whole(fd: int, data: bytes, start: int | None) -> None:
    """Append ``data`` entirely, or undo what part of it went in (a full disk) by cutting
    the file back to ``start`` (``None``: not ours to cut, no lock held)."""
    done = 0
    try:
        while done < len(data):
            n = _write(fd, data[done:] if done else data)
            if n <= 0:
                raise OSError(errno.ENOSPC, "short write")
            done += n
    except BaseException:
        if done and start is not None:
            try:  # noqa: SIM105 - contextlib is one more import on the status line's path
                os.ftruncate(fd, start)  # under the lock, nobody appended after us
            except OSError:
                pass  # left torn: the next append starts on a new line
        raise


_write = os.write
"""The one call that writes a record's bytes (tests replace it with a full disk)."""
