"""The TTL policies the what-if compares (prompt-cache.md §6), what each would have
cost, and the pick among them: data and sums only, no replay (``policy_replay``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

SAME_COST_SHARE = 0.01
"""Policies within 1% of what happened are called "no better"."""


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
