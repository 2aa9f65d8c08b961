"""One TTL policy's walk along one stream, a request at a step (the what-if's replay,
prompt-cache.md §6).

Each request is replayed with the same prompt; only whether the cached prefix was still
alive, and the price of writing it, change with the policy:

- a miss the ledger put down to an expired TTL becomes a hit when the policy's TTL (or a
  keep-alive) would have kept the prefix alive: what it re-processed is read instead;
- a hit becomes a miss when the policy's TTL is shorter than the one in force and the
  pause outlasted it: what it read is written again;
- every other request (cold starts, rebuilds after compaction, misses with other causes)
  keeps its tokens, its writes priced at the policy's TTL.
"""

from __future__ import annotations

import math
from dataclasses import replace

from cachediag.analysis.causes import Cause
from cachediag.analysis.costs import PER_TOKEN, ModelPrices, request_cost_usd
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.ttl_policies import Policy
from cachediag.model import TTL_SECONDS, RequestRecord

KEEP_ALIVE_EVERY_S = 270.0
"""A keep-alive is sent 4.5 minutes into a pause, before the 5-minute entry expires."""
KEEP_ALIVE_MAX_PAUSE_S = 3600.0
"""A keep-alive cannot know how long a pause will last; it gives up after an hour."""
KEEP_ALIVE_OUTPUT_TOKENS = 1

_TTL_CAUSES = frozenset({Cause.TTL_EXPIRED_5M, Cause.TTL_EXPIRED_1H})


def is_ttl_miss(entry: LedgerEntry) -> bool:
    d = entry.diagnosis
    return d is not None and any(c in _TTL_CAUSES for c in d.causes)


def _pause_idle(entry: LedgerEntry) -> tuple[float, float]:
    """(pause, idle) before a request: the pause since the previous response, through
    which a keep-alive sender pings, and the cache's idle time, which restarts at a
    compaction announced in between (a compaction touches the cache, §2), for every
    outcome alike."""
    pause = entry.gap_s or 0.0
    at = entry.announced_at
    if at is None:
        return pause, pause
    return pause, min(pause, entry.record.at - at)


def keep_alive_pings(idle_s: float) -> int:
    """Keep-alives sent during a pause: every 270 s, for at most an hour."""
    if idle_s <= KEEP_ALIVE_EVERY_S:
        return 0
    last = min(idle_s, KEEP_ALIVE_MAX_PAUSE_S)
    return math.ceil(last / KEEP_ALIVE_EVERY_S) - 1


def _priced(record: RequestRecord, write_ttl: str, prices: ModelPrices) -> float:
    """``request_cost_usd`` with every write at ``write_ttl`` (no record copy: hot path)."""
    p = prices.tier_for(record.total_tokens)
    write = p.cache_write_1h_mtok if write_ttl == "1h" else p.cache_write_5m_mtok
    return PER_TOKEN * (
        record.input_tokens * p.input_mtok
        + record.cache_creation_tokens * write
        + record.cache_read_tokens * p.cache_read_mtok
        + record.output_tokens * p.output_mtok
    )


def priced_both(record: RequestRecord, prices: ModelPrices) -> tuple[float, float]:
    """``_priced`` at 5m and at 1h (the same sums in the same order, one tier lookup)."""
    p = prices.tier_for(record.total_tokens)
    tokens_in, written = record.input_tokens * p.input_mtok, record.cache_creation_tokens
    read = record.cache_read_tokens * p.cache_read_mtok
    out = record.output_tokens * p.output_mtok
    return (
        PER_TOKEN * (tokens_in + written * p.cache_write_5m_mtok + read + out),
        PER_TOKEN * (tokens_in + written * p.cache_write_1h_mtok + read + out),
    )


class PolicyReplay:
    """One policy's walk along one stream, a request at a step: the state a policy
    carries from request to request (which TTL it writes at, which one is in force,
    the request before as the policy saw it)."""

    __slots__ = ("policy", "prev", "ttl_in_force", "write_ttl")

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.write_ttl = "1h" if policy is Policy.TTL_1H else "5m"
        self.ttl_in_force = self.write_ttl
        self.prev: RequestRecord | None = None

    def step(
        self, entries: list[LedgerEntry], i: int, prices: list[ModelPrices | None]
    ) -> tuple[float, int, int, int]:
        """Entry ``i`` under the policy: (cost, misses, keep-alives, unpriced requests).

        The cost is the keep-alives' plus the request's, added in that order."""
        e = entries[i]
        r = e.record
        p = prices[i]
        outcome = e.outcome
        cost, misses, pings, unpriced = 0.0, 0, 0, 0
        prev = self.prev
        if prev is not None:
            pause, idle = _pause_idle(e)
            window = TTL_SECONDS[self.ttl_in_force]
            if self.policy is Policy.KEEP_ALIVE and prev.cached_tokens > 0:
                # The sender pings through the whole pause; the cache was last touched by
                # its last ping or by a compaction, whichever came later.
                pings = keep_alive_pings(pause)
                alive = min(pause - pings * KEEP_ALIVE_EVERY_S, idle) < window
                if pings:
                    ping_prices = prices[i - 1]
                    if ping_prices is None:
                        unpriced += pings
                    else:
                        cost += pings * request_cost_usd(_ping(prev), ping_prices)
            else:
                alive = idle < window
            if outcome is Outcome.MISS and is_ttl_miss(e) and alive:
                r = _as_hit(r, e.reprocessed_tokens)
                outcome = Outcome.HIT
            elif (
                outcome is Outcome.HIT
                and not alive
                and window < TTL_SECONDS[entries[i - 1].ttl]
                and r.cache_read_tokens > 0
            ):
                r = replace(
                    r,
                    cache_read_tokens=0,
                    cache_creation_tokens=r.cache_creation_tokens + r.cache_read_tokens,
                )
                outcome = Outcome.MISS
            if (
                self.policy is Policy.EVIDENCE
                and outcome is Outcome.MISS
                and self.write_ttl == "5m"
                and (is_ttl_miss(e) or e.outcome is Outcome.HIT)
                and idle < TTL_SECONDS["1h"]
            ):
                # The miss is observed when its response arrives: it was written at 5m,
                # the requests after it write at 1h.
                if p is None:
                    unpriced += 1
                else:
                    cost += _priced(r, self.write_ttl, p)
                self.write_ttl = "1h"
                if r.cache_creation_tokens > 0:
                    self.ttl_in_force = "5m"
                self.prev = r
                return cost, misses + 1, pings, unpriced
        if p is None:
            unpriced += 1
        else:
            cost += _priced(r, self.write_ttl, p)
        if prev is None or r.cache_creation_tokens > 0:
            self.ttl_in_force = self.write_ttl
        self.prev = r
        return cost, misses + (outcome is Outcome.MISS), pings, unpriced


def _as_hit(record: RequestRecord, reprocessed: int) -> RequestRecord:
    from_write = min(reprocessed, record.cache_creation_tokens)
    from_input = min(reprocessed - from_write, record.input_tokens)
    return replace(
        record,
        cache_read_tokens=record.cache_read_tokens + from_write + from_input,
        cache_creation_tokens=record.cache_creation_tokens - from_write,
        input_tokens=record.input_tokens - from_input,
    )


def _ping(prev: RequestRecord) -> RequestRecord:
    """A keep-alive re-sends the cached prefix (read at the read price) for one token out."""
    return RequestRecord(
        at=prev.at,
        input_tokens=0,
        cache_read_tokens=prev.total_tokens,
        cache_creation_tokens=0,
        output_tokens=KEEP_ALIVE_OUTPUT_TOKENS,
        model=prev.model,
    )
