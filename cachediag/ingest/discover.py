"""Where the logs are: a file, a session, a project folder or the whole projects tree."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from cachediag.errors import InputError
from cachediag.ingest.lines import BadLine, parse_line
from cachediag.ingest.transcript import agent_kind
from cachediag.model import StreamKind


@dataclass(slots=True)
class AgentFile:
    path: Path
    stream_id: str
    kind: StreamKind


@dataclass(slots=True)
class SessionSource:
    """The files of one session: the main transcript (may be missing) and its agents."""

    session_id: str
    main: Path | None
    agents: list[AgentFile] = field(default_factory=list)
    project: str | None = None
    explicit: bool = False
    """Named by the user on the command line (errors are then fatal, not warnings)."""
    pin_main: bool = False
    """Every line of ``main`` is the main stream (an agent file analysed on its own)."""

    @property
    def source(self) -> str:
        if self.main is not None:
            return str(self.main)
        return str(self.agents[0].path.parent) if self.agents else self.session_id


def claude_projects_dirs() -> list[Path]:
    """``$CLAUDE_CONFIG_DIR/projects`` (comma-separated dirs allowed) or ``~/.claude/projects``."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    bases = [Path(p).expanduser() for p in configured.split(",") if p.strip()] if configured else []
    if not bases:
        bases = [Path.home() / ".claude"]
    return [base / "projects" for base in bases]


def _agent_file(path: Path) -> AgentFile:
    agent_id = path.stem.removeprefix("agent-")
    return AgentFile(path, f"agent-{agent_id}", agent_kind(agent_id))


def first_session_id(path: Path) -> str | None:
    try:
        with path.open("rb") as fp:
            for _, raw in zip(range(20), fp, strict=False):
                try:
                    value = parse_line(raw).get("sessionId")
                except BadLine:
                    continue
                if isinstance(value, str) and value:
                    return value
    except OSError:
        return None
    return None


def sessions_in_dir(root: Path) -> list[SessionSource]:
    """Every session below ``root``, subagent files attached to their parent session."""
    sessions: dict[Path, SessionSource] = {}

    def session_at(folder: Path, session_id: str) -> SessionSource:
        key = folder / session_id
        found = sessions.get(key)
        if found is None:
            main = folder / f"{session_id}.jsonl"
            found = SessionSource(session_id, main if main.is_file() else None, project=folder.name)
            sessions[key] = found
        return found

    for path in sorted(root.rglob("*.jsonl")):
        if not path.is_file():
            continue
        parts = path.relative_to(root).parts
        if "subagents" in parts[:-1]:
            # <project>/<session>/subagents/[workflows/...]/agent-<id>.jsonl
            idx = len(parts) - 1 - parts[::-1].index("subagents")
            session_dir = root.joinpath(*parts[:idx])
            session_at(session_dir.parent, session_dir.name).agents.append(_agent_file(path))
        elif path.name.startswith("agent-"):
            # Claude Code 2.0 wrote agent files beside the sessions; the lines say whose.
            parent = first_session_id(path) or path.stem
            session_at(path.parent, parent).agents.append(_agent_file(path))
        else:
            session_at(path.parent, path.stem)
    return [s for s in sessions.values() if s.main is not None or s.agents]


def sessions_for_file(path: Path) -> SessionSource:
    """A file named by the user: a main transcript plus its ``<stem>/subagents`` folder."""
    if "subagents" in path.parts[:-1] or path.name.startswith("agent-"):
        # An agent file on its own: its requests are the conversation being asked about.
        return SessionSource(
            path.stem, path, explicit=True, project=path.resolve().parent.name, pin_main=True
        )
    source = SessionSource(path.stem, path, project=path.resolve().parent.name, explicit=True)
    subagents = path.with_suffix("") / "subagents"
    if subagents.is_dir():
        source.agents = [_agent_file(p) for p in sorted(subagents.rglob("*.jsonl"))]
    return source


def discover(paths: list[Path]) -> list[SessionSource]:
    found: list[SessionSource] = []
    for path in paths:
        if path.is_file():
            found.append(sessions_for_file(path))
        elif path.is_dir():
            if (path / "subagents").is_dir() and not any(path.glob("*.jsonl")):
                # A session folder: its main transcript sits beside it.
                found.extend(s for s in sessions_in_dir(path.parent) if s.session_id == path.name)
            else:
                found.extend(sessions_in_dir(path))
        elif not path.exists():
            raise InputError(f"{path}: no such file or directory")
        else:
            raise InputError(f"{path}: not a regular file or directory")
    return found
