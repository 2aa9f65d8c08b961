"""Time windows and the display zone: what ``--since``/``--until``/``--timezone`` mean.

The forms ccusage users type (``20260211``), ISO dates and date-times, and relative
spans (``30m``, ``24h``, ``7d``, ``2w``, back from ``--now``). A bound is parsed when its
option is read but resolved to epoch seconds only once ``--now`` and ``--timezone`` are
known, since a date means midnight in the display zone and a span counts back from now.
``cli.window`` wraps these in click's parameter types; the quick paths use the window
and the zone without them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from cachediag.errors import UsageError

if TYPE_CHECKING:
    from cachediag.analysis.session_analysis import SessionAnalysis

_SPAN = re.compile(r"(\d+)\s*([smhdw])", re.I)
_SPAN_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_COMPACT_DATE = re.compile(r"\d{8}")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

BOUND_HELP = "YYYY-MM-DD, YYYYMMDD, an ISO date-time, or back from now: 30m, 24h, 7d, 2w"


@dataclass(slots=True, frozen=True)
class Window:
    """``[since, until)`` in epoch seconds; either end may be open (``None``)."""

    since: float | None = None
    until: float | None = None

    def holds(self, at: float) -> bool:
        return (self.since is None or at >= self.since) and (self.until is None or at < self.until)

    @property
    def open(self) -> bool:
        return self.since is None and self.until is None


FIRST_USABLE_S = -62135510400.0
"""0001-01-02T00:00Z: from here to ``LAST_USABLE_S`` every instant is a date in every
zone (offsets stay within a day; ``datetime`` holds years 1 to 9999 only)."""
LAST_USABLE_S = 253402214400.0
"""9999-12-31T00:00Z."""


@dataclass(slots=True, frozen=True)
class Bound:
    """One end of a window as typed: a day, a moment (maybe without zone) or a span."""

    text: str
    day: date | None = None
    moment: datetime | None = None
    back_s: float | None = None

    def resolve(self, now: float, zone: tzinfo, *, end: bool) -> float:
        """Epoch seconds; a day is its first instant, or the instant after it for ``end``."""
        if self.back_s is not None:
            return now - self.back_s
        if self.moment is not None:
            m = self.moment if self.moment.tzinfo else self.moment.replace(tzinfo=zone)
            return m.timestamp()
        assert self.day is not None
        day = self.day + timedelta(days=1) if end else self.day
        return datetime.combine(day, time(), tzinfo=zone).timestamp()


def parse_bound(text: str) -> Bound:
    """``Bound`` of ``text``; ``ValueError`` saying what is wrong with it."""
    span = _SPAN.fullmatch(text)
    if span is not None:
        amount, unit = int(span.group(1)), span.group(2).lower()
        if amount == 0:
            raise ValueError("a span must be longer than zero")
        return Bound(text, back_s=float(amount * _SPAN_SECONDS[unit]))
    if _COMPACT_DATE.fullmatch(text):
        text_iso = f"{text[:4]}-{text[4:6]}-{text[6:]}"
        return Bound(text, day=_date(text_iso))
    if _ISO_DATE.fullmatch(text):
        return Bound(text, day=_date(text))
    if not re.match(r"\d{4}-\d{2}-\d{2}[T ]\d", text):
        raise ValueError("not a date, a date-time or a span")
    try:
        # Python 3.11 reads "Z" and offsets; a value without an offset is in --timezone.
        return Bound(text, moment=datetime.fromisoformat(text))
    except ValueError as exc:
        raise ValueError(f"not a valid date-time ({exc})") from None


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError("no such date") from None


def usable(bound: Bound, now: float) -> bool:
    """Whether both ends of ``bound`` are instants ``datetime`` can show (9999-12-31 as
    an end is a day past the last one it can hold)."""
    try:
        for end in (False, True):
            datetime.fromtimestamp(bound.resolve(now, UTC, end=end), UTC)
    except (OverflowError, ValueError, OSError):
        return False
    return True


def resolve_window(since: Bound | None, until: Bound | None, now: float, zone: tzinfo) -> Window:
    """The window the two bounds describe; an empty or inverted one is a usage error.

    A bound past the dates every zone can show (``--since 0001-01-01`` in Tokyo is year 0
    in UTC) is held to the nearest one that can be: no log holds a time that far out, and
    the commands show and compare bounds in UTC and in the display zone."""
    start = None if since is None else _usable(since.resolve(now, zone, end=False))
    # "--until 2026-02-11" includes that whole day; "--until 2h" means two hours ago.
    stop = None if until is None else _usable(until.resolve(now, zone, end=True))
    if start is not None and stop is not None and stop <= start:
        raise UsageError(
            f"--until {until.text if until else ''} is not after --since "
            f"{since.text if since else ''}: the window is empty"
        )
    return Window(start, stop)


def _usable(at: float) -> float:
    return min(max(at, FIRST_USABLE_S), LAST_USABLE_S)


def local_zone() -> tzinfo:
    """This machine's zone, as ccusage defaults to: ``$TZ``, then ``/etc/localtime``."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    link = Path("/etc/localtime")
    try:
        target = str(link.resolve())
        if "zoneinfo/" in target:
            return ZoneInfo(target.split("zoneinfo/", 1)[1])
        from cachediag.safefiles import open_regular  # never waits on a FIFO

        with open_regular(str(link)) as f:
            return ZoneInfo.from_file(f, key="localtime")
    except (OSError, ZoneInfoNotFoundError, ValueError):
        pass
    # No zone database: the current offset, which is right outside DST changes.
    return datetime.now().astimezone().tzinfo or ZoneInfo("UTC")


def zone_or_local(zone: tzinfo | None) -> tzinfo:
    return local_zone() if zone is None else zone


def in_window(a: SessionAnalysis, window: Window) -> bool:
    return any(window.holds(e.record.at) for s in a.streams for e in s.entries)


def first_at(a: SessionAnalysis) -> float:
    """When the session started; sessions without requests sort last."""
    times = [s.entries[0].record.at for s in a.streams if s.entries]
    return min(times) if times else float("inf")
