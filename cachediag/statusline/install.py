"""Writing the ``statusLine`` entry into Claude Code's settings.json, safely.

Idempotent, keeps a backup of the file it changes, and never replaces somebody else's
status line unless told to; ``uninstall`` puts back the one the user had. How the file is
written (atomically, keeping its mode, owner and symlink, with a backup named by the
time) is ``cachediag.claude_settings``; what was there before, ``cachediag.settings_undo``.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachediag.errors import CachediagError
from cachediag.safefiles import make_dirs, open_regular, write_atomic
from cachediag.settings_undo import MISSING, Undone, install_key, uninstall_key

SCRIPTS = {
    "jq": "prompt-cache.sh",
    "cachediag-jq": "cachediag-json.sh",
}
"""``--script`` names -> the ready-made scripts (shipped in the package; the repository's
``statusline/`` links to them)."""
SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"
KEY = ("statusLine",)


@dataclass(slots=True, frozen=True)
class Installed:
    settings: Path
    command: str
    changed: bool
    backup: Path | None


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


LAUNCHER = "cachediag-statusline"
"""Written beside the copied scripts: ``fast_argv`` as one executable, for
``cachediag-json.sh`` to call by absolute path."""


def script_command(name: str, settings: Path) -> str:
    """Copy a ready-made script next to the settings and return the command running it.

    Claude Code may run the command with a minimal ``PATH`` (``/usr/bin:/bin`` when it was
    started from a desktop launcher or an IDE), where neither ``cachediag`` nor a jq from
    Homebrew is found: the command names bash, jq and the status line by absolute path.
    """
    source = Path(name).expanduser()
    if name in SCRIPTS:
        source = SCRIPTS_DIR / SCRIPTS[name]
    if not source.is_file():
        known = ", ".join(sorted(SCRIPTS))
        raise CachediagError(f"--script {name}: no such script (known: {known}, or a path)")
    folder = settings.parent / "cachediag"
    launcher = folder / LAUNCHER
    try:
        _copy_scripts(source, folder, together=name in SCRIPTS)
        launch = f'#!/bin/sh\nexec {shlex.join(fast_argv())} "$@"\n'
        write_atomic(str(launcher), launch.encode(), 0o755)
    except OSError as exc:
        raise CachediagError(
            f"{exc.filename or folder}: cannot write the status line's scripts "
            f"({exc.strerror or exc}); settings not changed"
        ) from exc
    env = [f"CACHEDIAG={shlex.quote(str(launcher))}"]
    jq = shutil.which("jq")
    if jq is not None:
        env.append(f"JQ={shlex.quote(str(Path(jq).resolve()))}")
    bash = shutil.which("bash") or "/bin/bash"
    return " ".join([*env, shlex.quote(bash), shlex.quote(str(folder / source.name))])


def _copy_scripts(source: Path, folder: Path, *, together: bool) -> None:
    """The ready-made scripts call each other (cachediag-json.sh formats with
    prompt-cache.sh), so they travel together. Each is a new file renamed into place: a
    link already there (planted or not) is replaced, never written through."""
    make_dirs(str(folder))
    for script in {source, *(SCRIPTS_DIR / n for n in SCRIPTS.values())} if together else {source}:
        with open_regular(str(script)) as fp:
            write_atomic(str(folder / script.name), fp.read(), 0o755)


def _is_ours(entry: Any) -> bool:
    command = entry.get("command") if isinstance(entry, dict) else None
    return isinstance(command, str) and "cachediag" in command


def install(settings: Path, command: str, *, force: bool = False) -> Installed:
    entry = {"type": "command", "command": command, "padding": 0}

    def compute(current: Any) -> Any:
        if isinstance(current, dict) and current.get("command") == command:
            return None
        if current is not MISSING and not _is_ours(current) and not force:
            raise CachediagError(
                f"{settings} already has a different statusLine; pass --force to replace it "
                "(uninstall puts it back)"
            )
        return {**(current if isinstance(current, dict) else {}), **entry}

    done = install_key(settings, KEY, compute, _is_ours)
    return Installed(settings, command, changed=done.changed, backup=done.backup)


def uninstall(settings: Path) -> Undone:
    """The statusLine the user had before cachediag back, or none if there was none."""
    return uninstall_key(settings, KEY, _is_ours)


def uninstall_command(args: list[str]) -> int:
    """``statusline uninstall [--settings PATH]`` without click (``entry`` sends the
    status line's arguments to ``fast``): the line click's command prints, ``Error:`` and
    1 when refused, 2 for a wrong argument."""
    from cachediag.claude_settings import settings_path

    explicit = None
    it = iter(args)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name == "--settings":
            value = value if eq else next(it, "")
            if value:
                explicit = Path(value)
                continue
        print("Error: usage: cachediag statusline uninstall [--settings PATH]", file=sys.stderr)
        return 2
    try:
        print(uninstall(settings_path(explicit)).line("statusLine"))
    except CachediagError as exc:
        from cachediag.text import sanitize

        print(f"Error: {sanitize(str(exc), 500)}", file=sys.stderr)
        return 1
    return 0
