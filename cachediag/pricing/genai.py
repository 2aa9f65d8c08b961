"""Prices from the ``genai-prices`` package (bundled snapshot, never fetched)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from functools import cache
from typing import Any

from cachediag.analysis.costs import ModelPrices
from cachediag.pricing.slots import DayPrices, merged_slots, utc_changes

SOURCE = "genai-prices"


@cache
def source_name() -> str:
    # The distribution's metadata, not ``genai_prices.__version__``: importing the
    # package loads all of its price data, which a run served from the disk cache skips.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{SOURCE} {version('genai-prices')}"
    except PackageNotFoundError:
        return SOURCE


def _base(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, Decimal):
        return float(value)
    return float(value.base)


def _tiers(value: Any) -> list[tuple[int, float]]:
    if value is None or isinstance(value, Decimal):
        return []
    return [(int(t.start), float(t.price)) for t in value.tiers]


def _tier_price(value: Any, start: int) -> float | None:
    """The price of ``value`` in the tier starting at ``start`` (the base if untiered)."""
    if value is None:
        return None
    chosen = _base(value)
    for tier_start, price in _tiers(value):
        if tier_start <= start:
            chosen = price
    return chosen


_KEYS = (
    "input_mtok",
    "cache_write_5m_mtok",
    "cache_write_mtok",
    "cache_write_1h_mtok",
    "cache_read_mtok",
    "output_mtok",
)


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def _flat(p: dict[str, float | None], source: str) -> ModelPrices | None:
    p_in, p_out = p["input_mtok"], p["output_mtok"]
    if p_in is None or p_out is None:
        return None
    # ``cache_write_5m_mtok`` is the newer spelling of the generic write price; a model
    # without cache prices bills cached tokens as plain input.
    write_5m = _first(p["cache_write_5m_mtok"], p["cache_write_mtok"], p_in)
    assert write_5m is not None
    return ModelPrices(
        input_mtok=p_in,
        cache_write_5m_mtok=write_5m,
        cache_write_1h_mtok=_first(p["cache_write_1h_mtok"], write_5m) or 0.0,
        cache_read_mtok=_first(p["cache_read_mtok"], p_in) or 0.0,
        output_mtok=p_out,
        source=source,
    )


def convert_model_price(price: Any, source: str) -> ModelPrices | None:
    """A genai-prices ``ModelPrice`` -> ``ModelPrices``; ``None`` without token prices.

    genai-prices applies the highest tier whose start the request's total input
    (cache reads and writes included) exceeds, to every token: one nested
    ``long_context`` level per tier start.
    """
    values = {k: getattr(price, k, None) for k in _KEYS}
    starts = sorted({s for v in values.values() for s, _ in _tiers(v)})
    base = _flat({k: _tier_price(v, -1) for k, v in values.items()}, source)
    if base is None:
        return None
    result: ModelPrices | None = None
    for i in range(len(starts) - 1, -1, -1):
        tier = _flat({k: _tier_price(v, starts[i]) for k, v in values.items()}, source)
        if tier is None:
            continue
        result = tier if result is None else _with_tier(tier, starts[i + 1], result)
    return base if result is None else _with_tier(base, starts[0], result)


def _with_tier(prices: ModelPrices, threshold: int, long_context: ModelPrices) -> ModelPrices:
    return replace(prices, long_context_threshold_tokens=threshold, long_context=long_context)


def genai_day_prices(model: str, day: int) -> DayPrices:
    """``model``'s prices over UTC day ``day`` (days since the epoch), one slot per
    stretch of the day between the times its time-of-day prices begin or end.

    Each slot holds genai-prices' own answer for the instant the slot begins: the
    times only say where the answer can change."""
    info = _model_info(model)
    if info is None:
        return DayPrices()
    midnight = datetime.combine(date.fromordinal(_EPOCH_ORDINAL + day), time(), UTC)
    changes = utc_changes(_times_of_day(info), midnight.date())
    starts = [0.0, *changes]
    slots = [_prices_at(info, midnight + timedelta(seconds=s)) for s in starts]
    return merged_slots(changes, slots)


def genai_prices(model: str, at: float) -> ModelPrices | None:
    """``model``'s prices at one instant, looked up afresh (nothing memoised)."""
    info = _model_info(model)
    return None if info is None else _prices_at(info, datetime.fromtimestamp(at, UTC))


_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


def _model_info(model: str) -> Any:
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    for ref, provider_id in _references(model):
        try:
            return snapshot.find_provider_model(ref, None, provider_id, None)[1]
        except LookupError:
            continue
    return None


def _times_of_day(info: Any) -> list[time]:
    """Where ``info``'s conditional prices start or stop in a day. (Price variants can
    carry such times too, but they apply only with a request context, never passed.)"""
    from genai_prices.types import TimeOfDateConstraint

    conditional = info.prices if isinstance(info.prices, list) else []
    bounds = [c.constraint for c in conditional if isinstance(c.constraint, TimeOfDateConstraint)]
    return [t for c in bounds for t in (c.start_time, c.end_time)]


def _prices_at(info: Any, when: datetime) -> ModelPrices | None:
    found = convert_model_price(info.get_prices(when), f"{source_name()} ({info.id})")
    return _fill_long_context(found, info.id)


def _references(model: str) -> list[tuple[str, str | None]]:
    """Where to look a model up: routers name models ``vendor/model`` (OpenRouter's
    ids); genai-prices knows many under the ``openrouter`` provider, else under their
    vendor."""
    refs: list[tuple[str, str | None]] = [(model, None)]
    if "/" in model:
        refs += [(model, "openrouter"), (model.split("/", 1)[1], None)]
    return refs


LONG_CONTEXT_GAPS: dict[str, tuple[int, float, float]] = {
    # genai-prices id: (threshold, factor on input/cache prices, factor on output).
    # Sonnet 4 bills a whole request over 200k prompt tokens at $6 in / $22.50 out
    # (pricing.md); genai-prices 0.2.3 has that tier for Sonnet 4.5 but not for Sonnet 4.
    "claude-sonnet-4-0": (200_000, 2.0, 1.5),
}


def _fill_long_context(prices: ModelPrices | None, model_id: str) -> ModelPrices | None:
    gap = LONG_CONTEXT_GAPS.get(model_id)
    if prices is None or gap is None or prices.long_context is not None:
        return prices
    threshold, factor_in, factor_out = gap
    tier = replace(
        prices,
        input_mtok=prices.input_mtok * factor_in,
        cache_write_5m_mtok=prices.cache_write_5m_mtok * factor_in,
        cache_write_1h_mtok=prices.cache_write_1h_mtok * factor_in,
        cache_read_mtok=prices.cache_read_mtok * factor_in,
        output_mtok=prices.output_mtok * factor_out,
        source=prices.source + " + long-context tier of pricing.md",
    )
    return _with_tier(prices, threshold, tier)
