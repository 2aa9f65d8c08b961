"""Tokens and dollars of a set of requests, and the per-request columns they are summed
from. Pure: no I/O.

An audit sums every request into its session's totals and into one group per
breakdown (day, model, cause...). ``Rows`` keeps a session's requests as columns and
sums each group once, in request order, so the sums are those of adding the requests
one by one.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import reduce
from operator import itemgetter
from typing import Any

from cachediag.analysis.ledger import LedgerEntry, Outcome


@dataclass(slots=True)
class Totals:
    """Tokens and dollars of a set of requests; costs cover priced requests only."""

    requests: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_requests: int = 0
    misses: int = 0
    expected_rebuilds: int = 0
    reprocessed_tokens: int = 0
    """Tokens misses and rebuilds processed again instead of reading them."""
    miss_cost_usd: float = 0.0
    rebuild_cost_usd: float = 0.0

    def add(self, o: Totals) -> None:
        self.requests += o.requests
        self.input_tokens += o.input_tokens
        self.cache_read_tokens += o.cache_read_tokens
        self.cache_creation_tokens += o.cache_creation_tokens
        self.output_tokens += o.output_tokens
        self.cost_usd += o.cost_usd
        self.unpriced_requests += o.unpriced_requests
        self.misses += o.misses
        self.expected_rebuilds += o.expected_rebuilds
        self.reprocessed_tokens += o.reprocessed_tokens
        self.miss_cost_usd += o.miss_cost_usd
        self.rebuild_cost_usd += o.rebuild_cost_usd

    @property
    def recache_share(self) -> float | None:
        """Share of the priced spend that paid for re-caching (misses and rebuilds)."""
        if self.cost_usd <= 0:
            return None
        return (self.miss_cost_usd + self.rebuild_cost_usd) / self.cost_usd


def _sum_floats(values: Iterable[float]) -> float:
    # Added one by one, left to right, as a running ``Totals`` adds them (``sum`` of
    # floats is compensated from Python 3.12 on, so its last digit may differ).
    return reduce(operator.add, values, 0.0)


class Rows:
    """One session's counted requests, a column per ``Totals`` field, so that the totals
    of each group are summed once at the end rather than request by request."""

    __slots__ = (
        "cost",
        "count",
        "creation",
        "expected",
        "input",
        "miss",
        "miss_cost",
        "output",
        "read",
        "rebuild_cost",
        "reprocessed",
        "unpriced",
    )

    def __init__(self) -> None:
        self.count = 0
        self.input: list[int] = []
        self.read: list[int] = []
        self.creation: list[int] = []
        self.output: list[int] = []
        self.cost: list[float] = []
        self.unpriced: list[int] = []
        self.miss: list[int] = []
        self.expected: list[int] = []
        self.reprocessed: list[int] = []
        self.miss_cost: list[float] = []
        self.rebuild_cost: list[float] = []

    def add(self, e: LedgerEntry, cost: float | None, miss_cost: float | None) -> None:
        r = e.record
        self.count += 1
        self.input.append(r.input_tokens)
        self.read.append(r.cache_read_tokens)
        self.creation.append(r.cache_creation_tokens)
        self.output.append(r.output_tokens)
        self.cost.append(0.0 if cost is None else cost)
        self.unpriced.append(cost is None)
        is_miss, is_expected = e.outcome is Outcome.MISS, e.outcome is Outcome.EXPECTED
        self.miss.append(is_miss)
        self.expected.append(is_expected)
        self.reprocessed.append(e.reprocessed_tokens if is_miss or is_expected else 0)
        self.miss_cost.append((miss_cost or 0.0) if is_miss else 0.0)
        self.rebuild_cost.append((miss_cost or 0.0) if is_expected else 0.0)

    def totals(self, rows: list[int] | None = None) -> Totals:
        """The totals of ``rows`` (indexes, in order), or of every row."""
        pick: Callable[[list[Any]], Sequence[Any]]
        if rows is None:
            pick = _every
        elif len(rows) == 1:
            (only,) = rows
            pick = lambda column: (column[only],)  # noqa: E731
        else:
            pick = itemgetter(*rows)
        return Totals(
            requests=self.count if rows is None else len(rows),
            input_tokens=sum(pick(self.input)),
            cache_read_tokens=sum(pick(self.read)),
            cache_creation_tokens=sum(pick(self.creation)),
            output_tokens=sum(pick(self.output)),
            cost_usd=_sum_floats(pick(self.cost)),
            unpriced_requests=sum(pick(self.unpriced)),
            misses=sum(pick(self.miss)),
            expected_rebuilds=sum(pick(self.expected)),
            reprocessed_tokens=sum(pick(self.reprocessed)),
            miss_cost_usd=_sum_floats(pick(self.miss_cost)),
            rebuild_cost_usd=_sum_floats(pick(self.rebuild_cost)),
        )

    def grouped(self, keys: list[str], every: Totals) -> dict[str, Totals]:
        """Totals per key (``keys`` holds one per row); ``every``: the totals of all."""
        first = keys[0]
        if keys.count(first) == len(keys):
            return {first: replace(every)}
        rows: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            rows.setdefault(key, []).append(i)
        return {key: self.totals(indexes) for key, indexes in rows.items()}


def _every(column: list[Any]) -> list[Any]:
    return column
