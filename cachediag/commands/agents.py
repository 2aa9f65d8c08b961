"""``analyze --agent``: the sessions of another agent (Codex CLI...), or of every agent
found, in the shapes ``analyze`` prints for Claude Code.

``--agent claude`` (and no ``--agent``) is the Claude Code run as it always was; this
module serves the others. One agent's sessions print exactly as Claude Code's do; with
``all`` each JSON line starts with ``"agent"`` and the tables follow in time order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from cachediag.commands.analyze import SessionJson, TimeOrder
from cachediag.commands.session_tables import print_session_tables
from cachediag.commands.window import Window
from cachediag.console import echo_lines, emit_json, finish_reading
from cachediag.errors import InputError
from cachediag.ingest.agents import AGENTS

if TYPE_CHECKING:
    from cachediag.analysis.session_analysis import SessionAnalysis
    from cachediag.model import LineIssue
    from cachediag.pipeline import Run

ALL = "all"
CLAUDE = "claude"


def agent_choices() -> list[str]:
    return [*AGENTS, ALL]


@dataclass(slots=True)
class Found:
    """Every session read, with the agent it came from, and what reading said."""

    sessions: list[tuple[str, SessionAnalysis]]
    issues: list[LineIssue]
    unreadable: list[LineIssue]
    errors: list[str]
    nothing_read: bool


def _read(agent: str, paths: list[Path], now: float, claude_run: Run | None) -> Found:
    from cachediag.analysis.agent_sessions import analyze_agent

    if agent == ALL and paths:
        raise InputError("--agent all reads each agent's home: name one agent to read paths")
    names = [n for n in AGENTS if n != CLAUDE] if agent == ALL else [agent]
    if agent == ALL:
        # Each agent's home that exists: one a user never ran is no error.
        names = [n for n in names if AGENTS[n].home().is_dir()]
    found = Found([], [], [], [], False)
    if agent == ALL and claude_run is not None:
        from cachediag.pipeline import default_paths

        found.sessions += [(CLAUDE, a) for a in claude_run.sessions(default_paths(), None, now)]
        found.issues += claude_run.issues
        found.unreadable += claude_run.unreadable
        found.errors += claude_run.errors
    for name in names:
        run = analyze_agent(name, paths, now)
        found.sessions += [(name, a) for a in run.analyses]
        found.issues += run.issues
        found.unreadable += run.unreadable
        found.errors += run.errors
    found.nothing_read = bool(found.unreadable) and not found.sessions
    return found


def _tagged(agent: str, line: str) -> str:
    """The session's JSON line with ``"agent"`` first (``--agent all``)."""
    return '{"agent":' + json.dumps(agent) + ("," + line[1:] if line[1:2] != "}" else "}")


def _json_lines(found: Found, render: SessionJson, tag: bool) -> Iterator[tuple[float, str]]:
    for agent, a in found.sessions:
        at, line = render(a)
        if line:
            yield at, _tagged(agent, line) if tag else line


def analyze_agents(
    agent: str,
    paths: list[Path],
    now: float,
    *,
    json_render: SessionJson | None,
    jq_filter: str | None,
    pricing_file: Path | None,
    window: Window,
    zone: tzinfo,
    claude_run: Run | None = None,
) -> None:
    """The whole ``analyze --agent`` run for an agent other than Claude Code alone."""
    found = _read(agent, paths, now, claude_run)
    if json_render is not None:
        with TimeOrder() as spool:
            for at, line in _json_lines(found, json_render, agent == ALL):
                spool.add(at, line)
            if jq_filter is None:
                echo_lines(spool.lines())
            else:
                emit_json(map(json.loads, spool.lines()), jq_filter)
    else:
        _tables(found, pricing_file, window, zone)
    finish_reading(found.issues, found.unreadable, found.errors, found.nothing_read)


def _tables(found: Found, pricing_file: Path | None, window: Window, zone: tzinfo) -> None:
    print_session_tables(
        (a for _, a in found.sessions),
        pricing_file,
        window,
        zone,
        read_clean=lambda: not found.errors and not found.unreadable,
    )
