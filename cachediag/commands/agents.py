"""``--agent``: which agents' sessions a command reads, whether its rows name the agent,
and ``analyze --agent NAME`` for one agent other than Claude Code.

With no ``--agent`` (or ``all``) the pipeline reads every agent's files (``pipeline.Run``
with ``agents=None``); one agent's sessions print exactly as Claude Code's do. This
module's ``analyze_agents`` keeps the strict reading of one named agent: a file named
that is not one of its logs is an error.
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

ALL = "all"
CLAUDE = "claude"


def agent_choices() -> list[str]:
    return [*AGENTS, ALL]


def agents_for(choice: str | None) -> frozenset[str] | None:
    """The agents ``--agent`` reads (``pipeline.Run.agents``); ``None``: every one found."""
    if choice is None or choice == ALL:
        return None
    if choice not in AGENTS:
        raise InputError(f"unknown agent {choice!r} (one of {', '.join(agent_choices())})")
    return frozenset({choice})


def names_agents(choice: str | None, found: set[str]) -> bool:
    """Whether each row names its agent: always with ``--agent all``; by default when
    the history read holds more than one agent's sessions; never for one agent named
    (its rows keep the shape they have always had)."""
    return choice == ALL or (choice is None and len(found) > 1)


def tag_line(agent: str, line: str) -> str:
    """A session's JSON line with ``"agent"`` first."""
    return '{"agent":' + json.dumps(agent) + ("," + line[1:] if line[1:2] != "}" else "}")


@dataclass(slots=True)
class Found:
    """Every session read, with the agent it came from, and what reading said."""

    sessions: list[tuple[str, SessionAnalysis]]
    issues: list[LineIssue]
    unreadable: list[LineIssue]
    errors: list[str]
    nothing_read: bool


def _read(agent: str, paths: list[Path], now: float) -> Found:
    from cachediag.analysis.agent_sessions import analyze_agent

    run = analyze_agent(agent, paths, now)
    sessions = [(agent, a) for a in run.analyses]
    nothing_read = bool(run.unreadable) and not sessions
    return Found(sessions, run.issues, run.unreadable, run.errors, nothing_read)


def _json_lines(found: Found, render: SessionJson) -> Iterator[tuple[float, str]]:
    for _, a in found.sessions:
        at, line = render(a)
        if line:
            yield at, line


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
) -> None:
    """The whole ``analyze --agent NAME`` run for one agent other than Claude Code."""
    found = _read(agent, paths, now)
    if json_render is not None:
        with TimeOrder() as spool:
            for at, line in _json_lines(found, json_render):
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
