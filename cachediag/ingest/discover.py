"""Where the logs are: a file, a session, a project folder or the whole projects tree.

A session is one session however many places hold it: the same session id in two
config dirs, in copied project folders or in a backup is one ``SessionSource`` whose
files are read together, each response once (formats.md §1).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from cachediag.errors import InputError
from cachediag.ingest.agents import agent_named
from cachediag.ingest.files import open_found
from cachediag.ingest.jsonl import BadLine, parse_line
from cachediag.ingest.transcript import agent_kind
from cachediag.ingest.walk import FileStat, OnError, jsonl_files, walk_jsonl
from cachediag.model import LineIssue, StreamKind

_SESSION_NAME = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
"""How Claude Code names a session's file: its session id."""


@dataclass(slots=True)
class AgentFile:
    """A subagent's (or compaction's) transcript file and the stream it holds."""

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
    copies: list[Path] = field(default_factory=list)
    """Other files holding the same main transcript (a backup, a copied project folder, a
    second config dir): read with ``main``, each response once. ``agents`` may likewise
    name one stream in several files."""
    key: str = ""
    """What makes two files one session: the session id, or the path when none is known."""
    named: str | None = None
    """The session id the lines of a file under another name give."""
    stats: dict[str, FileStat] = field(default_factory=dict)
    """(size, mtime) of its files as the folder walk saw them, by path: the fork decision,
    the work's order and the oldest copy need no stat of their own."""
    reader: str | None = None
    """The other agent (``ingest.agents``) whose session file ``main`` is named as: read
    with that agent's reader first. ``None``: Claude Code's, or any log ``detect`` knows."""
    strict: bool = False
    """``reader`` was asked for (``--agent``): a file that is not its log is an error,
    not read as another log."""

    @property
    def source(self) -> str:
        if self.main is not None:
            return str(self.main)
        return str(self.agents[0].path.parent) if self.agents else self.session_id

    @property
    def mains(self) -> list[Path]:
        main = self.main
        if not self.copies:  # most sessions: built for every one of them, several times
            return [] if main is None else [main]
        return ([] if main is None else [main]) + self.copies

    @property
    def paths(self) -> list[Path]:
        if not self.agents:
            return self.mains
        return [*self.mains, *(a.path for a in self.agents)]

    def stat(self, path: Path) -> FileStat | None:
        """(size, mtime) of one of its files: as discovery saw it, else from a stat now
        (``None`` when that fails: the file vanished or cannot be reached)."""
        found = self.stats.get(str(path))
        if found is not None:
            return found
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_size, st.st_mtime


def claude_projects_dirs() -> list[Path]:
    """Where Claude Code keeps its history, as ccusage reads it: each dir of
    ``$CLAUDE_CONFIG_DIR`` (comma-separated) when set, else both
    ``$XDG_CONFIG_HOME/claude`` (``~/.config/claude``) and ``~/.claude``; ``projects``
    below each. The same folder named twice (or through a link) is listed once."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    bases = [Path(p.strip()).expanduser() for p in configured.split(",") if p.strip()]
    if not bases:
        xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
        config = Path(xdg).expanduser() if xdg else Path.home() / ".config"
        bases = [config / "claude", Path.home() / ".claude"]
    dirs: list[Path] = []
    seen: set[Path] = set()
    for base in bases:
        projects = base / "projects"
        real = projects.resolve()
        if real not in seen:
            seen.add(real)
            dirs.append(projects)
    return dirs


def _agent_file(path: Path) -> AgentFile:
    agent_id = path.stem.removeprefix("agent-")
    return AgentFile(path, f"agent-{agent_id}", agent_kind(agent_id))


def first_session_id(path: Path) -> str | None:
    try:
        with open_found(path) as fp:
            for _ in range(20):
                # Held to 1 MiB: an envelope names its session early; a longer line is
                # not read whole here (a newline-free 1 GB file costs nothing).
                raw = fp.readline(1 << 20)
                if not raw:
                    break
                if not raw.endswith(b"\n") and len(raw) == 1 << 20:
                    while (rest := fp.readline(1 << 20)) and not rest.endswith(b"\n"):
                        pass
                    continue
                try:
                    value = parse_line(raw).get("sessionId")
                except BadLine:
                    continue
                if isinstance(value, str) and value:
                    return value
    except OSError:
        return None
    return None


def only_sidechain_lines(path: Path) -> bool:
    """True when every line of a transcript that says is a sidechain line: a subagent's
    own file (2.1 ``subagents/agent-*.jsonl``, a 2.0 ``agent-*.jsonl``), whatever its name.

    A byte search, for files named on the command line only: a main transcript says
    ``false`` on its first lines, so only a subagent's (small) file is read to its end."""
    seen_true = False
    tail = b""
    try:
        with open_found(path) as fp:
            while block := fp.read(1 << 20):
                data = tail + block
                if b'"isSidechain":false' in data or b'"isSidechain": false' in data:
                    return False
                seen_true = (
                    seen_true or b'"isSidechain":true' in data or (b'"isSidechain": true' in data)
                )
                tail = data[-32:]  # a needle cut by the chunk boundary
    except OSError:
        return False
    return seen_true


