"""Claude Code's settings.json, changed safely by every ``install`` command.

One place for the rules: the file is read as a JSON object (anything else is left alone
with a clear error), a backup of the old file is kept beside it, the new content is
written to a temporary file and renamed over the old one (a crash cannot leave half a
settings file), the file keeps its mode, and a settings.json that is a symlink (a
dotfiles checkout) stays one: the file it points to is the one rewritten.
Standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachediag.errors import CachediagError

Settings = dict[str, Any]


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


def read_settings(path: Path) -> Settings:
    if not path.exists():
        return {}
    try:
        if not path.is_file():  # a FIFO would block the read
            raise OSError("not a regular file")
        loaded = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError, RecursionError) as exc:
        raise CachediagError(f"{path}: cannot read it as JSON ({exc}); not changed") from exc
    if not isinstance(loaded, dict):
        raise CachediagError(f"{path}: not a JSON object; not changed")
    return loaded


def edit_settings(path: Path, change: Callable[[Settings], Settings | None]) -> Edited:
    """Apply ``change`` (which returns the new settings, or ``None`` for "nothing to do";
    it raises ``CachediagError`` to refuse) and write the result safely."""
    current = read_settings(path)
    updated = change(json.loads(json.dumps(current)))
    if updated is None or updated == current:
        return Edited(path, changed=False, backup=None)
    target = path.resolve() if path.is_symlink() else path
    backup = None
    mode, owner = 0o600, None
    if target.exists():
        st = target.stat()
        mode, owner = stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)
        backup = path.with_name(path.name + ".bak")
        if backup.is_symlink():
            backup.unlink()  # never write a backup through somebody's link
        shutil.copyfile(target, backup)
        os.chmod(backup, mode)
        _give_back(backup, owner)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)  # a leftover of a killed run (or a planted link)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fp:
            os.fchmod(fp.fileno(), mode)  # the umask must not narrow or widen it
            _give_back(tmp, owner, fp.fileno())
            fp.write(json.dumps(updated, indent=2) + "\n")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Edited(path, changed=True, backup=backup)


def _give_back(path: Path, owner: tuple[int, int] | None, fd: int | None = None) -> None:
    """Keep the old file's owner (possible only for root, e.g. ``sudo`` on another
    user's settings; for everyone else the file is theirs already)."""
    if owner is None or not hasattr(os, "chown"):
        return
    try:
        if fd is not None:
            os.fchown(fd, *owner)
        else:
            os.chown(path, *owner, follow_symlinks=False)
    except PermissionError:
        pass
