"""Where each coding agent keeps its sessions, and which reader reads them: one table.

``cachediag analyze --agent NAME`` with no path reads ``sessions(NAME)``: the files under
the agent's home (its environment override, else the default under ``$HOME``) that match
its pattern. Claude Code's own discovery (projects, subagents, continued sessions) stays
in ``ingest.discover``; its row here names its home for ``--agent all``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from cachediag.model import SessionLog

Reader = Callable[[Path], SessionLog]
ManyReader = Callable[[Path], list[SessionLog]]


@dataclass(frozen=True, slots=True)
class Agent:
    name: str
    default_home: str
    """Relative to ``$HOME``."""
    env: str | None
    """The variable that moves the home, when the agent has one."""
    pattern: str
    """Glob of session files under the home."""
    reader: Reader | None
    """``None``: read by the Claude Code pipeline (``ingest.reader``)."""
    format: str
    many: ManyReader | None = None
    """For a file that holds many sessions (opencode's database): every session in it;
    ``reader`` is then ``None``. ``read_logs`` reads a file with whichever is set."""
    label: str = ""
    """The agent's name for people (tables, the report)."""

    def home(self, environ: dict[str, str] | None = None) -> Path:
        env = os.environ if environ is None else environ
        moved = env.get(self.env) if self.env else None
        if moved:
            return Path(moved).expanduser()
        base = env.get("HOME") or str(Path.home())
        return Path(base) / self.default_home


def _codex(path: Path) -> SessionLog:
    # Imported when read: the CLI builds its --agent choices from this table at start.
    from cachediag.ingest.codex import read_rollout

    return read_rollout(path)


def _gemini(path: Path) -> SessionLog:
    from cachediag.ingest.gemini_files import read_chat  # the whole session of that file

    return read_chat(path)


def _opencode(path: Path) -> list[SessionLog]:
    from cachediag.ingest.opencode import read_database_logs  # every session in the db

    return read_database_logs(path)


AGENTS: dict[str, Agent] = {
    a.name: a
    for a in (
        Agent(
            "claude",
            ".claude",
            "CLAUDE_CONFIG_DIR",
            "projects/*/*.jsonl",
            None,
            "claude-code",
            label="Claude Code",
        ),
        Agent(
            "codex",
            ".codex",
            "CODEX_HOME",
            "sessions/*/*/*/rollout-*.jsonl",
            _codex,
            "codex-rollout",
            label="Codex CLI",
        ),
        # GEMINI_CLI_HOME replaces the user's home: the chats are under its .gemini.
        Agent(
            "gemini",
            "",
            "GEMINI_CLI_HOME",
            ".gemini/tmp/*/chats/session-*.json*",  # ingest.gemini_files.PATTERN
            _gemini,
            "gemini-cli",
            label="Gemini CLI",
        ),
        # XDG_DATA_HOME replaces ~/.local/share; one database holds every session.
        Agent(
            "opencode",
            ".local/share",
            "XDG_DATA_HOME",
            "opencode/opencode*.db",  # ingest.opencode_db.DB_GLOB
            None,
            "opencode",
            many=_opencode,
            label="opencode",
        ),
    )
}


FORMAT_AGENT = {
    "codex-rollout": "codex",
    "gemini-cli": "gemini",
    "opencode": "opencode",
    "opencode-auto": "opencode",
}
"""Each agent reader's formats (``FORMAT`` of ingest.codex, .gemini, .opencode); every
other format (transcripts, captures, OpenTelemetry, request logs) is Claude Code's."""


def agent_of(log_format: str) -> str:
    """The agent whose log a session's ``SessionLog.format`` names."""
    return FORMAT_AGENT.get(log_format, "claude")


def agent_named(name: str) -> str | None:
    """The agent (not Claude Code) whose session files are named like ``name`` (the last
    part of its pattern): read with that agent's reader, and as any other log when its
    lines turn out not to be that agent's."""
    for agent in AGENTS.values():
        if agent.reader is None and agent.many is None:
            continue
        if fnmatchcase(name, agent.pattern.rsplit("/", 1)[-1]):
            return agent.name
    return None


def is_session(log: SessionLog) -> bool:
    """An agent reader found a session in the file (requests, or at least where it ran):
    not a stray file under a matching name."""
    return any(s.items for s in log.streams.values()) or log.cwd is not None


def not_a_log(agent: str, path: Path, logs: list[SessionLog]) -> str:
    """Why a file named for ``agent`` is refused: its first skipped line says."""
    first = next((issue for log in logs for issue in log.issues), None)
    why = f" (line {first.line}: {first.reason})" if first else " (empty)"
    article = "an" if agent[:1] in "aeiou" else "a"
    return f"{path}: not {article} {agent} session log{why}"


def agent_names() -> list[str]:
    return list(AGENTS)


def session_files(name: str, environ: dict[str, str] | None = None) -> list[Path]:
    """The agent's session files, oldest name first; none when its home does not exist."""
    agent = AGENTS[name]
    home = agent.home(environ)
    if not home.is_dir():
        return []
    return sorted(p for p in home.glob(agent.pattern) if p.is_file() and not p.is_symlink())


def session_folders(name: str, environ: dict[str, str] | None = None) -> list[Path]:
    """The folders the agent's session files are in (its pattern's folders), for the
    history read with no path: walked as Claude Code's projects are, so that a file in
    them that holds no session (empty, half written) is passed over, not an error."""
    agent = AGENTS[name]
    home = agent.home(environ)
    if not home.is_dir():
        return []
    folders, files = agent.pattern.rsplit("/", 1)
    # A folder the agent made but holds none of its session files yet is no history.
    found = (p for p in home.glob(folders) if p.is_dir() and not p.is_symlink())
    return sorted(p for p in found if next(p.glob(files), None) is not None)


def read_agent_sessions(name: str, environ: dict[str, str] | None = None) -> list[SessionLog]:
    """Every session of an agent with its own reader (not Claude Code: see ``reader``)."""
    return [log for path in session_files(name, environ) for log in read_logs(name, path)]


def read_logs(name: str, path: Path) -> list[SessionLog]:
    """The sessions of one of the agent's files (one, or every session of a database)."""
    agent = AGENTS[name]
    if agent.many is not None:
        return agent.many(path)
    if agent.reader is None:
        raise ValueError(f"{name} sessions are read by the Claude Code pipeline")
    return [agent.reader(path)]
