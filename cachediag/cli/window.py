"""Time windows and the display zone: ``--since``/``--until``/``--timezone`` for every command.

The forms ccusage users type (``20260211``), ISO dates and date-times, and relative
spans (``30m``, ``24h``, ``7d``, ``2w``, back from ``--now``). A bound is parsed when its
option is read but resolved to epoch seconds only once ``--now`` and ``--timezone`` are
known, since a date means midnight in the display zone and a span counts back from now.
"""

from __future__ import annotations

import os
import re
import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Any, TypeVar

import click

from cachediag.quick import Window as Window  # where ``analyze --json`` finds it without click

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


def resolve_window(since: Bound | None, until: Bound | None, now: float, zone: tzinfo) -> Window:
    """The window the two bounds describe; an empty or inverted one is a usage error."""
    start = None if since is None else since.resolve(now, zone, end=False)
    # "--until 2026-02-11" includes that whole day; "--until 2h" means two hours ago.
    stop = None if until is None else until.resolve(now, zone, end=True)
    if start is not None and stop is not None and stop <= start:
        raise click.UsageError(
            f"--until {until.text if until else ''} is not after --since "
            f"{since.text if since else ''}: the window is empty"
        )
    return Window(start, stop)


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
        # Here, not at the top: a run without --timezone or a window may need no zone.
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
        with link.open("rb") as f:
            return ZoneInfo.from_file(f, key="localtime")
    except (OSError, ZoneInfoNotFoundError, ValueError):
        pass
    # No zone database: the current offset, which is right outside DST changes.
    return datetime.now().astimezone().tzinfo or ZoneInfo("UTC")


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


def zone_or_local(zone: tzinfo | None) -> tzinfo:
    return local_zone() if zone is None else zone
