"""The options the fast paths read without click, each declared once: flag, parameter
name, kind, range and default.

``quick`` (``analyze``), ``quick_audit`` (``audit``) and ``statusline.fast`` parse their
arguments by these; the click commands take the same ranges and defaults from here
(``cli.common.EPOCH``, ``cli.audit``, ``cli.statusline``), and tests/test_option_table.py
holds the table to click's own definitions, so that the two ways in cannot drift apart.

Standard library only, no typing or dataclasses: the status line's warm path imports it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

FLAG, INT, FLOAT, CHOICE, TEXT = "flag", "int", "float", "choice", "text"
"""Kinds: an on/off flag, a whole number, a number, one of ``choices``, any text."""


class Option:
    """One option: ``flag`` sets the click parameter ``name``; a number lies within
    ``[low, high]`` (``None``: unbounded); ``default`` is what an absent option means."""

    __slots__ = ("choices", "default", "flag", "high", "kind", "low", "name")

    def __init__(
        self,
        flag: str,
        name: str,
        kind: str,
        *,
        low: float | None = None,
        high: float | None = None,
        default: object = None,
        choices: Sequence[str] = (),
    ) -> None:
        self.flag, self.name, self.kind = flag, name, kind
        self.low, self.high, self.default = low, high, default
        self.choices = tuple(choices)

    def holds(self, number: float) -> bool:
        """Whether ``number`` is in range (NaN is in none but the unbounded one, as in
        click's plain ``float``)."""
        above = self.low is None or number >= self.low
        return above and (self.high is None or number <= self.high)

    def __repr__(self) -> str:
        return f"Option({self.flag!r}, {self.name!r}, {self.kind!r}, {self.low}, {self.high})"


EPOCH_MAX = 1e11
"""The largest ``--now``: Unix seconds up to the year 5138, beyond which no date library
can show it."""

NOW = Option("--now", "now", FLOAT, low=0, high=EPOCH_MAX)
JOBS = Option("--jobs", "jobs", INT, low=1)
NO_CAPTURES = Option("--no-captures", "no_captures", FLAG, default=False)
JSON = Option("--json", "as_json", FLAG, default=False)

BY_CHOICES = (
    "session",
    "project",
    "day",
    "week",
    "month",
    "gap",
    "model",
    "cause",
    "stream-kind",
    "agent",
    "host",
    "user",
)
TOP_DEFAULT = 10
BY_DEFAULT = "project"
TOP = Option("--top", "top", INT, low=0, default=TOP_DEFAULT)
BY = Option("--by", "by", CHOICE, default=BY_DEFAULT, choices=BY_CHOICES)

BUDGET = Option("--budget", "budget", FLOAT, low=0.05, high=60)
WIDTH = Option("--width", "width", INT, low=20, high=10_000)
PRESET = Option("--preset", "preset", CHOICE, choices=("full", "compact", "cache"))
"""The status line's ready-made templates (``statusline.render.PRESETS`` holds them)."""

ANALYZE = (
    JSON,
    Option("--requests", "requests", FLAG, default=False),
    NO_CAPTURES,
    NOW,
    JOBS,
)
"""What ``analyze --json PATH...`` takes without click."""
AUDIT = (
    JSON,
    Option("--progress", "progress", FLAG),
    Option("--no-progress", "progress", FLAG),
    NO_CAPTURES,
    JOBS,
    TOP,
    BY,
    # audit's clock is any number: its only use is to count spans back from.
    Option("--now", "now", FLOAT),
)
"""What ``audit --json PATH...`` takes without click."""
STATUSLINE = (
    JSON,
    Option("--format", "fmt", TEXT),
    PRESET,
    Option("--color", "color", FLAG),
    Option("--no-color", "color", FLAG),
    NOW,
    BUDGET,
    WIDTH,
    Option("--check", "check", FLAG, default=False),
)
"""What the status line reads (``statusline.fast``), every option of its command."""
TABLE = {"analyze": ANALYZE, "audit": AUDIT, "statusline": STATUSLINE}


def by_flag(options: Sequence[Option]) -> dict[str, Option]:
    return {o.flag: o for o in options}
