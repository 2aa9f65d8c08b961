"""Model prices for the cost engine: ``lookup_prices(model, at)``.

Default source: the ``genai-prices`` package (bundled data, offline). ``pricing_file``
names a user override: LiteLLM's ``model_prices_and_context_window.json`` or cachediag's
own small format (see ``overrides``). A model the source does not know is ``None``,
reported as unpriced, never priced at $0.

This module stays light: the status line imports it on every run, so the price data is
loaded only on the first lookup, and lookups are memoised per (model, UTC day, file),
each day in the slots its time-of-day prices cut it into (``slots``).
"""

from __future__ import annotations

import functools
from bisect import bisect_right
from pathlib import Path

from cachediag.analysis.costs import ModelPrices, PriceFn
from cachediag.model import RequestRecord
from cachediag.pricing.slots import DAY_S, DayPrices

__all__ = [
    "DayPrices",
    "ModelPrices",
    "day_prices",
    "lookup_prices",
    "price_function",
    "pricing_source",
]

_MEMO: dict[tuple[str, int, str | None], DayPrices] = {}


def _day(at: float) -> int:
    # Price histories change on UTC dates (genai-prices' StartDateConstraint) and
    # time-of-day prices within a day: a lookup per UTC day (days since the epoch)
    # holds the day's slots, and a request picks its own.
    return int(at // DAY_S)


def lookup_prices(model: str, at: float, pricing_file: Path | None = None) -> ModelPrices | None:
    """Prices of ``model`` in force at ``at`` (Unix seconds), or ``None`` when unknown.

    Raises ``cachediag.errors.PricingError`` when ``pricing_file`` cannot be used.
    """
    day = _day(at)
    return day_prices(model, day, pricing_file).at(at - day * DAY_S)


def day_prices(model: str, day: int, pricing_file: Path | None = None) -> DayPrices:
    """``model``'s prices over UTC day ``day`` (days since the epoch), in its slots.

    Raises ``cachediag.errors.PricingError`` when ``pricing_file`` cannot be used.
    """
    key = (model, day, None if pricing_file is None else str(pricing_file))
    try:
        return _MEMO[key]
    except KeyError:
        pass
    if pricing_file is None:
        from cachediag.pricing.disk import DISK

        disk_key = f"{model}|{day}"
        found = DISK.get(disk_key)
        if found is None:
            from cachediag.pricing.genai import genai_day_prices

            found = genai_day_prices(model, day)
            DISK.put(disk_key, found)
    else:
        from cachediag.pricing.overrides import load_price_file

        found = load_price_file(pricing_file).day_prices(model, day)
    _MEMO[key] = found
    return found


def pricing_source(pricing_file: Path | None = None) -> str:
    """Which source (and version) prices a run, for every report to state; worked out
    once per process (every session's JSON line names it)."""
    return _pricing_source(pricing_file)


@functools.cache
def _pricing_source(pricing_file: Path | None) -> str:
    if pricing_file is None:
        from cachediag.pricing.disk import DISK

        saved = DISK.source()
        if saved is None:
            from cachediag.pricing.genai import source_name

            saved = source_name()
            DISK.set_source(saved)
        return saved
    from cachediag.pricing.overrides import load_price_file

    return load_price_file(pricing_file).source


def price_function(pricing_file: Path | None = None) -> PriceFn:
    """Prices per request record, for the analysis functions (which never look up).

    One function per price file for the whole process, holding its answers per (model,
    UTC day) with the day's slots: every session of a run asks for it, and most of
    their requests share a few models and days (and one slot a day)."""
    return _price_function(pricing_file)


@functools.cache
def _price_function(pricing_file: Path | None) -> PriceFn:
    # A day with one price is memoised as that price, a day of slots as its DayPrices:
    # the common case costs a dict hit and a class check (analyze and audit ask per
    # request).
    memo: dict[tuple[str | None, float], ModelPrices | DayPrices | None] = {}
    slotted = DayPrices

    def price_of(record: RequestRecord) -> ModelPrices | None:
        key = (record.model, record.at // DAY_S)
        try:
            found = memo[key]
        except KeyError:
            model = record.model
            if model is None:
                memo[key] = None
                return None
            day = day_prices(model, int(key[1]), pricing_file)
            found = memo[key] = day if day.changes else day.slots[0]
        if found.__class__ is slotted:
            assert isinstance(found, DayPrices)
            return found.slots[bisect_right(found.changes, record.at - key[1] * DAY_S)]
        return found  # type: ignore[return-value]

    return price_of
