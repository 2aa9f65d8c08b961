"""Tokens and dollars of a set of requests, and the per-request columns they are summed
from. Pure: no I/O; prices come in as a ``PriceFn``.

``Totals`` is the one running-total type: an audit sums every request into its
session's totals and into one group per breakdown (day, model, cause...); ``analyze``
sums each session (``session_totals``: tokens deduplicated per response, as the ledgers
count them, and, given prices, each request priced once) into the line under its
reports (``SessionTotals``). ``Rows`` keeps a session's requests as columns and sums each
group once, in request order, so the sums are those of adding the requests one by one.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from cachediag.analysis.costs import EntryCost, PriceFn, entry_cost
from cachediag.analysis.ledger import LedgerEntry, Outcome

if TYPE_CHECKING:  # annotations only: session_analysis needs nothing from here
    from cachediag.analysis.session_analysis import SessionAnalysis


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

    def copy(self) -> Totals:
        # Each field is 0 plus itself: the same value (a sum from 0.0 is never -0.0).
        twin = Totals()
        twin.add(self)
        return twin

    @property
    def recache_share(self) -> float | None:
        """Share of the priced spend that paid for re-caching (misses and rebuilds)."""
        if self.cost_usd <= 0:
            return None
        return (self.miss_cost_usd + self.rebuild_cost_usd) / self.cost_usd


def session_totals(a: SessionAnalysis, price_of: PriceFn | None = None) -> Totals:
    """One session's ``Totals`` over all its streams. Counts and tokens are the ledgers'
    (each API response once); costs only with ``price_of``, each request priced as its
    own JSON line prices it (``entry_cost``: a provider's reported cost first), costs of
    unpriced requests never counted as $0."""
    return _session_sums(a, price_of)[0]


def _session_sums(a: SessionAnalysis, price_of: PriceFn | None) -> tuple[Totals, float]:
    """``session_totals``, and what misses and rebuilds paid together, summed in request
    order as the session's cost line sums it (``miss + rebuild`` may differ in the last
    bit, and a printed cent with it)."""
    t = Totals()
    recache = 0.0
    for s in a.streams:
        led = s.ledger
        t.requests += led.requests
        t.input_tokens += led.input_tokens
        t.cache_read_tokens += led.read_tokens
        t.cache_creation_tokens += led.creation_tokens
        t.output_tokens += led.output_tokens
        t.misses += led.misses
        t.expected_rebuilds += led.expected_rebuilds
        for e in s.entries:
            t.reprocessed_tokens += e.reprocessed_tokens
            if price_of is not None:
                recache += _add_cost(t, e, entry_cost(e, price_of))
    return t, recache


def _add_cost(t: Totals, e: LedgerEntry, c: EntryCost) -> float:
    """Adds a priced request to ``t``; returns what its miss or rebuild paid."""
    if c.cost_usd is None:
        t.unpriced_requests += 1
        return 0.0
    t.cost_usd += c.cost_usd
    paid = c.miss_cost_usd or 0.0
    if e.outcome is Outcome.MISS:
        t.miss_cost_usd += paid
    elif e.outcome is Outcome.EXPECTED:
        t.rebuild_cost_usd += paid
    return paid


@dataclass(slots=True)
class SessionTotals:
    """What several sessions add up to, for the line under ``analyze``'s reports."""

    sessions: int = 0
    priced: bool = False
    """Prices were looked up (``totals.unpriced_requests`` of the requests had none)."""
    totals: Totals = field(default_factory=Totals)
    recache_usd: float = 0.0
    """``totals.miss_cost_usd + totals.rebuild_cost_usd``, summed as the sessions' own
    cost lines sum them, so the total shows the cents their figures add up to."""

    def add(self, a: SessionAnalysis, price_of: PriceFn | None) -> None:
        self.sessions += 1
        self.priced = self.priced or price_of is not None
        t, recache = _session_sums(a, price_of)
        self.totals.add(t)
        self.recache_usd += recache


# Floats are added one by one, left to right, as a running ``Totals`` adds them.
if sys.version_info >= (3, 12):
    # ``sum`` of floats is compensated from 3.12 on, so its last digit may differ.
    def _sum_floats(values: Iterable[float]) -> float:
        return reduce(operator.add, values, 0.0)

else:
    # Before, ``sum`` adds them exactly so, in C: several times faster than ``reduce``.
    def _sum_floats(values: Iterable[float]) -> float:
        return sum(values, 0.0)


class Rows:
    """One session's counted requests, each a tuple: the ``Totals`` fields of the request
    (``requests`` left out: it is one), then its group keys (one per breakdown). The
    totals of each group are summed once, column by column, rather than request by
    request; the columns are built at the end (``zip``), in C."""

    __slots__ = ("columns", "count")

    FIELDS = 11
    """Leading items of a row that are ``Totals`` fields, from ``input_tokens`` on."""

    def __init__(self, rows: list[tuple[Any, ...]], width: int) -> None:
        self.count = len(rows)
        self.columns: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) or [()] * width

    def totals(self, rows: list[int] | None = None) -> Totals:
        """The totals of ``rows`` (indexes, in order), or of every row."""
        pick: Callable[[tuple[Any, ...]], Sequence[Any]]
        if rows is None:
            pick = _every
        elif len(rows) == 1:
            (only,) = rows
            pick = lambda column: (column[only],)  # noqa: E731
        else:
            pick = itemgetter(*rows)
        c = self.columns
        return Totals(
            requests=self.count if rows is None else len(rows),
            input_tokens=sum(pick(c[0])),
            cache_read_tokens=sum(pick(c[1])),
            cache_creation_tokens=sum(pick(c[2])),
            output_tokens=sum(pick(c[3])),
            cost_usd=_sum_floats(pick(c[4])),
            unpriced_requests=sum(pick(c[5])),
            misses=sum(pick(c[6])),
            expected_rebuilds=sum(pick(c[7])),
            reprocessed_tokens=sum(pick(c[8])),
            miss_cost_usd=_sum_floats(pick(c[9])),
            rebuild_cost_usd=_sum_floats(pick(c[10])),
        )

    def grouped(self, column: int, every: Totals) -> dict[str, Totals]:
        """Totals per key of ``column`` (a key column of the rows); ``every``: the totals
        of all the rows."""
        keys = self.columns[column]
        first = keys[0]
        if keys.count(first) == len(keys):
            return {first: every.copy()}
        rows: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            try:  # faster than setdefault, which builds a list every time
                rows[key].append(i)
            except KeyError:
                rows[key] = [i]
        return {key: self.totals(indexes) for key, indexes in rows.items()}


def _every(column: tuple[Any, ...]) -> tuple[Any, ...]:
    return column
