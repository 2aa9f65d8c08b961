"""Install and uninstall one settings.json key, so that uninstall puts back what the user
had before cachediag.

Beside the settings file, a private record (``.settings.json.cachediag-undo.json``, 0600,
written atomically, never through a link) holds, per key cachediag set, the value it
replaced (or that there was none) and the value cachediag wrote; and the whole file as it
was before cachediag's first change. An install over cachediag's own value (``--force``
again, another port) keeps the first record, so the user's value is never replaced by
ours. Uninstall sets the key back (or removes it) only while it still holds cachediag's
value; when no cachediag key is left and the settings are then, value for value, the file
as it was, that file's bytes are written back verbatim (its spacing, order and numbers),
so install, install again, uninstall ends byte-identical. Every write goes through
``claude_settings`` (a backup named by the time, mode, owner and links kept). An
exclusive ``flock`` on the settings folder keeps two installs from interleaving.
Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachediag.claude_settings import (
    Edited,
    Settings,
    decode,
    dump_settings,
    encode,
    parse_settings,
    read_raw,
    replace_file,
    write_bytes,
)
from cachediag.errors import CachediagError
from cachediag.safefiles import make_dirs, read_private

Key = tuple[str, ...]
"""A key's path in the settings object: ``("statusLine",)``, ``("env", "ANTHROPIC_BASE_URL")``."""
MISSING: Any = object()
"""What ``compute`` and ``is_ours`` get for a key that is not set."""
_LIMIT = 16 << 20


@dataclass(slots=True, frozen=True)
class Undone:
    edited: Edited
    outcome: str
    """``restored`` (the earlier value back), ``removed`` (there was none), ``verbatim``
    (the whole file as it was, byte for byte), ``deleted`` (there was no file),
    ``absent`` (nothing of cachediag's to undo)."""

    def line(self, key: str) -> str:
        """What the uninstall did, in one line for the user."""
        done = self.edited
        backup = f" (backup: {done.backup})" if done.backup else ""
        said = {
            "absent": f"{key} is not cachediag's to remove; nothing changed.",
            "restored": f"{key} put back as it was before cachediag{backup}",
            "removed": f"{key} removed (there was none before cachediag){backup}",
            "verbatim": f"{key} undone; the file is byte for byte as it was before "
            f"cachediag{backup}",
            "deleted": f"{key} removed; there was no settings file before cachediag and there "
            f"is none now{backup}",
        }
        return f"{done.settings}: {said[self.outcome]}"


def record_path(settings: Path) -> Path:
    return settings.with_name(f".{settings.name}.cachediag-undo.json")


def install_key(
    settings: Path,
    key: Key,
    compute: Callable[[Any], Any],
    is_ours: Callable[[Any], bool],
) -> Edited:
    """Set ``key`` to ``compute(current)`` (``None``: nothing to do; it raises to refuse),
    recording the value it replaces unless that value is cachediag's own."""
    make_dirs(str(settings.parent))
    with _locked(settings.parent):
        raw, info = read_raw(settings)
        text = "" if raw is None else decode(raw, settings)
        obj = parse_settings(text, settings)
        current = _get(obj, key)
        new = compute(current)
        if new is None or new == current:
            return Edited(settings, changed=False, backup=None)
        parent_was_there = len(key) == 1 or key[0] in obj
        parent = _parent(obj, key, settings, create=True)
        record = _read_record(settings)
        entries: dict[str, Any] = record.setdefault("keys", {})
        if not entries:
            record["original"] = None if raw is None else text
        name = "/".join(key)
        entry = entries.get(name)
        if entry is None or not (is_ours(current) or current == entry.get("ours")):
            had = current is not MISSING and not (entry is None and is_ours(current))
            entry = {"had": had, "before": current if had else None}
            entry["parent"] = parent_was_there
        entry["ours"] = new
        entries[name] = entry
        parent[key[-1]] = new
        _write_record(settings, record)  # first: a crash then leaves the earlier value known
        return write_bytes(settings, raw, info, encode(obj, settings))


def uninstall_key(settings: Path, key: Key, is_ours: Callable[[Any], bool]) -> Undone:
    """Put ``key`` back as it was before cachediag (or remove it), if it still holds
    cachediag's value; refuse when someone else's value is there now."""
    name = "/".join(key)
    if not settings.parent.is_dir():
        return Undone(Edited(settings, changed=False, backup=None), "absent")
    with _locked(settings.parent):
        raw, info = read_raw(settings)
        text = "" if raw is None else decode(raw, settings)
        obj = parse_settings(text, settings)
        record = _read_record(settings)
        entries: dict[str, Any] = record.get("keys", {})
        entry = entries.pop(name, None)
        current = _get(obj, key)
        ours = is_ours(current) or (entry is not None and current == entry.get("ours"))
        if current is MISSING or (entry is None and not ours):
            if entry is not None:
                _write_record(settings, record)  # removed by hand: nothing left to undo
            return Undone(Edited(settings, changed=False, backup=None), "absent")
        if not ours:
            raise CachediagError(
                f"{settings}: {'.'.join(key)} is not cachediag's now (changed since it was "
                "installed); not changed"
            )
        outcome = _put_back(obj, key, entry, settings)
        new: bytes | None = encode(obj, settings)
        if not entries and "original" in record:
            original = record["original"]
            if original is None and obj == {} and not settings.is_symlink():
                new, outcome = None, "deleted"
            elif original is not None and parse_settings(original, settings) == obj:
                new, outcome = original.encode("utf-8"), "verbatim"
        done = write_bytes(settings, raw, info, new)
        _write_record(settings, record)
        return Undone(done, outcome)


def _put_back(obj: Settings, key: Key, entry: dict[str, Any] | None, path: Path) -> str:
    parent = _parent(obj, key, path, create=False)
    if entry is not None and entry.get("had"):
        parent[key[-1]] = entry.get("before")
        return "restored"
    del parent[key[-1]]
    if len(key) > 1 and not parent and entry is not None and not entry.get("parent"):
        del obj[key[0]]  # an "env" cachediag itself added
    return "removed"


def _get(obj: Settings, key: Key) -> Any:
    node: Any = obj
    for part in key:
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def _parent(obj: Settings, key: Key, path: Path, *, create: bool) -> dict[str, Any]:
    node: Any = obj
    for part in key[:-1]:
        if create and part not in node:
            node[part] = {}
        node = node.get(part)
        if not isinstance(node, dict):
            raise CachediagError(f"{path}: its '{part}' is not a JSON object; not changed")
    result: dict[str, Any] = node
    return result


def _read_record(settings: Path) -> Settings:
    path = record_path(settings)
    try:
        raw = read_private(str(path), _LIMIT)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise CachediagError(
            f"{path}: cannot read cachediag's install record ({exc.strerror or exc}); "
            f"{settings} not changed"
        ) from exc
    record = parse_settings(decode(raw, path), path)
    if not isinstance(record.get("keys", {}), dict):
        raise CachediagError(f"{path}: not cachediag's install record; {settings} not changed")
    return record


def _write_record(settings: Path, record: Settings) -> None:
    path = record_path(settings)
    try:
        if record.get("keys"):
            replace_file(path, dump_settings(record).encode("utf-8"), 0o600, None)
        elif os.path.lexists(path):
            os.unlink(path)  # nothing of cachediag's left to undo
    except OSError as exc:
        raise CachediagError(
            f"{path}: cannot write cachediag's install record ({exc.strerror or exc})"
        ) from exc


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows)
        yield
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
