"""Claude Code's settings.json, changed safely by every ``install`` command.

One place for the rules:

- The file is read once, as a JSON object, and only if it is a regular file (a FIFO is
  refused without blocking); anything else is left alone with a clear error.
- Its numbers are kept as written: each is read as its text (``JsonNumber``) and written
  back verbatim, so ``1.0e400`` never becomes ``Infinity`` nor ``0.10`` ``0.1``.
- Every change first keeps a backup of the bytes read beside it, a new file named by the
  time (``settings.json.20261202T042700Z.bak``; it often holds an API key): 0600 from its
  first byte and linked to its name only if nothing has that name, so no earlier backup
  is ever overwritten, nor a planted link written through.
- The new content goes to a temporary file created the same way, synced, and renamed over
  the old one (a crash cannot leave half a settings file); the file keeps its mode and
  owner, and a settings.json that is a symlink (a dotfiles checkout) stays one: the file
  it points to is the one replaced.

Standard library only.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachediag.errors import CachediagError
from cachediag.safefiles import NOFOLLOW, make_dirs, open_regular

Settings = dict[str, Any]


@dataclass(slots=True, frozen=True)
class JsonNumber:
    """A number of the settings file as its text (``1.0e400``, ``1.50``, an integer of
    5,000 digits): compared and written back as that text, never converted."""

    text: str


@dataclass(slots=True, frozen=True)
class Edited:
    settings: Path
    changed: bool
    backup: Path | None


def settings_path(explicit: Path | None = None) -> Path:
    """``--settings``, else ``$CLAUDE_CONFIG_DIR/settings.json`` (its first entry), else
    ``~/.claude/settings.json``."""
    if explicit is not None:
        return explicit.expanduser()
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").split(",")[0].strip()
    base = Path(configured).expanduser() if configured else Path.home() / ".claude"
    return base / "settings.json"


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


def parse_settings(text: str, path: Path) -> Settings:
    """The settings object of ``text`` (numbers as ``JsonNumber``)."""
    try:
        loaded = json.loads(
            text or "{}", parse_float=JsonNumber, parse_int=JsonNumber, parse_constant=_not_json
        )
    except (ValueError, RecursionError) as exc:
        raise CachediagError(f"{path}: cannot read it as JSON ({exc}); not changed") from exc
    if not isinstance(loaded, dict):
        raise CachediagError(f"{path}: not a JSON object; not changed")
    return loaded


def dump_settings(value: Any) -> str:
    """``json.dumps(value, indent=2)`` plus a newline, with each ``JsonNumber`` as its
    text; a float that is not finite is refused (it has no JSON form)."""
    out: list[str] = []
    _dump(value, out, "\n")
    out.append("\n")
    return "".join(out)


def _dump(value: Any, out: list[str], newline: str) -> None:
    if isinstance(value, JsonNumber):
        out.append(value.text)
    elif value is None or isinstance(value, (bool, str)):
        out.append(json.dumps(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} has no JSON form")
        out.append(float.__repr__(value))
    elif isinstance(value, (dict, list, tuple)):
        is_dict = isinstance(value, dict)
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        if not items:
            out.append("{}" if is_dict else "[]")
            return
        inner = newline + "  "
        out.append("{" if is_dict else "[")
        for i, (key, item) in enumerate(items):
            out.append(inner if i == 0 else "," + inner)
            if is_dict:
                if not isinstance(key, str):
                    raise TypeError(f"a key of type {type(key).__name__}")
                out.append(json.dumps(key) + ": ")
            _dump(item, out, inner)
        out.append(newline + ("}" if is_dict else "]"))
    else:
        raise TypeError(f"a value of type {type(value).__name__}")


def read_raw(path: Path) -> tuple[bytes | None, os.stat_result | None]:
    """The file's bytes and status (``None`` when there is none), read once."""
    try:
        fp = open_regular(str(path))  # follows a symlinked settings.json; never a FIFO
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise CachediagError(
            f"{path}: cannot read it ({exc.strerror or exc}); not changed"
        ) from exc
    with fp:
        return fp.read(), os.fstat(fp.fileno())


def read_settings(path: Path) -> Settings:
    raw, _ = read_raw(path)
    return {} if raw is None else parse_settings(decode(raw, path), path)


def decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CachediagError(f"{path}: cannot read it as JSON ({exc}); not changed") from exc


