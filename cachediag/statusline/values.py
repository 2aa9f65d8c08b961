"""Plain values for the status line's fields: numbers read through type guards, money,
clocks, plurals and colours (no I/O, standard library only).

Values may come from Claude Code's own objects, so every number is read through a guard:
a missing, null or wrongly typed field reads as ``None`` and renders as absent.
"""

from __future__ import annotations

import math

from cachediag.text import sanitize

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from typing import Any

NONE = "\u2013"
"""Shown for a ratio that is undefined (no tokens yet): an en dash."""

GREEN, YELLOW, RED, DIM, RESET = "\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[2m", "\x1b[0m"


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


def paint(text: str, colour: str, on: bool) -> str:
    return f"{colour}{text}{RESET}" if on and text else text


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
