"""Private files done safely: folders 0700 that are really ours, files never through a
link, temporary files created exclusively, only regular files read.

cachediag keeps state, price and log files in a cache folder (``paths.cache_dir``) that
may sit somewhere others can write (``XDG_CACHE_HOME=/tmp``, a shared home). Everything
here refuses to follow a planted symlink, to block on a FIFO or a device, or to use a
folder somebody else owns or may write. Standard library only: the status line's warm
path imports this.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafeFile(OSError):
    """A folder or file cachediag will not use (the message says why; never its content)."""


def check_private_dir(path: str) -> None:
    """Raise ``UnsafeFile`` unless ``path`` is a real folder (not a link) owned by this
    user and writable by nobody else."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeFile(f"{path}: not a folder (a link or a file); not used")
    uid = getattr(os, "geteuid", None)
    if uid is not None and st.st_uid != uid():
        raise UnsafeFile(f"{path}: owned by uid {st.st_uid}, not by this user; not used")
    if st.st_mode & 0o022:
        raise UnsafeFile(
            f"{path}: writable by others (mode {stat.S_IMODE(st.st_mode):o}); not used"
        )


def private_dir(path: str, top: str) -> str:
    """Make ``path`` (a folder at or below ``top``) with mode 0700 where missing, and check
    every folder from ``top`` down to it. Folders above ``top`` are the user's own business
    (``~/.cache`` is often 0755) and are not checked."""
    top = os.path.abspath(top)
    path = os.path.abspath(path)
    chain = [path]
    while chain[-1] != top and os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    if chain[-1] != top:
        raise ValueError(f"{path} is not below {top}")
    os.makedirs(os.path.dirname(top), exist_ok=True)
    for folder in reversed(chain):
        try:  # noqa: SIM105 - contextlib is one more import on the warm path
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        check_private_dir(folder)
    return path


def open_regular(path: str, *, follow: bool = True) -> BinaryIO:
    """Open ``path`` for reading only if it is a regular file: a FIFO, device or socket is
    refused without blocking (opened non-blocking, then checked). ``follow=False`` refuses
    a symlink as well (cachediag's own files)."""
    flags = os.O_RDONLY | NONBLOCK | CLOEXEC | (0 if follow else NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path}: not a regular file")
        if NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_private(path: str, limit: int | None = None) -> bytes:
    """The bytes of one of cachediag's own files (no link, regular only); ``limit`` caps
    what is read, and a longer file is an ``UnsafeFile``."""
    with open_regular(path, follow=False) as fp:
        if limit is not None and os.fstat(fp.fileno()).st_size > limit:
            raise UnsafeFile(f"{path}: larger than {limit} bytes; not read")
        return fp.read() if limit is None else fp.read(limit + 1)


def write_atomic(path: str, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data``: written to a temporary file created exclusively
    with ``mode`` (never through a planted link), then renamed over ``path`` (which, a
    link or not, is replaced, never written through)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:  # noqa: SIM105 - as above
        os.unlink(tmp)  # a leftover of a killed run with our pid (or a planted link)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as fp:
            os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask
            fp.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:  # noqa: SIM105 - contextlib is one more import on the warm path
            os.unlink(tmp)
        except OSError:
            pass
        raise


def open_private(path: str, flags: int, mode: int = 0o600) -> int:
    """``os.open`` of one of cachediag's own files, never through a link, never a FIFO
    or device (the descriptor is checked before it is used)."""
    fd = os.open(path, flags | NOFOLLOW | NONBLOCK | CLOEXEC, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFile(f"{path}: not a regular file")
        if NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_dirs(path: str, mode: int = 0o700) -> bool:
    """Create ``path`` and any missing folder above it, each with ``mode`` (``os.makedirs``
    gives the folders above the default mode); whether ``path`` itself was created here.
    Existing folders are left as they are: checking them is the caller's business."""
    missing = []
    probe = os.path.abspath(path)
    while not os.path.lexists(probe) and os.path.dirname(probe) != probe:
        missing.append(probe)
        probe = os.path.dirname(probe)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            if folder == missing[0]:
                return False  # made by somebody else meanwhile: not ours
    return bool(missing)
