"""Writing the ``statusLine`` entry into Claude Code's settings.json, safely.

Idempotent, keeps a backup of the file it changes, and never replaces somebody else's
status line unless told to. Writes atomically so a crash cannot leave half a settings file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachediag.errors import CachediagError
from cachediag.safefiles import NOFOLLOW

SCRIPTS = {
    "jq": "prompt-cache.sh",
    "cachediag-jq": "cachediag-json.sh",
}
"""``--script`` names -> the ready-made scripts (shipped in the package; the repository's
``statusline/`` links to them)."""
SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"


@dataclass(slots=True, frozen=True)
class Installed:
    settings: Path
    command: str
    changed: bool
    backup: Path | None


def settings_path(explicit: Path | None = None) -> Path:
    if explicit is not None:
        return explicit.expanduser()
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").split(",")[0].strip()
    base = Path(configured).expanduser() if configured else Path.home() / ".claude"
    return base / "settings.json"


def fast_argv() -> list[str]:
    """Run the status line without ``site`` (no .pth files: ~30 ms less per run on the
    reference machine), with the package and the fast JSON parser put on the path."""
    import cachediag

    paths = [str(Path(cachediag.__file__).resolve().parents[1])]
    try:
        import orjson

        paths.append(str(Path(orjson.__file__).resolve().parents[1]))
    except ImportError:
        pass
    # Appended, not prepended: the standard library is then found on the first try.
    code = (
        f"import sys;sys.path+={list(dict.fromkeys(paths))!r};"
        "from cachediag.statusline.fast import main;main()"
    )
    # -I: neither the current folder (Claude Code runs us in the user's project, which may
    # hold a json.py or a cachediag/) nor PYTHON* variables change what is imported.
    return [sys.executable, "-I", "-S", "-c", code]


def fast_command() -> str:
    """``fast_argv`` for a shell, printing ``cache ?`` should that Python ever vanish."""
    return f"{shlex.join(fast_argv())} || echo 'cache ?'"


def script_command(name: str, settings: Path) -> str:
    """Copy a ready-made script next to the settings and return the command running it."""
    source = Path(name).expanduser()
    if name in SCRIPTS:
        source = SCRIPTS_DIR / SCRIPTS[name]
    if not source.is_file():
        known = ", ".join(sorted(SCRIPTS))
        raise CachediagError(f"--script {name}: no such script (known: {known}, or a path)")
    folder = settings.parent / "cachediag"
    folder.mkdir(parents=True, exist_ok=True)
    # The ready-made scripts call each other (cachediag-json.sh formats with
    # prompt-cache.sh), so they travel together.
    for script in (
        {source, *(SCRIPTS_DIR / n for n in SCRIPTS.values())} if name in SCRIPTS else {source}
    ):
        shutil.copyfile(script, folder / script.name)
        (folder / script.name).chmod(0o755)
    return f"bash {shlex.quote(str(folder / source.name))}"


def _is_ours(entry: Any) -> bool:
    command = entry.get("command") if isinstance(entry, dict) else None
    return isinstance(command, str) and "cachediag" in command


def install(settings: Path, command: str, *, force: bool = False) -> Installed:
    settings_obj: dict[str, Any] = {}
    if settings.exists():
        try:
            if not settings.is_file():
                raise OSError("not a regular file")
            loaded = json.loads(settings.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError, RecursionError) as exc:
            raise CachediagError(
                f"{settings}: cannot read it as JSON ({exc}); not changed"
            ) from exc
        if not isinstance(loaded, dict):
            raise CachediagError(f"{settings}: not a JSON object; not changed")
        settings_obj = loaded
    entry = {"type": "command", "command": command, "padding": 0}
    current = settings_obj.get("statusLine")
    if isinstance(current, dict) and current.get("command") == command:
        return Installed(settings, command, changed=False, backup=None)
    if current is not None and not _is_ours(current) and not force:
        raise CachediagError(
            f"{settings} already has a different statusLine; pass --force to replace it "
            "(a backup is kept)"
        )
    target = Path(os.path.realpath(settings))  # a link into a dotfiles repo stays a link
    backup = None
    if target.exists():
        backup = settings.with_name(settings.name + ".bak")
        _write_like(backup, target.read_bytes(), target)
    settings_obj["statusLine"] = {**(current if isinstance(current, dict) else {}), **entry}
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(settings_obj, indent=2) + "\n"
    _write_like(target, text.encode("utf-8"), target if target.exists() else None)
    return Installed(settings, command, changed=True, backup=backup)


def _write_like(path: Path, data: bytes, like: Path | None) -> None:
    """Replace ``path`` atomically with ``data``, keeping the mode and owner of ``like``
    (settings.json may hold an API key: a 0600 file stays 0600); a new file is 0600."""
    mode, owner = 0o600, None
    if like is not None:
        st = like.stat()
        mode, owner = stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as fp:
            fp.write(data)
            if owner is not None and hasattr(os, "fchown"):
                with contextlib.suppress(PermissionError):  # only root may give files away
                    os.fchown(fp.fileno(), *owner)
            os.fchmod(fp.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
