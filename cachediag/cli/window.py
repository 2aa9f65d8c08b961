"""Time windows and the display zone: ``--since``/``--until``/``--timezone`` for every command.

The forms ccusage users type (``20260211``), ISO dates and date-times, and relative
spans (``30m``, ``24h``, ``7d``, ``2w``, back from ``--now``). A bound is parsed when its
option is read but resolved to epoch seconds only once ``--now`` and ``--timezone`` are
known, since a date means midnight in the display zone and a span counts back from now.
"""

from __future__ import annotations

import re
import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any, TypeVar

import click

# Where the quick JSON runs (cachediag.quick) find them without click:
from cachediag.quick import Window as Window
from cachediag.quick import local_zone as local_zone
from cachediag.quick import resolve_window as resolve_window
from cachediag.quick import zone_or_local as zone_or_local

_SPAN = re.compile(r"(\d+)\s*([smhdw])", re.I)
_SPAN_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_COMPACT_DATE = re.compile(r"\d{8}")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

BOUND_HELP = "YYYY-MM-DD, YYYYMMDD, an ISO date-time, or back from now: 30m, 24h, 7d, 2w"


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


class BoundType(click.ParamType):  # type: ignore[type-arg]
    """A click type for ``--since`` / ``--until``: an impossible date is a usage error."""

    name = "WHEN"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Bound:
        if isinstance(value, Bound):
            return value
        text = str(value).strip()
        try:
            bound = parse_bound(text)
        except ValueError as exc:
            self.fail(f"{text!r}: {exc} (expected {BOUND_HELP})", param, ctx)
        try:  # 9999-12-31 as an end is a day past the last one datetime can hold
            for end in (False, True):
                datetime.fromtimestamp(bound.resolve(_time.time(), UTC, end=end), UTC)
        except (OverflowError, ValueError, OSError):
            self.fail(
                f"{text!r}: outside the dates cachediag can use (years 1 to 9998)", param, ctx
            )
        return bound


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


class ZoneType(click.ParamType):  # type: ignore[type-arg]
    """An IANA zone name (``America/Los_Angeles``, ``UTC``) or ``local``."""

    name = "TZ"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tzinfo:
        if isinstance(value, tzinfo):
            return value
        text = str(value).strip()
        if text.lower() == "local":
            return local_zone()
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            return ZoneInfo(text)
        except (ZoneInfoNotFoundError, ValueError):
            self.fail(
                f"{text!r}: not a known time zone (an IANA name such as "
                "America/Los_Angeles, Europe/Paris or UTC)",
                param,
                ctx,
            )


F = TypeVar("F", bound=Callable[..., Any])


def window_options(func: F) -> F:
    """``--since``, ``--until`` and ``--timezone``, in that order on ``--help``."""
    decorators = [
        click.option(
            "--since",
            type=BoundType(),
            help=f"Only from this moment on: {BOUND_HELP}. A date starts at midnight "
            "in --timezone.",
        ),
        click.option(
            "--until",
            type=BoundType(),
            help="Only up to this moment (same forms; a date includes that whole day).",
        ),
        zone_option,
    ]
    for decorate in reversed(decorators):
        func = decorate(func)
    return func


zone_option = click.option(
    "--timezone",
    "zone",
    type=ZoneType(),
    metavar="TZ",
    help="Time zone for the times shown and for days, weeks and months: an IANA name "
    "(America/Los_Angeles, UTC); default: this machine's zone.",
)
