"""What makes prices usable: finite, non-negative numbers (a NaN or a negative price
would print ``$nan`` or a negative cost, and emit non-standard JSON)."""

from __future__ import annotations

import math

from cachediag.analysis.costs import ModelPrices

_RATES = (
    "input_mtok",
    "cache_write_5m_mtok",
    "cache_write_1h_mtok",
    "cache_read_mtok",
    "output_mtok",
)


def checked_prices(prices: ModelPrices) -> ModelPrices:
    """``prices`` when every rate is a finite number >= 0 (and so is its long-context
    tier); raises ``ValueError`` naming the first field that is not."""
    for name in _RATES:
        value = getattr(prices, name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{name} is not a number")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0")
    threshold = prices.long_context_threshold_tokens
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int) or threshold <= 0
    ):
        raise ValueError("long_context_threshold_tokens must be a positive integer")
    if not isinstance(prices.source, str):
        raise ValueError("source is not text")
    if prices.long_context is not None:
        if not isinstance(prices.long_context, ModelPrices):
            raise ValueError("long_context is not a price table")
        checked_prices(prices.long_context)
    return prices


__all__ = ["checked_prices"]
