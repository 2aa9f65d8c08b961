"""TTL what-if (prompt-cache.md §6): what a stream would have cost under other policies.

Each stream is replayed from its ledger entries, request by request, with the same
prompts; only whether the cached prefix was still alive, and the price of writing it,
change with the policy:

- a miss the ledger put down to an expired TTL becomes a hit when the policy's TTL (or a
  keep-alive) would have kept the prefix alive: what it re-processed is read instead;
- a hit becomes a miss when the policy's TTL is shorter than the one in force and the
  pause outlasted it: what it read is written again;
- every other request (cold starts, rebuilds after compaction, misses with other causes)
  keeps its tokens, its writes priced at the policy's TTL.

Pure: prices come in as a function, nothing is read or printed here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum

from cachediag.analysis.causes import Cause
from cachediag.analysis.costs import PER_TOKEN, ModelPrices, PriceFn, request_cost_usd
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.model import TTL_SECONDS, RequestRecord

__all__ = [
    "Policy",
    "PolicyResult",
    "PriceFn",
    "WhatIf",
    "replay_rows",
    "replay_stream",
    "replay_streams",
]

KEEP_ALIVE_EVERY_S = 270.0
"""A keep-alive is sent 4.5 minutes into a pause, before the 5-minute entry expires."""
KEEP_ALIVE_MAX_PAUSE_S = 3600.0
"""A keep-alive cannot know how long a pause will last; it gives up after an hour."""
KEEP_ALIVE_OUTPUT_TOKENS = 1
SAME_COST_SHARE = 0.01
"""Policies within 1% of what happened are called "no better"."""

_TTL_CAUSES = frozenset({Cause.TTL_EXPIRED_5M, Cause.TTL_EXPIRED_1H})


class Policy(StrEnum):
    AS_HAPPENED = "as_happened"
    TTL_5M = "5m"
    TTL_1H = "1h"
    KEEP_ALIVE = "keep_alive"
    EVIDENCE = "evidence"


_POLICIES = tuple(Policy)
"""In their order (iterating over the enum itself is slow, and an audit asks per session)."""

ADVICE: dict[Policy, str] = {
    Policy.AS_HAPPENED: "keep what you have",
    Policy.TTL_5M: "use the 5-minute TTL everywhere",
    Policy.TTL_1H: "use the 1-hour TTL everywhere",
    # What it achieves, not a step: Claude Code sends no keep-alives (see audit's "How:").
    Policy.KEEP_ALIVE: "keep the cache alive through pauses",
    Policy.EVIDENCE: "start with 5 minutes, switch to 1 hour after the first miss a pause "
    "under an hour caused",
}


@dataclass(slots=True)
class PolicyResult:
    policy: Policy
    cost_usd: float = 0.0
    misses: int = 0
    keep_alive_requests: int = 0
    unpriced_requests: int = 0

    def add(self, other: PolicyResult) -> None:
        self.cost_usd += other.cost_usd
        self.misses += other.misses
        self.keep_alive_requests += other.keep_alive_requests
        self.unpriced_requests += other.unpriced_requests


@dataclass(slots=True)
class WhatIf:
    """Results per policy, for a stream, a session or a whole audit."""

    results: dict[Policy, PolicyResult] = field(
        default_factory=lambda: {p: PolicyResult(p) for p in Policy}
    )

    def add(self, other: WhatIf) -> None:
        self.add_stream(other.results)

    def add_stream(self, results: dict[Policy, PolicyResult]) -> None:
        for policy, result in results.items():
            self.results[policy].add(result)

    def best(self) -> Policy:
        """The cheapest policy; what happened wins unless another saves over 1%."""
        actual = self.results[Policy.AS_HAPPENED].cost_usd
        # Ties go to the earlier policy: min keeps the first of equal keys.
        cheapest = min(_POLICIES, key=lambda p: self.results[p].cost_usd)
        if actual - self.results[cheapest].cost_usd <= SAME_COST_SHARE * actual:
            return Policy.AS_HAPPENED
        return cheapest

    def recommendation(self) -> str:
        actual = self.results[Policy.AS_HAPPENED].cost_usd
        best = self.best()
        if actual <= 0:
            return "nothing priced: no recommendation"
        if best is Policy.AS_HAPPENED:
            return "what happened was within 1% of the cheapest policy: keep what you have"
        saved = actual - self.results[best].cost_usd
        return f"{ADVICE[best]}: it would have saved ${saved:.2f} ({saved / actual:.1%})"


def _is_ttl_miss(entry: LedgerEntry) -> bool:
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


def _priced_both(record: RequestRecord, prices: ModelPrices) -> tuple[float, float]:
    """``_priced`` at 5m and at 1h (the same sums in the same order, one tier lookup)."""
    p = prices.tier_for(record.total_tokens)
    tokens_in, written = record.input_tokens * p.input_mtok, record.cache_creation_tokens
    read = record.cache_read_tokens * p.cache_read_mtok
    out = record.output_tokens * p.output_mtok
    return (
        PER_TOKEN * (tokens_in + written * p.cache_write_5m_mtok + read + out),
        PER_TOKEN * (tokens_in + written * p.cache_write_1h_mtok + read + out),
    )


def replay_stream(entries: list[LedgerEntry], policy: Policy, price_of: PriceFn) -> PolicyResult:
    """Cost and misses of one stream's requests had ``policy`` been in force."""
    result = PolicyResult(policy)
    for row in replay_rows(entries, policy, price_of):
        result.add(row)
    return result


