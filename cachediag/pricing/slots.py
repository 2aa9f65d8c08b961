"""One model's prices over one UTC day, in slots cut where its prices change that day.

genai-prices can price a model by the hour of the day (``TimeOfDateConstraint``:
DeepSeek's peak and off-peak hours), and dates its other price changes to UTC midnights
(``StartDateConstraint``). So every memo of prices (in process, on disk, in the status
line's state) keeps, per model and UTC day, the seconds after midnight at which a new
price begins and one price table per slot between them: a request finds its slot with
one bisect, and a model without hourly prices has a single slot (one lookup a day).

Stdlib only at import: the status line reads saved slots without the price data.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cachediag.analysis.costs import ModelPrices

DAY_S = 86400
_EPOCH_DAY = date(1970, 1, 1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class DayPrices:
    """A model's prices over one UTC day; ``None`` in a slot: unpriced then."""

    changes: tuple[float, ...] = ()
    """Seconds after UTC midnight, ascending, each in (0, 86400): where a slot begins."""
    slots: tuple[ModelPrices | None, ...] = (None,)
    """One more than ``changes``: the prices before the first change, then after each."""

    def at(self, second: float) -> ModelPrices | None:
        """The prices in force ``second`` seconds after the day's UTC midnight (a change
        at that very second is in force)."""
        return self.slots[bisect_right(self.changes, second)] if self.changes else self.slots[0]

    def to_data(self) -> dict[str, Any]:
        """Plain JSON values, for the disk cache and the status line's state."""
        return {
            "changes": list(self.changes),
            "slots": [None if p is None else asdict(p) for p in self.slots],
        }


def day_prices_from_data(raw: Any) -> DayPrices:
    """What ``DayPrices.to_data`` wrote, checked: raises ``ValueError`` for anything
    else (a damaged or foreign entry is then looked up again)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("changes"), list):
        raise ValueError("day prices that are not an object with changes")
    changes, slots = raw["changes"], raw.get("slots")
    if not all(isinstance(c, int | float) and not isinstance(c, bool) for c in changes):
        raise ValueError("a change that is not a number")
    if any(not 0 < c < DAY_S for c in changes) or changes != sorted(set(changes)):
        raise ValueError("changes out of the day or out of order")
    if not isinstance(slots, list) or len(slots) != len(changes) + 1:
        raise ValueError("not one price slot more than changes")
    return DayPrices(tuple(float(c) for c in changes), tuple(_prices_from_data(s) for s in slots))


def _prices_from_data(raw: Any) -> ModelPrices | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("a price entry that is not an object")
    from cachediag.analysis.costs import ModelPrices  # only a day with prices needs it
    from cachediag.pricing.checks import checked_prices

    values = dict(raw)
    values["long_context"] = _prices_from_data(values.get("long_context"))
    try:
        return checked_prices(ModelPrices(**values))
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def merged_slots(changes: Iterable[float], slots: Iterable[ModelPrices | None]) -> DayPrices:
    """Slots with a change between two equal neighbours dropped (one slot when the
    day's prices never change)."""
    kept_changes: list[float] = []
    it = iter(slots)
    kept_slots = [next(it)]
    for change, prices in zip(changes, it, strict=True):
        if prices != kept_slots[-1]:
            kept_changes.append(change)
            kept_slots.append(prices)
    return DayPrices(tuple(kept_changes), tuple(kept_slots))


def utc_changes(times: Iterable[time], day: date) -> list[float]:
    """Seconds after ``day``'s UTC midnight at which the clock times ``times`` fall on
    that UTC day, ascending, midnight itself left out (a day starts a slot anyway).

    A naive time is UTC. A zoned one is placed at the zone's offset on each local date
    that can fall on ``day`` (so a DST change moves it), and also where genai-prices'
    ``TimeOfDateConstraint.active`` puts it (at the zone's offset of 1970-01-01): a cut
    too many only parts two slots with equal prices (``merged_slots`` joins them), so
    the slots are right under either reading."""
    midnight = datetime.combine(day, time(), UTC)
    found: set[float] = set()
    for t in times:
        zoned = t if t.tzinfo is not None else t.replace(tzinfo=UTC)
        as_of_1970 = datetime.combine(_EPOCH_DAY, zoned).astimezone(UTC)
        found.add((as_of_1970 - _EPOCH).total_seconds() % DAY_S)
        for shift in (-1, 0, 1):
            at = datetime.combine(day + timedelta(days=shift), zoned).astimezone(UTC)
            found.add((at - midnight).total_seconds())
    return sorted(s for s in found if 0 < s < DAY_S)


__all__ = ["DAY_S", "DayPrices", "day_prices_from_data", "merged_slots", "utc_changes"]
