"""The one door to price lookup, opened only when a model has no saved price.

``cachediag.pricing`` answers from its disk cache when it can; on a model it has never
priced it loads genai-prices (~170 ms, more than a whole warm status line). The status
line therefore saves prices in its state file and asks here at most once per model.
"""

from __future__ import annotations

import time

from cachediag.analysis.costs import ModelPrices


def lookup_prices(model: str, at: float | None = None) -> ModelPrices | None:
    """Prices for ``model`` (at time ``at``), or ``None`` when unknown or unavailable.

    ``None`` means the cost is left out of the status line, never shown as $0.
    """
    try:
        from cachediag.pricing import lookup_prices as find

        return find(model, time.time() if at is None else at)
    except Exception:  # price data missing or broken: no cost shown, never a crash
        return None
