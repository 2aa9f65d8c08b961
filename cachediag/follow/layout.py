"""Which files ``watch`` follows, and which session each belongs to (formats.md §1).

Claude Code keeps a session as ``<project>/<session>.jsonl`` with its subagents in
``<project>/<session>/subagents/**/agent-<id>.jsonl``; version 2.0 wrote agent files
beside the sessions, and only their lines say whose they are. Other agents' session
files are told by their names (``ingest.agents.agent_named``: a Codex rollout, a Gemini
CLI chat, opencode's database) and followed by ``follow.agent_files``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cachediag.follow.files import jsonl_below
from cachediag.ingest.agents import AGENTS, agent_named
from cachediag.ingest.detect import SNIFF_LINES
from cachediag.ingest.discover import claude_projects_dirs, first_session_id
from cachediag.safefiles import open_regular

SNIFF_BYTES = 1 << 20

JOURNALS = ("-wal", "-journal")
"""SQLite's files beside a database: opencode's commits land in its write-ahead log."""


@dataclass(slots=True)
class Scope:
    """A path given by the user: a transcript (with its subagents) or a folder."""

    path: str
    is_file: bool

    def folder(self) -> str:
        """What must be watched to see every file of this scope appear."""
        return os.path.dirname(self.path) if self.is_file else self.path

    def holds(self, path: str) -> bool:
        if self.is_file:
            own = os.path.splitext(self.path)[0] + os.sep
            return path == self.path or (path.startswith(own) and path.endswith(".jsonl"))
        return path.startswith(self.path + os.sep) and followed_name(os.path.basename(path))


def followed_name(name: str) -> bool:
    """A transcript's name, or another agent's session file's (a database included)."""
    return name.endswith(".jsonl") or agent_named(name) is not None


def watched_file(path: str) -> str | None:
    """The file a change at ``path`` is about: a transcript or another agent's session
    file, or the database whose journal ``path`` is; ``None``: nothing followed."""
    name = os.path.basename(path)
    for suffix in JOURNALS:
        if name.endswith(suffix) and agent_named(name[: -len(suffix)]) is not None:
            return path[: -len(suffix)]
    return path if followed_name(name) else None


def databases_in(root: str) -> list[str]:
    """opencode's databases in a folder followed: where ``ingest.discover`` looks for
    them (the folder, or its ``opencode`` folder), never the whole tree."""
    found = []
    for folder in (root, os.path.join(root, "opencode")):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        found += [os.path.join(folder, n) for n in names if agent_named(n) == "opencode"]
    return [p for p in found if os.path.isfile(p) and not os.path.islink(p)]


def agent_homes(agents: frozenset[str] | None) -> list[Path]:
    """The folders a watch with no path follows, for the agents asked for (``None``:
    every one): Claude Code's projects folders, and below each other agent's home the
    fixed part of its pattern (``~/.codex/sessions``, ``~/.gemini/tmp``,
    ``~/.local/share/opencode``), so sessions started later are seen. Only those that
    exist."""
    found: list[Path] = []
    for name, agent in AGENTS.items():
        if agents is not None and name not in agents:
            continue
        if name == "claude":
            found += [p for p in claude_projects_dirs() if p.is_dir()]
            continue
        fixed = []
        for part in agent.pattern.split("/"):
            if any(c in part for c in "*?["):
                break
            fixed.append(part)
        folder = agent.home().joinpath(*fixed)
        if folder.is_dir():
            found.append(folder)
    return found


def scopes_for(paths: Iterable[str]) -> list[Scope]:
    scopes = []
    for p in map(os.path.abspath, paths):
        main = p + ".jsonl"
        if os.path.isdir(os.path.join(p, "subagents")) and os.path.isfile(main):
            # A session folder: its main transcript sits beside it.
            scopes.append(Scope(main, True))
        else:
            scopes.append(Scope(p, os.path.isfile(p)))
    return scopes


def files_below(scopes: list[Scope], root: str) -> Iterator[str]:
    """Every transcript (and agent session file) below ``root`` that one of ``scopes``
    holds."""
    for path in [*jsonl_below(root), *databases_in(root)]:
        if any(s.holds(path) for s in scopes):
            yield path


def is_gemini_subagent(path: str) -> bool:
    """A Gemini CLI subagent's chat (``.gemini/tmp/<project>/chats/<parent>/<id>.jsonl``):
    read with its parent's session, whose chat is written again when the subagent ends."""
    parts = path.split(os.sep)
    return len(parts) > 5 and parts[-3] == "chats" and ".gemini" in parts[:-4]


def session_of(path: str, scopes: list[Scope]) -> str | None:
    """The main transcript ``path`` belongs to, or ``None`` while that is unknown (or
    never: a Gemini CLI subagent's chat is read with its parent)."""
    if is_gemini_subagent(path):
        return None
    for scope in scopes:
        if scope.is_file and scope.holds(path):
            return scope.path
    parts = path.split(os.sep)
    if "subagents" in parts[:-1]:
        # <project>/<session>/subagents/[workflows/...]/agent-<id>.jsonl
        idx = len(parts) - 1 - parts[::-1].index("subagents")
        return os.sep.join([*parts[: idx - 1], f"{parts[idx - 1]}.jsonl"])
    if parts[-1].startswith("agent-"):
        # Claude Code 2.0 wrote agent files beside the sessions; the lines say whose.
        parent = first_session_id(Path(path))
        if parent is None:
            return None
        return os.path.join(os.path.dirname(path), f"{parent}.jsonl")
    return path


def head_lines(path: str) -> list[bytes] | None:
    """The first complete lines of ``path`` (as many as format detection looks at, within
    ``SNIFF_BYTES``), or ``None`` when it cannot be read."""
    try:
        with open_regular(path) as fp:
            head = fp.read(SNIFF_BYTES)
    except OSError:
        return None
    lines = head.splitlines(keepends=True)
    return [raw for raw in lines if raw.endswith(b"\n")][:SNIFF_LINES]


def cwd_of(raw: bytes) -> str | None:
    """The line's ``cwd`` when it is a JSON object naming one (as the reader takes it)."""
    import orjson

    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    cwd = obj.get("cwd") if isinstance(obj, dict) else None
    return cwd if isinstance(cwd, str) and cwd else None
