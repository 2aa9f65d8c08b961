"""The one-line status and the ``--json`` object, from plain values (no I/O, stdlib only).

Values may come from Claude Code's own ``prompt_cache`` object, so every field is read
through a type guard: a missing, null or wrongly typed field renders as absent.
"""

from __future__ import annotations

import math

from cachediag.text import sanitize


class UsageError(ValueError):
    """A mistake in the status line's own arguments: its message is ours and safe to log
    (a ValueError from parsing log values may quote them, so its text is never logged)."""


TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from collections.abc import Callable
    from typing import Any, TypeAlias

    View: TypeAlias = dict[str, Any]

DEFAULT_FORMAT = "{hit} · {warm} · {misses} · {last} · {agents} · {partial}"
FALLBACK = "cache ?"
NOT_YET = "cache: no response yet"
"""Before the session's first response Claude Code has written no transcript (and sends
no ``prompt_cache``): nothing is wrong, there is just nothing to count yet."""
NOT_WRITTEN = "not_written_yet"
"""The view's ``transcript`` when Claude Code named the session's own transcript and it is
not there yet (or holds no response yet)."""

NONE = "\u2013"
"""Shown for a ratio that is undefined (no tokens yet): an en dash."""

_GREEN, _YELLOW, _RED, _DIM, _RESET = "\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[2m", "\x1b[0m"


MAX_SHOWN = 1e15
"""Numbers beyond this are not real counts, costs or times: the field is left out."""


def number(obj: Any, key: str) -> float | None:
    value = obj.get(key) if isinstance(obj, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        shown = float(value)  # a 400-digit integer does not fit: that field is left out
    except OverflowError:
        return None
    return shown if math.isfinite(shown) and abs(shown) <= MAX_SHOWN else None


def count(obj: Any, key: str) -> int | None:
    value = number(obj, key)
    return int(value) if value is not None and value >= 0 else None


def printable(text: str, limit: int = 40) -> str:
    return sanitize(text, limit)


def _paint(text: str, colour: str, on: bool) -> str:
    return f"{colour}{text}{_RESET}" if on and text else text


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def usd(value: float) -> str:
    return f"${value:.2f}" if value >= 0.01 or value == 0 else "<$0.01"


MAX_CLOCK_S = 24 * 3600
"""A countdown longer than the longest TTL (1h) is not one; past a day it is not shown."""


def clock(seconds: float) -> str:
    s = max(0, int(seconds))
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def not_yet(view: View) -> bool:
    """No response in this session so far (and no object from Claude Code that counts
    one): the line says so rather than ``cache ?``."""
    pc = view.get("prompt_cache")
    return view.get("transcript") == NOT_WRITTEN and not (
        isinstance(pc, dict) and count(pc, "requests")
    )


def field_hit(view: View, color: bool) -> str:
    pc = view.get("prompt_cache")
    if not isinstance(pc, dict):
        return "cache ?"
    ratio = number(pc, "hit_ratio")
    if ratio is None or not 0 <= ratio <= 1:  # a ratio outside [0, 1] is not a ratio
        return f"cache {NONE}"
    pct = math.floor(ratio * 100) if ratio < 1 else 100
    tone = _GREEN if ratio >= 0.8 else _YELLOW if ratio >= 0.5 else _RED
    return _paint(f"cache {pct}%", tone, color)


def field_warm(view: View, color: bool) -> str:
    pc = view.get("prompt_cache")
    if not isinstance(pc, dict) or not count(pc, "requests"):
        return ""
    expires = number(pc, "expires_at")
    if expires is not None:
        left = expires - float(view.get("now", 0.0))
        if left > MAX_CLOCK_S:
            return _paint("warm", _GREEN, color)
        if left > 0:
            return _paint(f"warm {clock(left)}", _GREEN, color)
        return _paint("cold", _YELLOW, color)
    if pc.get("warm") is True:
        return _paint("warm", _GREEN, color)
    return _paint("cold", _YELLOW, color)


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
    return _paint(text, _RED, color and (misses > 0 or bool(logged)))


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
        return _paint("last: unknown", _DIM, color) if count(pc, "misses") else ""
    assert isinstance(cause, dict)
    room = view.get("tool_room", NAMES_ROOM)
    detail = _cause_detail(cause, view.get("last_miss_tools"), room if isinstance(room, int) else 0)
    return _paint(f"last: {'+'.join(names)}{detail}", _DIM, color)


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
    return _paint(text, _RED if misses else _DIM, color)


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
    return _paint("partial", _YELLOW, color) if view.get("partial") is True else ""


def field_source(view: View, color: bool) -> str:
    source = view.get("source")
    return source if isinstance(source, str) else ""


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
