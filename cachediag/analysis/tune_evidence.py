"""Which TTL each kind of request should ask for, from the history's own pauses
(prompt-cache.md §6). Pure: prices come in as a function, nothing is read or printed.

A kind is the main conversation, the subagents (with each named agent type apart),
the compaction calls or the side calls. Each stream of a kind is replayed exactly as
``audit`` replays it (``replay_priced`` over the requests inside the window, priced by
the same function), so the figures of every kind add up to the audit's what-if.

What decides between 5m and 1h is the pauses: one between 5 minutes and an hour after a
request that left a cached prefix is one the hour would have covered; a longer one
expires under both. No pause of the first sort, no 1h: whatever the prices say.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from cachediag.analysis.costs import ModelPrices, request_cost_usd
from cachediag.analysis.ledger import LedgerEntry
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.analysis.whatif import (
    SAME_COST_SHARE,
    Policy,
    PriceFn,
    WhatIf,
    offers_ttl_choice,
    replay_priced,
)
from cachediag.model import TTL_SECONDS, StreamKind

MAIN = "main"
SUBAGENTS = "subagents"
AGENT_PREFIX = "agent:"
"""A named agent type's kind: ``agent:Explore``; ``agent:`` alone when the log does not
say which type a subagent was."""
_KIND_OF = {
    StreamKind.MAIN: MAIN,
    StreamKind.SUBAGENT: SUBAGENTS,
    StreamKind.SIDECHAIN: SUBAGENTS,
    StreamKind.COMPACTION: "compaction",
    StreamKind.SIDE_CALL: "side_calls",
}
FIVE_MIN_S = TTL_SECONDS["5m"]
HOUR_S = TTL_SECONDS["1h"]


@dataclass(slots=True)
class KindEvidence:
    """One kind of request over the window: its what-if and the pauses that decide."""

    kind: str
    streams: int = 0
    requests: int = 0
    whatif: WhatIf = field(default_factory=WhatIf)
    covered_pauses: int = 0
    """Pauses over 5 minutes and under an hour after a cached prefix: 1h keeps it."""
    long_pauses: int = 0
    """Pauses of an hour or more after a cached prefix: no TTL keeps it."""
    writes: dict[str, int] = field(default_factory=dict)
    """Requests that wrote the cache, by the TTL they wrote at (what was in force)."""
    ttl_choice: bool = False
    """Whether some stream could choose 5m or 1h (an Anthropic model)."""

    def add(self, other: KindEvidence) -> None:
        self.streams += other.streams
        self.requests += other.requests
        self.whatif.add(other.whatif)
        self.covered_pauses += other.covered_pauses
        self.long_pauses += other.long_pauses
        for ttl, n in other.writes.items():
            self.writes[ttl] = self.writes.get(ttl, 0) + n
        self.ttl_choice = self.ttl_choice or other.ttl_choice

    def ttl_seen(self) -> str | None:
        """The TTL most writes used (ties: 5m), ``None`` with no write."""
        if not self.writes:
            return None
        return max(sorted(self.writes), key=lambda t: (self.writes[t], t == "5m"))


def _idle_s(entry: LedgerEntry) -> float:
    """The cache's idle time before a request: the pause, restarted by a compaction
    announced in it (as the what-if counts it)."""
    pause = entry.gap_s or 0.0
    at = entry.announced_at
    return pause if at is None else min(pause, entry.record.at - at)


def stream_evidence(
    kind: str,
    entries: list[LedgerEntry],
    price_of: PriceFn,
    since: float | None,
    until: float | None,
) -> KindEvidence:
    """One stream's evidence over ``[since, until)``, replayed as ``audit_session``
    replays it (same requests, prices and costs, in the same order)."""
    out = KindEvidence(kind, streams=1)
    kept: list[LedgerEntry] = []
    prices: list[ModelPrices | None] = []
    costs: list[float | None] = []
    previous: LedgerEntry | None = None
    for e in entries:
        before, previous = previous, e
        r = e.record
        if (since is not None and r.at < since) or (until is not None and r.at >= until):
            continue
        kept.append(e)
        p = price_of(r)
        prices.append(p)
        costs.append(None if p is None else request_cost_usd(r, p))
        if r.cache_creation_tokens > 0:
            out.writes[e.ttl] = out.writes.get(e.ttl, 0) + 1
        if before is not None and before.record.cached_tokens > 0:
            idle = _idle_s(e)
            if idle >= HOUR_S:
                out.long_pauses += 1
            elif idle > FIVE_MIN_S:
                out.covered_pauses += 1
    out.requests = len(kept)
    if kept:
        out.ttl_choice = offers_ttl_choice(kept)
        out.whatif.add_stream(replay_priced(kept, prices, costs))
    if not out.ttl_choice:
        # The provider decides this cache's lifetime: its pauses decide nothing.
        out.covered_pauses = out.long_pauses = 0
    return out


def session_evidence(
    analysis: SessionAnalysis,
    price_of: PriceFn,
    since: float | None,
    until: float | None,
    agent_types: dict[str, str],
) -> list[KindEvidence]:
    """Every stream of a session with requests in the window, as its kind; a subagent
    stream once more as its agent type (``agent_types``: stream id -> type)."""
    found: list[KindEvidence] = []
    for stream in analysis.streams:
        kind = _KIND_OF.get(stream.log.kind, stream.log.kind.value)
        evidence = stream_evidence(kind, stream.entries, price_of, since, until)
        if not evidence.requests:
            continue
        found.append(evidence)
        if kind == SUBAGENTS:
            named = KindEvidence(AGENT_PREFIX + agent_types.get(stream.log.id, ""))
            named.add(evidence)
            found.append(named)
    return found


def merge(parts: Iterable[KindEvidence]) -> dict[str, KindEvidence]:
    """Evidence by kind, summed over streams and sessions."""
    kinds: dict[str, KindEvidence] = {}
    for part in parts:
        kinds.setdefault(part.kind, KindEvidence(part.kind)).add(part)
    return kinds


@dataclass(slots=True, frozen=True)
class Verdict:
    """What the evidence says for one kind."""

    ttl: str | None
    """``5m`` or ``1h``; ``None``: no TTL to recommend (nothing priced, the provider's
    own cache, or 5m and 1h within 1% of each other)."""
    reason: str
    saved_usd: float
    """What the recommended TTL would have saved on what happened (negative: cost)."""
    versus_other_usd: float
    """What it saves on the other TTL."""
    confidence: str
    """``high`` / ``medium`` / ``low``, from the pauses that decided it."""


def confidence(deciding_pauses: int) -> str:
    if deciding_pauses >= 10:
        return "high"
    return "medium" if deciding_pauses >= 3 else "low"


def decide(evidence: KindEvidence) -> Verdict:
    """The evidence rule: 1h only where pauses the hour covers exist and it is cheaper
    than 5m by more than 1%; 5m where it is cheaper by as much, or where no pause could
    use the hour; otherwise no change."""
    results = evidence.whatif.results
    actual = results[Policy.AS_HAPPENED].cost_usd
    five, hour = results[Policy.TTL_5M].cost_usd, results[Policy.TTL_1H].cost_usd
    covered = evidence.covered_pauses
    if not evidence.ttl_choice:
        return Verdict(None, "the provider sets this cache's lifetime", 0.0, 0.0, "high")
    if actual <= 0:
        return Verdict(None, "nothing priced", 0.0, 0.0, "low")
    if covered == 0:
        many = evidence.requests >= 20
        reason = "no pause between 5 min and 1 h: the hour would have kept nothing"
        return Verdict("5m", reason, actual - five, hour - five, "high" if many else "low")
    if hour < five - SAME_COST_SHARE * five:
        reason = f"{covered} pause(s) of 5 min-1 h would have kept the cache"
        return Verdict("1h", reason, actual - hour, five - hour, confidence(covered))
    if five < hour - SAME_COST_SHARE * hour:
        reason = f"1h's dearer writes outweigh the {covered} pause(s) it would have covered"
        return Verdict("5m", reason, actual - five, hour - five, confidence(covered))
    return Verdict(None, "5m and 1h within 1% of each other", 0.0, 0.0, confidence(covered))
