"""opencode's SQLite database, read as one consistent snapshot without disturbing the agent.

opencode (``opencode-ai`` 1.18) keeps every session in ``$XDG_DATA_HOME/opencode/
opencode.db`` (``~/.local/share`` without ``XDG_DATA_HOME``; ``OPENCODE_DB`` names another
file, relative to that folder; a non-release channel writes ``opencode-<channel>.db``). It
runs in WAL mode with a 5 s busy timeout while the agent is open, so the reader:

- opens the file read-only through a ``mode=ro`` URI: it never writes, never creates the
  file, and never takes a write lock the agent would wait on;
- reads every table inside one transaction, so the rows come from a single snapshot even
  while the agent appends (a WAL reader sees the last commit before its first read);
- turns "not a database", a missing ``message`` table and a database held busy into one
  ``OpencodeDbError`` line each, never a traceback.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

DB_GLOB = "opencode/opencode*.db"
_BUSY_TIMEOUT_S = 2.0
_NEEDED = ("session", "message", "part")
_STEP_PARTS = (
    # Only the step parts (text and tool output can be large); a row that is not JSON
    # comes back with empty data, to be counted as a bad row, not silently dropped.
    "SELECT id, message_id, session_id, time_created, d FROM ("
    " SELECT id, message_id, session_id, time_created, CASE WHEN json_valid(data) THEN"
    " CASE WHEN json_extract(data, '$.type') IN ('step-start', 'step-finish') THEN data END"
    " ELSE '' END AS d FROM part"
    ") WHERE d IS NOT NULL ORDER BY time_created, id"
)


class OpencodeDbError(Exception):
    """The file cannot be read as an opencode database (the message names it)."""

    def __init__(self, path: Path, reason: str, *, unreadable: bool = False) -> None:
        super().__init__(f"{path}: {reason}")
        self.reason = reason
        self.unreadable = unreadable
        """True when the file may be a database that could not be read (gone, no
        permission, busy); False when it is not an opencode database."""


@dataclass(frozen=True, slots=True)
class Row:
    id: str
    session_id: str
    time_created: int
    data: str
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class SessionRow:
    id: str
    parent_id: str | None
    directory: str | None
    title: str | None
    version: str | None
    time_created: int


@dataclass(slots=True)
class Snapshot:
    sessions: list[SessionRow]
    messages: list[Row]
    parts: list[Row]
    v2_assistants: list[Row] = field(default_factory=list)
    """``session_message`` rows of type ``assistant``: the event-sourced session state
    1.18 already migrates (one row per model call), empty unless that runner is on."""


def data_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME``, else ``~/.local/share`` (where opencode's folder lives)."""
    env = os.environ if environ is None else environ
    moved = env.get("XDG_DATA_HOME")
    if moved:
        return Path(moved).expanduser()
    return Path(env.get("HOME") or str(Path.home())) / ".local" / "share"


def default_databases(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The databases opencode writes for this user: ``OPENCODE_DB`` if set, else every
    ``opencode*.db`` of its data folder (one per release channel)."""
    env = os.environ if environ is None else environ
    base = data_home(env)
    named = env.get("OPENCODE_DB")
    if named and named != ":memory:":
        path = Path(named).expanduser()
        path = path if path.is_absolute() else base / "opencode" / path
        return [path] if path.is_file() else []
    return sorted(p for p in base.glob(DB_GLOB) if p.is_file() and not p.is_symlink())


def _connect(path: Path) -> sqlite3.Connection:
    try:
        info = path.stat()
    except OSError as exc:
        raise OpencodeDbError(
            path, f"cannot read: {exc.strerror or exc}", unreadable=True
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise OpencodeDbError(path, "not an opencode database (not a regular file)")
    uri = "file:" + quote(str(path.resolve())) + "?mode=ro"
    try:
        return sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise OpencodeDbError(path, f"cannot open: {exc}", unreadable=True) from None


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def _read(conn: sqlite3.Connection, path: Path) -> Snapshot:
    tables = _tables(conn)
    missing = [t for t in _NEEDED if t not in tables]
    if missing:
        raise OpencodeDbError(path, f"not an opencode database (no {', '.join(missing)} table)")
    cols = _columns(conn, "session")
    parent = "parent_id" if "parent_id" in cols else "NULL"
    optional = {c: c if c in cols else "NULL" for c in ("directory", "title", "version")}
    sessions = [
        SessionRow(str(r[0]), r[1], r[2], r[3], r[4], int(r[5] or 0))
        for r in conn.execute(
            f"SELECT id, {parent}, {optional['directory']}, {optional['title']}, "
            f"{optional['version']}, time_created FROM session ORDER BY time_created, id"
        )
    ]
    messages = [
        Row(str(r[0]), str(r[1]), int(r[2] or 0), str(r[3]))
        for r in conn.execute(
            "SELECT id, session_id, time_created, data FROM message ORDER BY time_created, id"
        )
    ]
    parts = [
        Row(str(r[0]), str(r[2]), int(r[3] or 0), str(r[4]), message_id=str(r[1]))
        for r in conn.execute(_STEP_PARTS)
    ]
    v2 = []
    if "session_message" in tables:
        v2 = [
            Row(str(r[0]), str(r[1]), int(r[2] or 0), str(r[3]))
            for r in conn.execute(
                "SELECT id, session_id, time_created, data FROM session_message"
                " WHERE type = 'assistant' ORDER BY session_id, seq"
            )
        ]
    return Snapshot(sessions, messages, parts, v2)


def read_snapshot(path: Path) -> Snapshot:
    """Sessions, messages and the step parts of one database, from one snapshot."""
    conn = _connect(path)
    try:
        conn.execute("BEGIN")  # deferred: the first SELECT fixes the snapshot, no lock taken
        try:
            return _read(conn, path)
        finally:
            conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        text = str(exc)
        if "locked" in text or "busy" in text:
            raise OpencodeDbError(
                path,
                "the database is busy (opencode is writing to it); try again",
                unreadable=True,
            ) from None
        raise OpencodeDbError(path, f"cannot read: {text}", unreadable=True) from None
    except sqlite3.DatabaseError as exc:
        raise OpencodeDbError(path, f"not an opencode database ({exc})") from None
    finally:
        conn.close()
