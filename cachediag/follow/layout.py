"""Which files ``watch`` follows, and which session each belongs to (formats.md §1).

Claude Code keeps a session as ``<project>/<session>.jsonl`` with its subagents in
``<project>/<session>/subagents/**/agent-<id>.jsonl``; version 2.0 wrote agent files
beside the sessions, and only their lines say whose they are.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cachediag.follow.files import jsonl_below
from cachediag.ingest.discover import first_session_id


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
        return path.startswith(self.path + os.sep) and path.endswith(".jsonl")


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
    """Every transcript below ``root`` that one of ``scopes`` holds."""
    return (path for path in jsonl_below(root) if any(s.holds(path) for s in scopes))


def session_of(path: str, scopes: list[Scope]) -> str | None:
    """The main transcript ``path`` belongs to, or ``None`` while that is unknown."""
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
