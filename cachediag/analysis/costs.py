"""What requests and misses cost (prompt-cache.md §5). Pure arithmetic over given prices.

Prices are looked up elsewhere (``cachediag.pricing``); this module never loads price
data, so the status line can price from prices it saved earlier.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.model import RequestRecord

PER_TOKEN = 1e-6
"""Prices are per million tokens."""


@dataclass(slots=True, frozen=True)
class ModelPrices:
    """USD per million tokens for one model at one date, one context tier."""

    input_mtok: float
    cache_write_5m_mtok: float
    cache_write_1h_mtok: float
    cache_read_mtok: float
    output_mtok: float
    long_context_threshold_tokens: int | None = None
    long_context: ModelPrices | None = None
    """Prices for a whole request whose prompt exceeds the threshold."""
    source: str = ""

    def tier_for(self, prompt_tokens: int) -> ModelPrices:
        threshold = self.long_context_threshold_tokens
        if self.long_context is not None and threshold is not None and prompt_tokens > threshold:
            return self.long_context.tier_for(prompt_tokens)
        return self


def _write_split(record: RequestRecord) -> tuple[int, int]:
    """(5m, 1h) creation tokens; an unsplit count is written at the record's own TTL."""
    c5m, c1h = record.cache_creation_5m_tokens, record.cache_creation_1h_tokens
    if c5m is None and c1h is None:
        total = record.cache_creation_tokens
        return (0, total) if record.ttl == "1h" else (total, 0)
    return c5m or 0, c1h or 0


def request_cost_usd(record: RequestRecord, prices: ModelPrices) -> float:
    p = prices.tier_for(record.total_tokens)
    c5m, c1h = _write_split(record)
    return PER_TOKEN * (
        record.input_tokens * p.input_mtok
        + c5m * p.cache_write_5m_mtok
        + c1h * p.cache_write_1h_mtok
        + record.cache_read_tokens * p.cache_read_mtok
        + record.output_tokens * p.output_mtok
    )


def miss_cost_usd(entry: LedgerEntry, prices: ModelPrices) -> float:
    """What a miss (or rebuild) paid beyond a hit: re-processed tokens not at read price.

    The re-processed tokens were written to the cache (or sent uncached when the request
    wrote less than that); a hit would have read them.
    """
    if entry.outcome not in (Outcome.MISS, Outcome.EXPECTED) or entry.reprocessed_tokens <= 0:
        return 0.0
    record = entry.record
    p = prices.tier_for(record.total_tokens)
    c5m, c1h = _write_split(record)
    written = c5m + c1h
    reprocessed = entry.reprocessed_tokens
    as_write = min(reprocessed, written)
    as_input = reprocessed - as_write
    write_price = (
        (c5m * p.cache_write_5m_mtok + c1h * p.cache_write_1h_mtok) / written if written else 0.0
    )
    return PER_TOKEN * (
        as_write * (write_price - p.cache_read_mtok) + as_input * (p.input_mtok - p.cache_read_mtok)
    )


PriceFn = Callable[[RequestRecord], "ModelPrices | None"]
"""Prices for one request (its model at its instant); ``None`` when unknown. The ones
``cachediag.pricing`` gives are memoised (per model, UTC day and time-of-day slot):
callers ask per request."""


@dataclass(slots=True)  # not frozen: cachediag.analysis says why
class EntryCost:
    """What one request cost, and what its miss paid beyond a hit."""

    cost_usd: float | None
    """``None``: the request's model has no price (never counted as $0)."""
    miss_cost_usd: float | None
    reported: bool = False
    """``cost_usd`` is what the provider reported (OpenRouter ``usage.cost``), not
    worked out from list prices; the miss's share still needs list prices."""


@dataclass(slots=True)
class CostTotals:
    """Costs summed over requests; unpriced ones are counted, never priced at $0."""

    cost_usd: float = 0.0
    miss_cost_usd: float = 0.0
    """What misses and announced rebuilds paid beyond hits."""
    unpriced_requests: int = 0
    reported_requests: int = 0
    """Requests costed at what the provider reported instead of list prices."""


def sum_costs(parts: Iterable[CostTotals]) -> CostTotals:
    total = CostTotals()
    for c in parts:
        total.cost_usd += c.cost_usd
        total.miss_cost_usd += c.miss_cost_usd
        total.unpriced_requests += c.unpriced_requests
        total.reported_requests += c.reported_requests
    return total


def entry_cost(entry: LedgerEntry, price_of: PriceFn) -> EntryCost:
    prices = price_of(entry.record)
    reported = entry.record.reported_cost_usd
    if reported is not None:
        # The provider's own bill beats list prices (routing, discounts, BYOK fees).
        return EntryCost(reported, None if prices is None else miss_cost_usd(entry, prices), True)
    if prices is None:
        return EntryCost(None, None)
    return EntryCost(request_cost_usd(entry.record, prices), miss_cost_usd(entry, prices))


def total_costs(entries: Iterable[LedgerEntry], price_of: PriceFn) -> CostTotals:
    return totals_of(entry_cost(entry, price_of) for entry in entries)


def totals_of(costs: Iterable[EntryCost]) -> CostTotals:
    """Sum of costs already worked out, for callers that also report them one by one."""
    totals = CostTotals()
    for c in costs:
        if c.cost_usd is None:
            totals.unpriced_requests += 1
        else:
            totals.cost_usd += c.cost_usd
            totals.miss_cost_usd += c.miss_cost_usd or 0.0
            totals.reported_requests += c.reported
    return totals
