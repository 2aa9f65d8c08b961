"""``--agent``: which agents' sessions a command reads, and whether its rows name the
agent.

With no ``--agent`` (or ``all``) the pipeline reads every agent's files (``pipeline.Run``
with ``agents=None``); with one agent named, only that agent's, and a file named on its
own that is not one of its logs is an error. One agent's sessions print exactly as
Claude Code's do.
"""

from __future__ import annotations

import json

from cachediag.errors import InputError
from cachediag.ingest.agents import AGENTS

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
