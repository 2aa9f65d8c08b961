"""The one door to price lookup, opened only when a model has no saved price.

``cachediag.pricing`` answers from its disk cache when it can; on a model it has never
priced it loads genai-prices (~170 ms, more than a whole warm status line). The status
line therefore saves prices in its state file and asks here at most once per model and
UTC day (the day's time-of-day slots come with the answer).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cachediag.pricing.slots import DayPrices


def day_prices(model: str, day: int) -> DayPrices:
    """``model``'s prices over UTC day ``day`` (days since the epoch), in its slots;
    a slot of ``None`` when unknown or unavailable.

    ``None`` means the cost is left out of the status line, never shown as $0.
    """
    from cachediag.pricing.slots import DayPrices

    try:
        from cachediag.pricing import day_prices as find

        return find(model, day)
    except Exception:  # price data missing or broken: no cost shown, never a crash
        return DayPrices()
