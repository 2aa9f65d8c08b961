"""The per-stream ledger: the outcome of every request (prompt-cache.md §2).

One implementation serves every caller: ``analyze`` replays a whole stream, the status
line feeds it a few new requests at a time from saved state. It imports only the
standard library and the model so that the status line can afford it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from cachediag.analysis.causes import (
    SERVER_COMPACTED,
    Diagnosis,
    MissEvidence,
    diagnose_miss,
)
from cachediag.model import (
    TTL_SECONDS,
    RebuildAnnounced,
    RebuildKind,
    RequestRecord,
    StreamItem,
)

MISS_MIN_TOKENS = 2000
"""A shortfall below this many tokens is noise, not a miss."""
MISS_READ_SHARE = 0.95
"""A request that read at least this share of what it could have read is a hit."""


def announced_by_response(cur: RequestRecord) -> RebuildKind | None:
    """A rebuild the request's own response announces: the API cleared old content
    itself (``applied_edits``), or OpenAI says its compaction replaced the prefix."""
    if cur.applied_edits:
        return RebuildKind.CONTEXT_EDIT
    reason = cur.server_reason
    if reason is not None and reason.type == SERVER_COMPACTED:
        return RebuildKind.COMPACTION
    return None


class Outcome(StrEnum):
    COLD = "cold"
    UNCACHED = "uncached"
    HIT = "hit"
    MISS = "miss"
    EXPECTED = "expected"


@dataclass(slots=True)  # not frozen: cachediag.analysis says why
class LedgerEntry:
    """One request in the ledger: its record, outcome and what a miss re-processed."""

    index: int
    record: RequestRecord
    outcome: Outcome
    ttl: str
    """The TTL of the entry this request left (inherited when it wrote nothing)."""
    gap_s: float | None
    reprocessed_tokens: int
    """What could have been read but was processed again (0 unless miss or expected)."""
    announced: RebuildKind | None = None
    diagnosis: Diagnosis | None = None
    evidence: MissEvidence | None = None
    announced_at: float | None = None
    """When a rebuild was announced between the previous request and this one (a
    compaction touches the cache: the what-if's idle time restarts there)."""


@dataclass(slots=True)
class Ledger:
    """Running totals of one stream; ``add`` is the only way to change them."""

    requests: int = 0
    hits: int = 0
    misses: int = 0
    expected_rebuilds: int = 0
    cold_starts: int = 0
    uncached: int = 0
    read_tokens: int = 0
    creation_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    miss_recache_tokens: int = 0
    caching_observed: bool = False
    last_miss_at: float | None = None
    last_miss: Diagnosis | None = None
    miss_causes: dict[str, int] = field(default_factory=dict)
    prev: RequestRecord | None = None
    prev_ttl: str = "5m"
    pending_at: float | None = None
    pending_kind: RebuildKind | None = None

    def announce(self, event: RebuildAnnounced) -> None:
        self.pending_at = event.at
        self.pending_kind = event.kind

    def feed(self, item: StreamItem) -> LedgerEntry | None:
        if isinstance(item, RebuildAnnounced):
            self.announce(item)
            return None
        return self.add(item)

    def add(self, cur: RequestRecord) -> LedgerEntry:
        prev = self.prev
        announce_at, kind = self.pending_at, self.pending_kind
        if kind is None and (cur.applied_edits or cur.server_reason is not None):
            kind = announced_by_response(cur)
        self.pending_at = self.pending_kind = None

        read, creation = cur.cache_read_tokens, cur.cache_creation_tokens
        ttl = self.prev_ttl if (creation == 0 and prev is not None) else cur.ttl
        gap = None if prev is None else cur.at - prev.at
        if prev is None:
            outcome, reprocessed, diagnosis, evidence = Outcome.COLD, 0, None, None
        else:
            outcome, reprocessed, diagnosis, evidence = self._classify(prev, cur, announce_at, kind)

        self.requests += 1
        self.read_tokens += read
        self.creation_tokens += creation
        self.input_tokens += cur.input_tokens
        self.output_tokens += cur.output_tokens
        if read + creation > 0:
            self.caching_observed = True
        if outcome is Outcome.HIT:  # most requests
            self.hits += 1
        else:
            self._count(outcome, cur, diagnosis)
        self.prev = cur
        self.prev_ttl = ttl
        # Positional, in field order (index, record, outcome, ttl, gap_s,
        # reprocessed_tokens, announced, diagnosis, evidence, announced_at): once per request.
        return LedgerEntry(
            self.requests - 1,
            cur,
            outcome,
            ttl,
            gap,
            reprocessed,
            kind,
            diagnosis,
            evidence,
            announce_at,
        )

    def _classify(
        self,
        prev: RequestRecord,
        cur: RequestRecord,
        announce_at: float | None,
        kind: RebuildKind | None,
    ) -> tuple[Outcome, int, Diagnosis | None, MissEvidence | None]:
        # The record properties spelled out: this runs once per request.
        cur_read = cur.cache_read_tokens
        cur_cached = cur_read + cur.cache_creation_tokens
        if not self.caching_observed and cur_cached == 0:
            return Outcome.UNCACHED, 0, None, None
        prev_cached = prev.cache_read_tokens + prev.cache_creation_tokens
        if prev_cached == 0 and cur_cached > 0:
            return Outcome.COLD, 0, None, None
        could_read = min(prev.input_tokens + prev_cached, cur.input_tokens + cur_cached)
        reprocessed = could_read - cur_read
        if not (cur_read < MISS_READ_SHARE * could_read and reprocessed >= MISS_MIN_TOKENS):
            return Outcome.HIT, 0, None, None
        window = TTL_SECONDS[self.prev_ttl]
        evidence = miss_evidence(prev, cur, announce_at, self.prev_ttl, prev_cached)
        if kind is not None and evidence.gap_s < window:
            return Outcome.EXPECTED, reprocessed, None, evidence
        return Outcome.MISS, reprocessed, diagnose_miss(prev, cur, evidence, window), evidence

    def _count(self, outcome: Outcome, cur: RequestRecord, diagnosis: Diagnosis | None) -> None:
        if outcome is Outcome.COLD:
            self.cold_starts += 1
        elif outcome is Outcome.UNCACHED:
            self.uncached += 1
        elif outcome is Outcome.EXPECTED:
            self.expected_rebuilds += 1
        else:
            self.misses += 1
            self.miss_recache_tokens += cur.cache_creation_tokens
            self.last_miss_at = cur.at
            assert diagnosis is not None
            # Only diagnosed misses are counted by cause; an unnamed one clears the
            # last cause rather than leaving an older one to be mistaken for it.
            self.last_miss = diagnosis if diagnosis.named else None
            if diagnosis.named:
                for cause in diagnosis.causes:
                    self.miss_causes[cause.value] = self.miss_causes.get(cause.value, 0) + 1


def miss_evidence(
    prev: RequestRecord,
    cur: RequestRecord,
    announce_at: float | None,
    ttl: str,
    prev_cached: int,
    *,
    server_said: bool = True,
) -> MissEvidence:
    """What a shortfall looked like, for every provider's ledger; ``server_said=False``
    where the provider's log carries no reason of its own."""
    # A compaction touches the cache, so the clock restarts at the announcement.
    idle = cur.at - (prev.at if announce_at is None else max(prev.at, announce_at))
    said = cur.server_reason if server_said else None
    return MissEvidence(
        gap_s=idle,
        ttl_in_force=ttl,
        prev_cached_tokens=prev_cached,
        read_tokens=cur.cache_read_tokens,
        fell_back_to="nothing" if cur.cache_read_tokens == 0 else "earlier_prefix",
        model_before=prev.model,
        model_after=cur.model,
        server_reason=None if said is None else said.type,
        server_missed_tokens=None if said is None else said.missed_tokens,
        server_reusable_tokens=None if said is None else said.reusable_tokens,
    )


def run_ledger(
    items: Iterable[StreamItem], ledger: Ledger | None = None
) -> tuple[Ledger, list[LedgerEntry]]:
    """Replay a whole stream through ``ledger`` (Claude's by default); returns the final
    state and one entry per request."""
    ledger = Ledger() if ledger is None else ledger
    entries = [e for e in map(ledger.feed, items) if e is not None]
    return ledger, entries
