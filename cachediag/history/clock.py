"""Times as transcripts and Claude Code write them, read without ``datetime`` (which
costs the status line's warm path milliseconds to import). Standard library only."""

from __future__ import annotations

import math

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def epoch(value: Any) -> float | None:
    """Unix seconds from a number (seconds, or milliseconds when that large) or an ISO
    8601 time in UTC or with an offset (``2026-03-28T15:00:00Z``); ``None`` otherwise.
    By hand: ``datetime`` costs the warm path milliseconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        if not math.isfinite(seconds):
            return None
        return seconds / 1000 if seconds > 1e11 else seconds
    if not isinstance(value, str) or len(value) < 19 or len(value) > 40:
        return None
    text = value.strip()
    try:
        if text[4] != "-" or text[7] != "-" or text[10] not in "Tt " or text[13] != ":":
            return None
        year, month, day = int(text[0:4]), int(text[5:7]), int(text[8:10])
        hour, minute, second = int(text[11:13]), int(text[14:16]), int(text[17:19])
        rest = text[19:]
        if rest.startswith("."):
            digits = len(rest) - len(rest[1:].lstrip("0123456789"))
            rest = rest[digits:]
        offset = 0
        if rest in ("Z", "z", ""):
            pass
        elif len(rest) == 6 and rest[0] in "+-" and rest[3] == ":":
            offset = (int(rest[1:3]) * 60 + int(rest[4:6])) * (1 if rest[0] == "+" else -1)
        else:
            return None
    except ValueError:
        return None
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    return _days(year, month, day) * 86400.0 + hour * 3600 + minute * 60 + second - offset * 60


def _days(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's formula)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468