def edit_settings(path: Path, change: Callable[[Settings], Settings | None]) -> Edited:
    """Apply ``change`` (which returns the new settings, or ``None`` for "nothing to do";
    it raises ``CachediagError`` to refuse) and write the result safely."""
    raw, info = read_raw(path)
    text = "" if raw is None else decode(raw, path)
    current = parse_settings(text, path)
    updated = change(parse_settings(text, path))  # a copy of its own to change
    if updated is None or updated == current:
        return Edited(path, changed=False, backup=None)
    return write_bytes(path, raw, info, encode(updated, path))


def encode(updated: Settings, path: Path) -> bytes:
    try:
        return dump_settings(updated).encode("utf-8")
    except (ValueError, TypeError, RecursionError) as exc:
        raise CachediagError(
            f"{path}: the new settings cannot be written ({exc}); not changed"
        ) from exc


def write_bytes(
    path: Path, raw: bytes | None, info: os.stat_result | None, new: bytes | None
) -> Edited:
    """Back up ``raw`` (a new file named by the time), then replace the file with ``new``
    (``None``: remove it, for a file cachediag itself created)."""
    target = path.resolve() if path.is_symlink() else path
    mode, owner = 0o600, None
    if info is not None:
        mode, owner = stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid)
    backup = None
    try:
        if raw is not None:
            backup = _keep_backup(path, raw, owner)
        make_dirs(str(target.parent))
        if new is None:
            os.unlink(target)
        else:
            replace_file(target, new, mode, owner)
    except OSError as exc:
        where = exc.filename or target
        raise CachediagError(
            f"{where}: cannot write it ({exc.strerror or exc}); {path} not changed"
        ) from exc
    return Edited(path, changed=True, backup=backup)


def _keep_backup(path: Path, raw: bytes, owner: tuple[int, int] | None) -> Path:
    """A new backup ``settings.json.YYYYMMDDTHHMMSSZ.bak`` (``-2``, ``-3``... within one
    second): written to a private temporary file, then hard-linked to its name, which
    fails rather than replace anything already there (O_EXCL where links are refused)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    names = (f"{path.name}.{stamp}{'' if n == 1 else f'-{n}'}.bak" for n in range(1, 10_000))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, 0o600)
            _give_back(fd, owner)
            _write_all(fd, raw, path)
            os.fsync(fd)
        finally:
            os.close(fd)
        for name in names:
            dest = path.with_name(name)
            try:
                os.link(tmp, dest, follow_symlinks=False)
                return dest
            except FileExistsError:
                continue
            except OSError as exc:  # no hard links here (some network file systems)
                if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                    raise
                return _exclusive_copy(dest, raw)
        raise OSError(errno.EEXIST, "too many backups this second", str(path))
    finally:
        try:  # noqa: SIM105 - the original error is the one to report
            os.unlink(tmp)
        except OSError:
            pass


def _exclusive_copy(dest: Path, raw: bytes) -> Path:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for n in range(2, 10_000):
        try:
            fd = os.open(dest, flags, 0o600)
            break
        except FileExistsError:
            dest = dest.with_name(f"{dest.name.removesuffix('.bak')}-{n}.bak")
    else:
        raise OSError(errno.EEXIST, "too many backups this second", str(dest))
    try:
        os.fchmod(fd, 0o600)
        _write_all(fd, raw, dest)
        os.fsync(fd)
    finally:
        os.close(fd)
    return dest


def _write_all(fd: int, data: bytes, dest: Path) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, "short write", str(dest))
        view = view[written:]


def replace_file(dest: Path, data: bytes, mode: int, owner: tuple[int, int] | None) -> None:
    """``dest`` becomes a new file holding ``data``, with ``mode`` from its creation on
    (``mkstemp``: ``O_EXCL``, 0600, no link followed), renamed over whatever was there."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, mode)  # the umask must neither narrow nor widen it
            _give_back(fd, owner)
            _write_all(fd, data, dest)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, dest)
    except BaseException:
        try:  # noqa: SIM105 - the original error is the one to report
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _give_back(fd: int, owner: tuple[int, int] | None) -> None:
    """Keep the old file's owner (possible only for root, e.g. ``sudo`` on another
    user's settings; for everyone else the file is theirs already)."""
    if owner is None or not hasattr(os, "fchown"):
        return
    try:  # noqa: SIM105 - as above
        os.fchown(fd, *owner)
    except PermissionError:
        pass
