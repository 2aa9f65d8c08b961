"""LiteLLM's ``off_peak_pricing``: other rates in clock windows of the day (DeepSeek's
off-peak hours), applied as LiteLLM's cost tracking applies them.

A model entry of a LiteLLM price file may carry::

    "off_peak_pricing": {
        "hours_utc": "16:30-00:30",
        "windows": [{"hours_utc": ["00:00-08:00"], "weekdays": ["sat", "sun"]}],
        "weekday_timezone": "Asia/Shanghai",
        "input_cost_per_token": 1.35e-7,
        "output_cost_per_token": 5.5e-7,
        "cache_read_input_token_cost": 3.5e-8
    }

``hours_utc`` (one ``"HH:MM-HH:MM"`` window or a list) applies every day; an entry of
``windows`` only on its ``weekdays`` (names or ISO numbers, read on the calendar of
``weekday_timezone``, UTC by default). A window starts inclusive, ends exclusive, may wrap
past midnight, and covers the whole day when its start equals its end; a malformed one
is ignored, as LiteLLM ignores it. While a window is open, each rate the block gives
replaces the one in force (in the long-context tier too); the 1h write price is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time, timedelta, tzinfo
from typing import Any

from cachediag.analysis.costs import ModelPrices
from cachediag.pricing.slots import DAY_S, DayPrices, merged_slots, utc_changes

MTOK = 1_000_000
RATES = {
    "input_cost_per_token": "input_mtok",
    "output_cost_per_token": "output_mtok",
    "cache_read_input_token_cost": "cache_read_mtok",
    "cache_creation_input_token_cost": "cache_write_5m_mtok",
}
"""LiteLLM's off-peak keys -> the price each replaces."""
_WEEKDAYS = {
    **dict.fromkeys(("mon", "monday"), 1),
    **dict.fromkeys(("tue", "tues", "tuesday"), 2),
    **dict.fromkeys(("wed", "wednesday"), 3),
    **dict.fromkeys(("thu", "thur", "thurs", "thursday"), 4),
    **dict.fromkeys(("fri", "friday"), 5),
    **dict.fromkeys(("sat", "saturday"), 6),
    **dict.fromkeys(("sun", "sunday"), 7),
}

Window = tuple[time, time]


@dataclass(frozen=True, slots=True)
class OffPeak:
    """One model's off-peak schedule and rates (USD per million tokens)."""

    every_day: tuple[Window, ...]
    on_weekdays: tuple[tuple[frozenset[int], tuple[Window, ...]], ...]
    weekday_zone: tzinfo
    rates: tuple[tuple[str, float], ...]
    """``ModelPrices`` field -> off-peak price."""

    def is_open(self, when: datetime) -> bool:
        """Whether the off-peak rates apply at ``when`` (aware)."""
        now = when.astimezone(UTC).time().replace(tzinfo=None)
        if _inside(self.every_day, now):
            return True
        weekday = when.astimezone(self.weekday_zone).isoweekday()
        return any(weekday in days and _inside(w, now) for days, w in self.on_weekdays)

    def applied(self, prices: ModelPrices) -> ModelPrices:
        """``prices`` with the off-peak rates in place, in each tier."""
        tier = prices.long_context
        values: dict[str, Any] = dict(self.rates)
        values["long_context"] = None if tier is None else self.applied(tier)
        return replace(prices, **values)

    def day_prices(self, prices: ModelPrices, day: int) -> DayPrices:
        """``prices`` over UTC day ``day``, with the off-peak slots in it."""
        midnight = datetime.fromtimestamp(day * DAY_S, UTC)
        clock = [
            t for w in (*self.every_day, *(x for _, ws in self.on_weekdays for x in ws)) for t in w
        ]
        # A weekday starts at midnight on its own calendar: a slot may change there too.
        if self.on_weekdays:
            clock.append(time(0, tzinfo=self.weekday_zone))
        changes = utc_changes(clock, midnight.date())
        off = self.applied(prices)
        slots = [
            off if self.is_open(midnight + timedelta(seconds=s)) else prices
            for s in (0.0, *changes)
        ]
        return merged_slots(changes, slots)


def _inside(windows: Sequence[Window], now: time) -> bool:
    for start, end in windows:
        if start < end:
            if start <= now < end:
                return True
        elif now >= start or now < end:
            return True
    return False


def _windows(value: Any) -> tuple[Window, ...]:
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    found = []
    for item in items:
        try:
            start, end = item.split("-")
            found.append((_clock(start), _clock(end)))
        except (AttributeError, ValueError):
            continue  # LiteLLM passes over a malformed window
    return tuple(found)


def _clock(text: str) -> time:
    return datetime.strptime(text.strip(), "%H:%M").time()


def _weekdays(value: Any) -> frozenset[int]:
    if isinstance(value, str) or not isinstance(value, list):
        return frozenset()
    days = set()
    for v in value:
        if isinstance(v, str):
            days.add(_WEEKDAYS.get(v.strip().lower(), 0))
        elif isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 7:
            days.add(v)
    return frozenset(days - {0})


def _zone(value: Any) -> tzinfo:
    if isinstance(value, str) and value.strip():
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            return ZoneInfo(value.strip())
        except (ValueError, ZoneInfoNotFoundError):
            pass
    return UTC


def _rate(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value) * MTOK if isinstance(value, int | float | str) else None
    except ValueError:
        return None


def parse_off_peak(block: Any) -> OffPeak | None:
    """An entry's ``off_peak_pricing`` block, or ``None`` when it has none that applies."""
    if not isinstance(block, dict):
        return None
    every_day = _windows(block.get("hours_utc"))
    rules = block.get("windows")
    on_weekdays = tuple(
        (_weekdays(r["weekdays"]) if r.get("weekdays") is not None else frozenset(range(1, 8)), w)
        for r in (rules if isinstance(rules, list) else [])
        if isinstance(r, dict) and (w := _windows(r.get("hours_utc")))
    )
    rates = tuple(
        (field, rate) for key, field in RATES.items() if (rate := _rate(block.get(key))) is not None
    )
    if not (every_day or on_weekdays) or not rates:
        return None
    return OffPeak(every_day, on_weekdays, _zone(block.get("weekday_timezone")), rates)


__all__ = ["OffPeak", "parse_off_peak"]
