"""The usage fields of the status line: the model, the session's, today's and the 5-hour
block's cost, the block's time left, the context used and the rate limits. No I/O,
standard library only.

They read two objects of the view: ``payload``, the fields of Claude Code's own JSON
(``model``, ``cost``, ``context_window``, ``rate_limits``; any may be missing, null or of
another type in some version), and ``usage``, what cachediag computed from the history
(``session_cost_usd``, ``today_cost_usd``, ``block``, ``context_tokens``, ``model``).
Claude Code's figure is shown when it sent one; where cachediag's differs, both, as the
cache counts do (``$1.23 (log $1.10)``).
"""

from __future__ import annotations

import math

from cachediag.history.clock import epoch
from cachediag.statusline.values import DIM, GREEN, RED, YELLOW, number, paint, printable, usd

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from typing import Any, TypeAlias

    View: TypeAlias = dict[str, Any]

MODEL_CHARS = 24
"""A model's name is cut to this (``Opus 4.5``, ``claude-sonnet-4-5-20250929``)."""
DEFAULT_WINDOW = 200_000
LONG_WINDOW = 1_000_000
"""The context window of a model (tokens): 200k, or 1M for a long-context model (an id
with ``[1m]`` or ``-1m``, as Claude Code names it), unless the payload says."""


def _obj(view: View, key: str) -> dict[str, Any]:
    value = view.get(key)
    return value if isinstance(value, dict) else {}


def _sent(view: View, key: str) -> dict[str, Any]:
    value = _obj(view, "payload").get(key)
    return value if isinstance(value, dict) else {}


def field_model(view: View, color: bool) -> str:
    model = _sent(view, "model")
    for key in ("display_name", "id"):
        name = model.get(key)
        if isinstance(name, str) and printable(name, MODEL_CHARS).strip():
            return printable(name, MODEL_CHARS).strip()
    ours = _obj(view, "usage").get("model")
    return printable(ours, MODEL_CHARS).strip() if isinstance(ours, str) else ""


def _cents_differ(a: float, b: float) -> bool:
    return usd(a) != usd(b)


def field_session_cost(view: View, color: bool) -> str:
    theirs = number(_sent(view, "cost"), "total_cost_usd")
    ours = number(_obj(view, "usage"), "session_cost_usd")
    if theirs is not None and theirs < 0:
        theirs = None
    if ours is not None and ours < 0:
        ours = None
    if theirs is None:
        return "" if ours is None else usd(ours)
    if ours is not None and _cents_differ(theirs, ours):
        return f"{usd(theirs)} (log {usd(ours)})"
    return usd(theirs)


def field_today_cost(view: View, color: bool) -> str:
    cost = number(_obj(view, "usage"), "today_cost_usd")
    return "" if cost is None or cost < 0 else f"today {usd(cost)}"


def _block(view: View) -> dict[str, Any]:
    block = _obj(view, "usage").get("block")
    return block if isinstance(block, dict) else {}


def field_block_cost(view: View, color: bool) -> str:
    cost = number(_block(view), "cost_usd")
    return "" if cost is None or cost < 0 else f"block {usd(cost)}"


def hours_minutes(seconds: float) -> str:
    minutes = max(0, int(seconds // 60))
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def field_block_left(view: View, color: bool) -> str:
    block = _block(view)
    ends = number(block, "ends_at")
    now = number(view, "now")
    if ends is None or now is None or block.get("active") is not True:
        return ""
    left = ends - now
    if left <= 0 or left > 24 * 3600:
        return ""
    return paint(f"{hours_minutes(left)} left", YELLOW if left < 1800 else DIM, color)


def _tokens(n: float) -> str:
    if n >= 999_500:
        return f"{n / 1e6:.1f}M"
    if n >= 1000:
        return f"{n / 1e3:.1f}k" if n < 99_950 else f"{round(n / 1e3)}k"
    return str(int(n))


def context_tokens(view: View) -> float | None:
    """The tokens of the last request's prompt: Claude Code's ``current_usage`` (input,
    cache writes and reads) when sent, else the transcript's last main request."""
    current = _sent(view, "context_window").get("current_usage")
    if isinstance(current, dict):
        parts = [
            number(current, key)
            for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ]
        if any(p is not None for p in parts):
            total = sum(p for p in parts if p is not None and p >= 0)
            return total
    ours = number(_obj(view, "usage"), "context_tokens")
    return ours if ours is not None and ours >= 0 else None


def context_window(view: View) -> float:
    """The model's window: the payload's ``context_window_size``, else by its id."""
    size = number(_sent(view, "context_window"), "context_window_size")
    if size is not None and size > 0:
        return size
    model = _sent(view, "model").get("id")
    if not isinstance(model, str):
        model = _obj(view, "usage").get("model")
    if isinstance(model, str) and ("[1m]" in model.lower() or model.lower().endswith("-1m")):
        return LONG_WINDOW
    return DEFAULT_WINDOW


def field_context_tokens(view: View, color: bool) -> str:
    tokens = context_tokens(view)
    return "" if tokens is None else f"ctx {_tokens(tokens)}"


def context_share(view: View) -> float | None:
    """The share of the window used, in percent: Claude Code's ``used_percentage`` when
    sent, else the context tokens over the model's window."""
    sent = number(_sent(view, "context_window"), "used_percentage")
    if sent is not None and 0 <= sent <= 100:
        return sent
    tokens = context_tokens(view)
    return None if tokens is None else min(100.0, 100 * tokens / context_window(view))


def _tone(pct: float) -> str:
    return RED if pct >= 90 else YELLOW if pct >= 70 else GREEN


def field_context_pct(view: View, color: bool) -> str:
    pct = context_share(view)
    if pct is None:
        return ""
    return paint(f"ctx {math.floor(pct)}%", _tone(pct), color)


def _rate(view: View, key: str, label: str, color: bool) -> str:
    limit = _sent(view, "rate_limits").get(key)
    pct = number(limit, "used_percentage") if isinstance(limit, dict) else None
    if pct is None or not 0 <= pct <= 1000:
        return ""
    text = f"{label} {math.floor(pct)}%"
    resets = epoch(limit.get("resets_at"))  # type: ignore[union-attr]
    now = number(view, "now")
    if resets is not None and now is not None and 0 < resets - now <= 8 * 24 * 3600:
        text += f" ({hours_minutes(resets - now)})"
    return paint(text, _tone(pct), color)


def field_rate_5h(view: View, color: bool) -> str:
    return _rate(view, "five_hour", "5h", color)


def field_rate_7d(view: View, color: bool) -> str:
    return _rate(view, "seven_day", "7d", color)
