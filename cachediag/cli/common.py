"""The option types and options the click commands share (``--jq``, ``--pricing``).

What they print (JSON with ``--jq``, the notes after reading) is ``cachediag.console``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cachediag.commands.options import NOW, Option
from cachediag.ingest.agents import AGENTS


class FiniteFloat(click.ParamType):  # type: ignore[type-arg]
    """A number within bounds; NaN and infinities are usage errors (click's FloatRange
    lets NaN through: every comparison with it is false)."""

    def __init__(self, name: str, low: float, high: float) -> None:
        self.name = name
        self.low, self.high = low, high

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not self.low <= number <= self.high:
            self.fail(f"{value!r} is not between {self.low:g} and {self.high:g}", param, ctx)
        return number


def finite(option: Option, name: str) -> FiniteFloat:
    """The click type of a number option of ``commands.options``: its range, from there."""
    assert option.low is not None and option.high is not None
    return FiniteFloat(name, option.low, option.high)


EPOCH = finite(NOW, "epoch")
"""Unix seconds up to the year 5138: beyond that no date library can show it."""
USD = FiniteFloat("usd", 0, 1e12)

jq_option = click.option(
    "--jq",
    "jq_filter",
    metavar="FILTER",
    help="Apply a jq program to the JSON object (implies --json); strings print raw.",
)
"""``--jq`` of the commands whose JSON is one object."""

pricing_option = click.option(
    "--pricing",
    "pricing_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Price file: LiteLLM's JSON or cachediag's own (docs/audit.md).",
)

agent_option = click.option(
    "--agent",
    type=click.Choice([*AGENTS, "all"]),
    help="Whose sessions: claude (Claude Code), codex, gemini (Gemini CLI), opencode, or "
    "all; default: every agent whose history is found (no PATHS: each agent's home, e.g. "
    "~/.claude/projects, $CODEX_HOME or ~/.codex; see docs/agents.md).",
)
"""``--agent`` of every command that reads history (``commands.agents.agents_for``)."""
