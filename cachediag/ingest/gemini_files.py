"""Where Gemini CLI keeps its chats, and which files make one session.

The CLI's home is ``$GEMINI_CLI_HOME`` when set (it replaces the user's home: the chats
are then under ``$GEMINI_CLI_HOME/.gemini``), else ``~``. Chats live in
``.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl``, and the project's
real path in ``.gemini/tmp/<project>/.project_root``. A resume that starts in a new minute
writes a second file for the same session id: files are grouped by the ``sessionId`` of
their header line (the name's ``<id8>`` when a file has none).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from cachediag.ingest.gemini import FILE_ID, read_chat_lines
from cachediag.model import MAIN_STREAM, LineIssue, RequestRecord, SessionLog, StreamKind

PATTERN = ".gemini/tmp/*/chats/session-*.json*"
"""``.jsonl`` chats, and the whole-file ``.json`` ones of earlier releases."""
_SUFFIXES = (".json", ".jsonl")
HOME_ENV = "GEMINI_CLI_HOME"
_HEAD_BYTES = 64 * 1024
_ROOT_BYTES = 4096


def gemini_base(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    moved = env.get(HOME_ENV)
    if moved:
        return Path(moved).expanduser()
    return Path(env.get("HOME") or str(Path.home()))


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def chat_files(base: Path) -> list[Path]:
    """Every chat file under a home, never through a link, oldest name first."""
    return sorted(p for p in base.glob(PATTERN) if p.suffix in _SUFFIXES and _regular(p))


def session_key(path: Path) -> str:
    """The session a file belongs to, as the CLI names its files: the first 8 characters
    of the header's ``sessionId`` (a whole-file ``.json`` has none on its first line: the
    name's ``<id8>``), the name itself when neither says."""
    try:
        with path.open("rb") as handle:
            head = handle.readline(_HEAD_BYTES)
        obj = json.loads(head)
        if isinstance(obj, dict) and isinstance(obj.get("sessionId"), str):
            return str(obj["sessionId"])[:8]
    except (OSError, ValueError, RecursionError):
        pass
    found = FILE_ID.match(path.name)
    return found.group(1) if found else path.name


def group_sessions(paths: Iterable[Path]) -> list[list[Path]]:
    """Files of one session together (per folder), each group oldest name first."""
    groups: dict[tuple[Path, str], list[Path]] = {}
    for path in sorted(paths):
        groups.setdefault((path.parent, session_key(path)), []).append(path)
    return list(groups.values())


def project_root(chats_dir: Path) -> str | None:
    """The working folder the CLI ran in, from ``<project>/.project_root``."""
    marker = chats_dir.parent / ".project_root"
    if not _regular(marker):
        return None
    try:
        with marker.open("rb") as handle:
            text = handle.read(_ROOT_BYTES).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return text or None


def _lines_of(path: Path) -> list[bytes]:
    """A file's lines; a whole-file ``.json`` chat (releases before JSON Lines; 0.61 still
    resumes them, copying them into a ``.jsonl`` beside) as a header and its history."""
    data = path.read_bytes()
    if path.suffix != ".json":
        return data.splitlines()
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return data.splitlines()  # reported line by line
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return data.splitlines()
    return [json.dumps(doc).encode()]  # a header with its history


def read_session_files(paths: list[Path]) -> SessionLog:
    """One session from all of its files; a file that cannot be read is named, not fatal."""
    contents: list[tuple[str, Iterable[bytes]]] = []
    unreadable: list[LineIssue] = []
    for path in paths:
        try:
            contents.append((str(path), _lines_of(path)))
        except OSError as exc:
            unreadable.append(LineIssue(str(path), 0, f"cannot read: {exc.strerror or exc}"))
    log = read_chat_lines(contents or [(str(paths[0]), [])])
    log.unreadable.extend(unreadable)
    if paths:
        log.project = paths[0].parent.parent.name
        log.cwd = project_root(paths[0].parent)
        _add_subagents(log, paths[0].parent)
    return log


def _add_subagents(log: SessionLog, chats: Path) -> None:
    """A subagent's calls (``invoke_agent``) are billed too: its chat is
    ``chats/<parent sessionId>/<its sessionId>.jsonl``, one subagent stream each."""
    folder = chats / log.session_id
    if not log.session_id or not folder.is_dir() or folder.is_symlink():
        return
    for path in sorted(p for p in folder.glob("*.jsonl") if _regular(p)):
        try:
            sub = read_chat_lines([(str(path), path.read_bytes().splitlines())])
        except OSError as exc:
            log.unreadable.append(LineIssue(str(path), 0, f"cannot read: {exc.strerror or exc}"))
            continue
        log.issues.extend(sub.issues)
        stream = log.stream(path.stem, StreamKind.SUBAGENT, source=str(path))
        for record in sub.streams[MAIN_STREAM].items:
            if isinstance(record, RequestRecord):
                record.stream = path.stem
            stream.items.append(record)


def read_chat(path: Path) -> SessionLog:
    """The whole session ``path`` belongs to (its sibling files with the same session id)."""
    key = session_key(path)
    siblings = [p for p in chat_files_in(path.parent) if session_key(p) == key]
    return read_session_files(siblings or [path])


def chat_files_in(folder: Path) -> list[Path]:
    found = folder.glob("session-*.json*")
    return sorted(p for p in found if p.suffix in _SUFFIXES and _regular(p))


def read_gemini_home(base: Path) -> list[SessionLog]:
    """Every session under a home (``gemini_base()``), one log per session id."""
    return [read_session_files(group) for group in group_sessions(chat_files(base))]