def replay_rows(
    entries: list[LedgerEntry], policy: Policy, price_of: PriceFn
) -> Iterator[PolicyResult]:
    """What each request of a stream adds under ``policy``, one result per entry, in
    order (the keep-alives sent in the pause before a request count with it): the sum
    is ``replay_stream``, and a dataset stores these per request so that any engine can
    add them up."""
    prices = [price_of(e.record) for e in entries]
    if policy is Policy.AS_HAPPENED:
        for e, p in zip(entries, prices, strict=True):
            row = PolicyResult(policy, misses=int(e.outcome is Outcome.MISS))
            if p is None:
                row.unpriced_requests = 1
            else:
                row.cost_usd = request_cost_usd(e.record, p)
            yield row
        return
    replay = _Replay(policy)
    for i in range(len(entries)):
        cost, misses, pings, unpriced = replay.step(entries, i, prices)
        yield PolicyResult(policy, cost, misses, pings, unpriced)


class _Replay:
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
            if outcome is Outcome.MISS and _is_ttl_miss(e) and alive:
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
                and (_is_ttl_miss(e) or e.outcome is Outcome.HIT)
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


_NO_TTL_CHOICE = re.compile(r"(?:^|/)(?:gpt-|o\d|chatgpt|codex|gemini)", re.IGNORECASE)
"""Model families whose cache lifetime is the provider's, not a 5m/1h choice (OpenAI's
in-memory, 30m or 24h retention; Gemini's implicit cache)."""


def offers_ttl_choice(entries: list[LedgerEntry]) -> bool:
    """Whether the caller could have picked 5m or 1h for this stream: not when every
    model it used is an OpenAI or Gemini one."""
    models = {e.record.model for e in entries if e.record.model is not None}
    return not models or not all(_NO_TTL_CHOICE.search(m) for m in models)


def replay_streams(streams: Iterable[list[LedgerEntry]], price_of: PriceFn) -> WhatIf:
    """Every policy over every stream (each stream has its own cache). A stream without
    the 5m/1h choice costs what it cost under every policy."""
    total = WhatIf()
    for entries in streams:
        prices = [price_of(e.record) for e in entries]
        costs = [
            None if p is None else request_cost_usd(e.record, p)
            for e, p in zip(entries, prices, strict=True)
        ]
        total.add_stream(replay_priced(entries, prices, costs))
    return total


def replay_priced(
    entries: list[LedgerEntry], prices: list[ModelPrices | None], costs: list[float | None]
) -> dict[Policy, PolicyResult]:
    """``replay_stream`` of every policy in one pass over a stream whose prices and
    actual costs (``request_cost_usd``) are known: what an audit has already worked out.
    Sums are added in the order ``replay_stream`` adds them, so they are the same."""
    actual = PolicyResult(Policy.AS_HAPPENED)
    for e, cost in zip(entries, costs, strict=True):
        actual.misses += e.outcome is Outcome.MISS
        if cost is None:
            actual.unpriced_requests += 1
        else:
            actual.cost_usd += cost
    if not offers_ttl_choice(entries):
        return dict.fromkeys(Policy, actual)
    five, hour, keep, evidence = (
        _Replay(p) for p in (Policy.TTL_5M, Policy.TTL_1H, Policy.KEEP_ALIVE, Policy.EVIDENCE)
    )
    replays = (five, hour, keep, evidence)
    results = [PolicyResult(r.policy) for r in replays]
    five_r, hour_r, keep_r, evidence_r = results
    pairs = list(zip(replays, results, strict=True))
    prev_plain: RequestRecord | None = None
    rewritten = False  # a plain request since the last step wrote (or was the first)
    for i, e in enumerate(entries):
        if i and (
            # The pause bounds the idle time: a shorter one sends no keep-alive either.
            (e.gap_s or 0.0) > KEEP_ALIVE_EVERY_S or (e.outcome is Outcome.MISS and _is_ttl_miss(e))
        ):
            for replay, result in pairs:
                if prev_plain is not None:
                    replay.prev = prev_plain
                if rewritten:
                    replay.ttl_in_force = replay.write_ttl
                cost, misses, pings, unpriced = replay.step(entries, i, prices)
                result.cost_usd += cost
                result.misses += misses
                result.keep_alive_requests += pings
                result.unpriced_requests += unpriced
            prev_plain = None
            rewritten = False
            continue
        # A pause too short for any TTL to expire or a keep-alive to be sent: under
        # every policy the request is what it was, written at the policy's TTL
        # (``_Replay.step`` with what cannot happen left out; the policy's previous
        # request is then this one as it was: ``prev_plain``, and its TTL in force the
        # one it writes at if it wrote: ``rewritten``; no policy changes the TTL it
        # writes at outside a step).
        r, p = e.record, prices[i]
        if p is None:
            for result in results:
                result.unpriced_requests += 1
        else:
            at_5m, at_1h = _priced_both(r, p)
            five_r.cost_usd += 0.0 + at_5m
            hour_r.cost_usd += 0.0 + at_1h
            keep_r.cost_usd += 0.0 + at_5m
            evidence_r.cost_usd += 0.0 + (at_1h if evidence.write_ttl == "1h" else at_5m)
        if e.outcome is Outcome.MISS:
            for result in results:
                result.misses += 1
        if i == 0 or r.cache_creation_tokens > 0:
            rewritten = True
        prev_plain = r
    return {Policy.AS_HAPPENED: actual, **{r.policy: r for r in results}}
