"""TTL what-if (prompt-cache.md §6): what a stream would have cost under other policies.

Each stream is replayed from its ledger entries, request by request, with the same
prompts, under each policy of ``ttl_policies``; what one request becomes under a policy
is ``policy_replay``'s step. Here: the replay of a stream, per request or summed, and of
every policy over many streams in one pass.

Pure: prices come in as a function, nothing is read or printed here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from cachediag.analysis.costs import ModelPrices, PriceFn, request_cost_usd
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.policy_replay import (
    KEEP_ALIVE_EVERY_S,
    PolicyReplay,
    is_ttl_miss,
    keep_alive_pings,
    priced_both,
)
from cachediag.analysis.ttl_policies import (
    ADVICE,
    SAME_COST_SHARE,
    Policy,
    PolicyResult,
    WhatIf,
)
from cachediag.model import RequestRecord

# The policies and their results live in ``ttl_policies``, the step in ``policy_replay``;
# callers import them from here, the what-if's one door.
__all__ = [
    "ADVICE",
    "SAME_COST_SHARE",
    "Policy",
    "PolicyResult",
    "PriceFn",
    "WhatIf",
    "keep_alive_pings",
    "offers_ttl_choice",
    "replay_priced",
    "replay_rows",
    "replay_stream",
    "replay_streams",
]


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
    replay = PolicyReplay(policy)
    for i in range(len(entries)):
        cost, misses, pings, unpriced = replay.step(entries, i, prices)
        yield PolicyResult(policy, cost, misses, pings, unpriced)


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
        PolicyReplay(p) for p in (Policy.TTL_5M, Policy.TTL_1H, Policy.KEEP_ALIVE, Policy.EVIDENCE)
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
            (e.gap_s or 0.0) > KEEP_ALIVE_EVERY_S or (e.outcome is Outcome.MISS and is_ttl_miss(e))
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
        # (``PolicyReplay.step`` with what cannot happen left out; the policy's previous
        # request is then this one as it was: ``prev_plain``, and its TTL in force the
        # one it writes at if it wrote: ``rewritten``; no policy changes the TTL it
        # writes at outside a step).
        r, p = e.record, prices[i]
        if p is None:
            for result in results:
                result.unpriced_requests += 1
        else:
            at_5m, at_1h = priced_both(r, p)
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