def _main_key(path: Path) -> tuple[str, str, str | None]:
    """(key, session id, id its lines name) of a main transcript. A file named after a
    session id is that session. Under another name, copies (same name, same id inside)
    are one session, which ``Discovery.result`` joins to the session its lines name when
    a file of that session was found too (a backup, a renamed copy)."""
    stem = path.stem
    if _SESSION_NAME.fullmatch(stem):
        return stem, stem, None
    named = first_session_id(path)
    key = f"named:{path.name}\0{named}" if named else f"path:{path}"
    return key, stem, named


def _session_dir_key(folder: Path) -> tuple[str, str]:
    """(key, session id) of the session a ``<session>/subagents`` folder belongs to: that
    of the main transcript beside it, which may name another session in its lines."""
    main = folder.parent / f"{folder.name}.jsonl"
    if not _SESSION_NAME.fullmatch(folder.name) and main.is_file():
        return _main_key(main)[:2]
    return folder.name, folder.name


@dataclass(slots=True)
class Discovery:
    """Sessions found so far, merged by session across every path of a run."""

    on_error: OnError | None = None
    sessions: dict[str, SessionSource] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)
    """Every file taken, by real path: a path named twice (or inside another) is read once."""

    def result(self) -> list[SessionSource]:
        """The sessions found; a file under another name joins the session its lines name
        when a file of that session was found too. Files that share a session id and
        nothing else (hand-made examples often reuse one) stay apart."""
        for key, src in list(self.sessions.items()):
            if src.named is None or src.main is None:
                continue
            target = self.sessions.get(src.named)
            if target is None or target is src:
                continue
            if target.main is None:
                target.main = src.main
            else:
                target.copies.append(src.main)
            target.copies.extend(src.copies)
            target.agents.extend(src.agents)
            target.stats.update(src.stats)
            target.explicit = target.explicit or src.explicit
            del self.sessions[key]
        return [s for s in self.sessions.values() if s.main is not None or s.agents]

    def _new(self, real: str) -> bool:
        if real in self.files:
            return False
        self.files.add(real)
        return True

    def _session(self, key: str, session_id: str, project: str | None) -> SessionSource:
        found = self.sessions.get(key)
        if found is None:
            found = self.sessions[key] = SessionSource(session_id, None, project=project, key=key)
        return found

    def add_main(self, path: Path, project: str, *, explicit: bool = False) -> SessionSource:
        key, session_id, named = _main_key(path)
        src = self._session(key, session_id, project)
        src.named = named
        if src.main is None:
            src.main = path
        else:
            src.copies.append(path)
        src.explicit = src.explicit or explicit
        return src

    def add_agent(self, path: Path, session_id: str, project: str | None) -> SessionSource:
        src = self._session(session_id, session_id, project)
        src.agents.append(_agent_file(path))
        return src

    def add_agent_file(self, path: Path, agent: str, project: str) -> SessionSource:
        """Another agent's session file: a source of its own (its reader finds the
        sessions in it; a Gemini CLI chat resumed in a second file is joined there)."""
        key = f"{agent}:{path}"
        src = self.sessions[key] = SessionSource(path.stem, path, project=project, key=key)
        src.reader = agent
        return src

    def add_unwalked(self, root: Path) -> None:
        """Other agents' files the folder walk does not list (it lists ``*.jsonl``):
        opencode's databases where opencode keeps them (its data folder, or the folder
        that holds that), and a Gemini CLI chats folder's older ``session-*.json`` files,
        rather than a search of the whole tree."""
        found = [(p, "opencode") for f in (root, root / "opencode") for p in f.glob("opencode*.db")]
        if root.name == "chats":
            found += [(p, "gemini") for p in root.glob("session-*.json")]
        for path, agent in sorted(found):
            if path.is_file() and not path.is_symlink() and self._new(os.path.realpath(path)):
                self.add_agent_file(path, agent, path.parent.name)

    def add_dir(self, root: Path) -> None:
        # Only the root is resolved (once, not per file): the walk follows no links.
        real_root = os.path.realpath(root)
        # os.path.join(real_root, rel), without its cost per file (rel is never absolute).
        prefix = real_root if real_root.endswith("/") else real_root + "/"
        root_name = root.name
        sessions = self.sessions
        for path, rel, st in walk_jsonl(root, self.on_error):
            if not self._new(prefix + rel):
                continue
            parts = rel.split("/")
            stem = parts[-1][:-6]
            if (
                len(parts) == 2
                and parts[0] != "subagents"
                and stem not in sessions
                and _SESSION_NAME.fullmatch(stem)
            ):
                # <project>/<session id>.jsonl seen first, most files of a history: what
                # add_main makes of it, without working its name out again.
                src = sessions[stem] = SessionSource(stem, path, project=parts[0], key=stem)
            elif "subagents" in parts[:-1]:
                # <project>/<session>/subagents/[workflows/...]/agent-<id>.jsonl
                idx = len(parts) - 1 - parts[::-1].index("subagents")
                session_dir = root.joinpath(*parts[:idx])
                key, session_id = _session_dir_key(session_dir)
                src = self._session(key, session_id, session_dir.parent.name)
                src.agents.append(_agent_file(path))
            elif (agent := agent_named(parts[-1])) is not None:
                src = self.add_agent_file(path, agent, parts[-2] if len(parts) > 1 else root_name)
            else:
                project = parts[-2] if len(parts) > 1 else root_name
                if parts[-1].startswith("agent-"):
                    # Claude Code 2.0 wrote agent files beside the sessions; the lines say
                    # whose.
                    parent = first_session_id(path) or path.stem
                    src = self.add_agent(path, parent, project)
                else:
                    src = self.add_main(path, project)
            if st is not None:
                src.stats[str(path)] = st

    def add_file(self, path: Path) -> None:
        """A file named by the user: a main transcript plus its ``<stem>/subagents``
        folder, or a subagent's file on its own (a stream of the session it names)."""
        if not self._new(os.path.realpath(path)):
            return
        project = path.resolve().parent.name
        if (whose := agent_named(path.name)) is not None:
            self.add_agent_file(path, whose, project).explicit = True
            return
        if only_sidechain_lines(path):
            parent = first_session_id(path) or path.stem
            self.add_agent(path, parent, project).explicit = True
            return
        src = self.add_main(path, project, explicit=True)
        subagents = path.with_suffix("") / "subagents"
        if subagents.is_dir():
            for agent in jsonl_files(subagents, self.on_error):
                if self._new(os.path.realpath(agent)):
                    src.agents.append(_agent_file(agent))

    def add_session_dir(self, path: Path) -> None:
        """``<project>/<session>/`` named on its own: its main transcript sits beside it."""
        main = path.parent / f"{path.name}.jsonl"
        if main.is_file():
            self.add_file(main)
            return
        for agent in jsonl_files(path, self.on_error):
            if self._new(os.path.realpath(agent)):
                self.add_agent(agent, path.name, path.parent.name)


def discover(paths: list[Path], on_error: OnError | None = None) -> list[SessionSource]:
    """The sessions under ``paths``, each once however many of them hold it; paths that
    are missing and folders that cannot be listed go to ``on_error`` (raised without)."""
    found = Discovery(on_error)
    for path in paths:
        if path.is_file():
            found.add_file(path)
        elif path.is_dir():
            if (path / "subagents").is_dir() and not any(path.glob("*.jsonl")):
                found.add_session_dir(path)
            else:
                found.add_dir(path)
                found.add_unwalked(path)
        else:
            exists = path.exists()
            reason = "not a regular file or directory" if exists else "no such file or directory"
            if on_error is None:
                raise InputError(f"{path}: {reason}")
            # Named, then gone (a shell's glob, Claude Code pruning): the rest is read.
            on_error(LineIssue(str(path), 0, reason))
    return found.result()


def sessions_for_file(path: Path) -> SessionSource:
    """The session of one file named on its own (with its subagents folder)."""
    found = Discovery()
    found.add_file(path)
    return found.result()[0]
