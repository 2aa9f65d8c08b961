"""The one door to price lookup, opened only when a model has no saved price.

``cachediag.pricing`` (genai-prices behind it) takes ~170 ms to import, more than a whole
warm status line; it is imported here lazily, at most once per model per state file.
"""

from __future__ import annotations

from typing import Any

from cachediag.analysis.costs import ModelPrices


def lookup_prices(model: str, at: float | None = None) -> ModelPrices | None:
    """Prices for ``model`` (at time ``at``), or ``None`` when unknown or unavailable.

    ``None`` means the cost is left out of the status line, never shown as $0.
    Expects ``cachediag.pricing.prices_for_model(model, at) -> ModelPrices | None``.
    """
    try:
        from cachediag import pricing  # type: ignore[attr-defined, unused-ignore]
    except Exception:  # not installed, or failed to load: no prices, no crash
        return None
    find: Any = getattr(pricing, "prices_for_model", None)
    if find is None:
        return None
    try:
        found = find(model, at)
    except Exception:
        return None
    return found if isinstance(found, ModelPrices) else None
