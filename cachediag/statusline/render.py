"""The one-line status from plain values: the ``--format`` template, its fields and
presets, and fitting the line to a width (no I/O, standard library only).

The fields themselves live by job: ``cache_fields`` (the prompt cache), ``usage_fields``
(model, costs, block, context, rate limits) and ``values`` (the guarded numbers, money
and clocks every field reads through).
"""

from __future__ import annotations

from cachediag.statusline.cache_fields import (
    MIN_NAME_CHARS,
    NAMES_ROOM,
    field_agents,
    field_cost,
    field_hit,
    field_last,
    field_misses,
    field_partial,
    field_rebuilds,
    field_requests,
    field_source,
    field_ttl,
    field_warm,
)
from cachediag.statusline.usage_fields import (
    field_block_cost,
    field_block_left,
    field_context_pct,
    field_context_tokens,
    field_model,
    field_rate_5h,
    field_rate_7d,
    field_session_cost,
    field_today_cost,
)
from cachediag.statusline.values import NONE, count, number, plural, printable, usd

__all__ = ["NONE", "count", "number", "plural", "printable", "usd"]
"""Read by the status line's other modules through ``render`` (one import)."""


class UsageError(ValueError):
    """A mistake in the status line's own arguments: its message is ours and safe to log
    (a ValueError from parsing log values may quote them, so its text is never logged)."""


TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from collections.abc import Callable
    from typing import Any, TypeAlias

    View: TypeAlias = dict[str, Any]

CACHE_FORMAT = "{hit} · {warm} · {misses} · {last} · {agents} · {partial}"
"""The cache alone: the line before the usage fields came."""
DEFAULT_FORMAT = "{model} · {session_cost} · " + CACHE_FORMAT
"""The model and what the session cost first, then the cache."""
PRESETS = {
    "full": "{model} · {session_cost} · {today_cost} · {block_cost} · {block_left} · "
    "{context_pct} · {rate_5h} · {rate_7d} · {hit} · {warm} · {misses} · {last} · {agents} · "
    "{partial}",
    "compact": "{model} · {session_cost} · {hit} · {warm} · {partial}",
    "cache": CACHE_FORMAT,
}
"""``--preset NAME``: ready-made templates (a line that does not fit loses fields from the
right, so the first ones are those kept)."""
FALLBACK = "cache ?"
NOT_YET = "cache: no response yet"
"""Before the session's first response Claude Code has written no transcript (and sends
no ``prompt_cache``): nothing is wrong, there is just nothing to count yet."""
NOT_WRITTEN = "not_written_yet"
"""The view's ``transcript`` when Claude Code named the session's own transcript and it is
not there yet (or holds no response yet)."""


def not_yet(view: View) -> bool:
    """No response in this session so far (and no object from Claude Code that counts
    one): the line says so rather than ``cache ?``."""
    pc = view.get("prompt_cache")
    return view.get("transcript") == NOT_WRITTEN and not (
        isinstance(pc, dict) and count(pc, "requests")
    )


FIELDS: dict[str, Callable[[View, bool], str]] = {
    "hit": field_hit,
    "warm": field_warm,
    "misses": field_misses,
    "cost": field_cost,
    "last": field_last,
    "agents": field_agents,
    "rebuilds": field_rebuilds,
    "ttl": field_ttl,
    "requests": field_requests,
    "source": field_source,
    "partial": field_partial,
    "model": field_model,
    "session_cost": field_session_cost,
    "today_cost": field_today_cost,
    "block_cost": field_block_cost,
    "block_left": field_block_left,
    "context_tokens": field_context_tokens,
    "context_pct": field_context_pct,
    "rate_5h": field_rate_5h,
    "rate_7d": field_rate_7d,
}


def parse_format(template: str) -> list[tuple[str, str | None]]:
    """``"{a} · {b}!"`` -> ``[("", "a"), (" · ", "b"), ("!", None)]``; ``{{``/``}}`` escape."""
    parts: list[tuple[str, str | None]] = []
    literal: list[str] = []
    i = 0
    while i < len(template):
        ch = template[i]
        if ch in "{}" and template[i + 1 : i + 2] == ch:
            literal.append(ch)
            i += 2
            continue
        if ch == "{":
            end = template.find("}", i)
            if end < 0:
                raise UsageError("--format: unclosed '{' (write '{{' for a literal brace)")
            name = template[i + 1 : end].strip()
            if name not in FIELDS:
                known = " ".join(f"{{{f}}}" for f in FIELDS)
                raise UsageError(f"--format: unknown field {{{name[:40]}}} (fields: {known})")
            parts.append(("".join(literal), name))
            literal = []
            i = end + 1
            continue
        literal.append(ch)
        i += 1
    parts.append(("".join(literal), None))
    return parts


KEPT = ("hit", "partial")
"""Fields never dropped to fit a width: what the line is about, and that its numbers are
those read so far."""


def render_line(
    view: View,
    template: str = DEFAULT_FORMAT,
    color: bool = False,
    width: int | None = None,
    *,
    keep_fields: bool = False,
) -> str:
    """Fill the template; an empty field drops together with the text before it (its
    separator), so ``{hit} · {last}`` shows ``cache 91%`` before the first miss.

    ``width``: a line that does not fit loses whole fields from the right (never
    ``{hit}`` or ``{partial}``; ``keep_fields`` keeps them all), as few as it must with the
    names of changed tools at their shortest (``+3 tools``), then the names fill what is
    left. Nothing is ever cut inside a number, a time or a cause."""
    if not_yet(view):
        return NOT_YET  # whatever the template: there is no number to fill it with yet
    line = _fill(view, template, color)
    if width is None or len(_fill(view, template, False) if color else line) <= width:
        return line
    tools = bool(view.get("last_miss_tools"))
    shortest = {**view, "tool_room": 0}

    def fits(v: View, dropped: frozenset[str]) -> bool:
        return len(_fill(v, template, False, dropped)) <= width

    dropped: frozenset[str] = frozenset()
    if not keep_fields:
        names = [name for _, name in parse_format(template) if name and name not in KEPT]
        for name in reversed(names):
            if fits(shortest, dropped):
                break
            dropped |= {name}
    if not tools or "last" in dropped:
        return _fill(view, template, color, dropped)
    room = 0
    if fits({**view, "tool_room": MIN_NAME_CHARS}, dropped):
        # The most room that fits (the line grows with it).
        low, high = MIN_NAME_CHARS, NAMES_ROOM + 1
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if fits({**view, "tool_room": mid}, dropped) else (low, mid)
        room = low
    return _fill({**view, "tool_room": room}, template, color, dropped)


def _fill(view: View, template: str, color: bool, dropped: frozenset[str] = frozenset()) -> str:
    parts = parse_format(template)
    out = [parts[0][0]]
    emitted = False
    for i, (before, name) in enumerate(parts):
        if name is None:
            out.append(before if i else "")
            continue
        value = "" if name in dropped else FIELDS[name](view, color)
        if value:
            out.append(before if emitted and i else "")
            out.append(value)
            emitted = True
    line = "".join(out).replace("\n", " ").strip()
    return line or FALLBACK
