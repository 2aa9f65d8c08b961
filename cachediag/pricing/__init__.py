"""Model prices for the cost engine: ``lookup_prices(model, at)``.

Default source: the ``genai-prices`` package (bundled data, offline). ``pricing_file``
names a user override: LiteLLM's ``model_prices_and_context_window.json`` or cachediag's
own small format (see ``overrides``). A model the source does not know is ``None``,
reported as unpriced, never priced at $0.

This module stays light: the status line imports it on every run, so the price data is
loaded only on the first lookup, and lookups are memoised per (model, day, file).
"""

from __future__ import annotations

import functools
from pathlib import Path

from cachediag.analysis.costs import ModelPrices, PriceFn
from cachediag.model import RequestRecord

__all__ = ["ModelPrices", "lookup_prices", "price_function", "pricing_source"]

_MEMO: dict[tuple[str, int, str | None], ModelPrices | None] = {}
_DAY_S = 86400


def _day(at: float) -> int:
    # Price histories change on UTC dates (genai-prices' StartDateConstraint), so a
    # lookup per UTC day (days since the epoch) is exact for them and cheap.
    return int(at // _DAY_S)


def lookup_prices(model: str, at: float, pricing_file: Path | None = None) -> ModelPrices | None:
    """Prices of ``model`` in force at ``at`` (Unix seconds), or ``None`` when unknown.

    Raises ``cachediag.errors.PricingError`` when ``pricing_file`` cannot be used.
    """
    file_key = None if pricing_file is None else str(pricing_file)
    key = (model, _day(at), file_key)
    if key in _MEMO:
        return _MEMO[key]
    if pricing_file is None:
        from cachediag.pricing.disk import DISK

        disk_key = f"{model}|{key[1]}"
        known, found = DISK.get(disk_key)
        if not known:
            from cachediag.pricing.genai import genai_prices

            found = genai_prices(model, at)
            DISK.put(disk_key, found)
    else:
        from cachediag.pricing.overrides import load_price_file

        found = load_price_file(pricing_file).prices(model, at)
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
    UTC day): every session of a run asks for it, and most of their requests share a
    few models and days."""
    return _price_function(pricing_file)


@functools.cache
def _price_function(pricing_file: Path | None) -> PriceFn:
    memo: dict[tuple[str, int], ModelPrices | None] = {}

    def price_of(record: RequestRecord) -> ModelPrices | None:
        model = record.model
        if model is None:
            return None
        key = (model, int(record.at // _DAY_S))
        try:
            return memo[key]
        except KeyError:
            prices = memo[key] = lookup_prices(model, record.at, pricing_file)
            return prices

    return price_of
