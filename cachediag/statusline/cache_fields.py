"""The prompt cache's fields of the status line: hit ratio, warm time, misses and their
cost, the last miss's cause (with the tools' names when known), subagents, rebuilds,
TTL, requests, source and partial. No I/O, standard library only."""

from __future__ import annotations

import math

from cachediag.statusline.values import (
    DIM,
    GREEN,
    MAX_CLOCK_S,
    NONE,
    RED,
    YELLOW,
    clock,
    count,
    number,
    paint,
    plural,
    printable,
    usd,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from typing import Any, TypeAlias

    View: TypeAlias = dict[str, Any]


def field_hit(view: View, color: bool) -> str:
    pc = view.get("prompt_cache")
    if not isinstance(pc, dict):
        return "cache ?"
    ratio = number(pc, "hit_ratio")
    if ratio is None or not 0 <= ratio <= 1:  # a ratio outside [0, 1] is not a ratio
        return f"cache {NONE}"
    pct = math.floor(ratio * 100) if ratio < 1 else 100
    tone = GREEN if ratio >= 0.8 else YELLOW if ratio >= 0.5 else RED
    return paint(f"cache {pct}%", tone, color)


def field_warm(view: View, color: bool) -> str:
    pc = view.get("prompt_cache")
    if not isinstance(pc, dict) or not count(pc, "requests"):
        return ""
    expires = number(pc, "expires_at")
    if expires is not None:
        left = expires - float(view.get("now", 0.0))
        if left > MAX_CLOCK_S:
            return paint("warm", GREEN, color)
        if left > 0:
            return paint(f"warm {clock(left)}", GREEN, color)
        return paint("cold", YELLOW, color)
    if pc.get("warm") is True:
        return paint("warm", GREEN, color)
    return paint("cold", YELLOW, color)


def field_misses(view: View, color: bool) -> str:
    pc = view.get("prompt_cache")
    misses = count(pc, "misses")
    if misses is None:
        return ""
    text = plural(misses, "miss")
    cost = number(view, "miss_cost_usd")
    logged = count(view, "transcript_misses")
    if logged is not None and logged != misses:
        # Claude Code's count, and what the transcript shows (with what those cost).
        text += f" (log {logged}{f': {usd(cost)}' if cost is not None and logged else ''})"
    elif cost is not None and misses:
        text += f" ({usd(cost)})"
    return paint(text, RED, color and (misses > 0 or bool(logged)))


def field_cost(view: View, color: bool) -> str:
    cost = number(view, "miss_cost_usd")
    return "" if cost is None else usd(cost)


NAME_CHARS = 40
"""One tool name is cut to this (MCP names run long: ``mcp__<server>__<tool>``)."""
MIN_NAME_CHARS = 12
"""Less room than this for the first name: the count alone is shown (``+3 tools``)."""
NAMES_ROOM = 120
"""Characters of tool names at most, before the line's width is considered."""


def _names(sign: str, names: list[str], room: int) -> tuple[str, int] | None:
    """``+3: a, b, …`` within ``room`` characters of names; how many it used."""
    shown: list[str] = []
    used = 0
    for i, raw in enumerate(names):
        more = i + 1 < len(names)
        gap = 2 if shown else 0
        tail = 3 if more else 0  # ", …" after the last name shown
        name = printable(raw, NAME_CHARS)
        if used + gap + len(name) + tail > room:
            if shown:
                break
            cut = room - tail
            if cut < MIN_NAME_CHARS:
                return None
            name = printable(raw, cut)
        shown.append(name)
        used += gap + len(name)
    left = len(names) - len(shown)
    return f"{sign}{len(names)}: {', '.join(shown)}{', …' if left else ''}", used + 3 * bool(left)


def _named_tools(cause: dict[str, Any], tools: Any, room: int) -> list[str] | None:
    """The added and removed tools by name, when the names are those of the cause shown
    (their counts agree) and at least one fits in ``room``; else ``None``."""
    if not isinstance(tools, dict) or room < MIN_NAME_CHARS:
        return None
    parts = []
    for sign, key, field in (("+", "added", "tools_added"), ("-", "removed", "tools_removed")):
        names = tools.get(key)
        n = count(cause, field) or 0
        if not isinstance(names, list) or len(names) != n:
            return None
        if not n:
            continue
        named = _names(sign, [str(x) for x in names], room)
        if named is None:
            parts.append(f"{sign}{n} tools")
            continue
        parts.append(named[0])
        room -= named[1]
    return parts if parts else None


def _cause_detail(cause: dict[str, Any], tools: Any = None, room: int = 0) -> str:
    added, removed = count(cause, "tools_added"), count(cause, "tools_removed")
    parts = _named_tools(cause, tools, room) if added or removed else None
    named = parts is not None
    parts = parts or []
    if not named and (added or removed):
        tools_text = "/".join(f"{sign}{n}" for sign, n in (("+", added), ("-", removed)) if n)
        parts.append(f"{tools_text} tools")
    delta = number(cause, "system_char_delta")
    if delta:
        parts.append(f"system {int(delta):+d} chars")
    # Names hold commas: with names, the parts are told apart by semicolons.
    return f" ({('; ' if named else ', ').join(parts)})" if parts else ""


SAME_MISS_S = 5.0
"""Claude Code's ``last_miss_at`` (whole seconds) and the transcript's time of the same
miss are closer than this."""


def _last_cause(view: View) -> Any:
    """The newest miss's cause: Claude Code's, or, when Claude Code named none, the one
    cachediag named for the same miss (from the capture proxy's records)."""
    pc = view.get("prompt_cache")
    cause = pc.get("last_miss_cause") if isinstance(pc, dict) else None
    if isinstance(cause, dict) or view.get("source") != "claude-code":
        return cause
    computed = view.get("computed")
    if not isinstance(computed, dict) or count(pc, "misses") != count(computed, "misses"):
        return cause
    theirs, ours = number(pc, "last_miss_at"), number(computed, "last_miss_at")
    if theirs is None or ours is None or abs(theirs - ours) >= SAME_MISS_S:
        return cause
    return computed.get("last_miss_cause")


def field_last(view: View, color: bool) -> str:
    pc = view.get("prompt_cache")
    cause = _last_cause(view)
    causes = cause.get("causes") if isinstance(cause, dict) else None
    # Cause names come from Claude Code's object: keep them to printable characters so
    # that nothing in it can drive the terminal.
    names = (
        [printable(c) for c in causes if isinstance(c, str) and printable(c)][:3]
        if isinstance(causes, list)
        else []
    )
    if not names:
        # A miss whose cause nobody could name (``last_miss_cause`` null): said, not hidden.
        return paint("last: unknown", DIM, color) if count(pc, "misses") else ""
    assert isinstance(cause, dict)
    room = view.get("tool_room", NAMES_ROOM)
    detail = _cause_detail(cause, view.get("last_miss_tools"), room if isinstance(room, int) else 0)
    return paint(f"last: {'+'.join(names)}{detail}", DIM, color)


def field_agents(view: View, color: bool) -> str:
    agents = view.get("subagents")
    streams = count(agents, "streams")
    if not streams:
        return ""
    ratio = number(agents, "hit_ratio")
    shown = NONE if ratio is None or not 0 <= ratio <= 1 else f"{math.floor(ratio * 100)}%"
    text = f"agents {streams}: {shown}"
    misses = count(agents, "misses") or 0
    if misses:
        text += f", {plural(misses, 'miss')}"
        cost = number(agents, "miss_cost_usd")
        if cost is not None:
            text += f" ({usd(cost)})"
    return paint(text, RED if misses else DIM, color)


def field_rebuilds(view: View, color: bool) -> str:
    n = count(view.get("prompt_cache"), "expected_rebuilds")
    return plural(n, "rebuild") if n else ""


def field_ttl(view: View, color: bool) -> str:
    pc = view.get("prompt_cache")
    ttl = pc.get("ttl") if isinstance(pc, dict) else None
    return f"ttl {ttl}" if ttl in ("5m", "30m", "1h", "24h") else ""


def field_requests(view: View, color: bool) -> str:
    n = count(view.get("prompt_cache"), "requests")
    return "" if n is None else f"{n} req"


def field_partial(view: View, color: bool) -> str:
    return paint("partial", YELLOW, color) if view.get("partial") is True else ""


def field_source(view: View, color: bool) -> str:
    source = view.get("source")
    return source if isinstance(source, str) else ""
