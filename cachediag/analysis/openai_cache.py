"""The ledger under OpenAI's automatic prefix caching (docs/agents.md, "OpenAI's cache").

The miss rule is the one of prompt-cache.md §2, on the shortfall against what the
previous request could have lent; what differs is what it could lend:

- every request writes its own prefix, unasked and unbilled (no ``cache_creation``), so a
  request that read nothing still leaves a prefix for the next one: there is no
  "caching not seen yet" (``uncached``) and no cold start after a miss;
- a read is the longest shared prefix in 128-token steps from 1,024 tokens, so what the
  previous request could lend is its whole prompt rounded down the same way;
- each request keeps its prefix for its own model's retention (``RequestRecord.ttl``),
  so the window after a model switch is the new model's.

Everything else (rebuild announcements, causes, evidence) is the shared ledger's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from cachediag.analysis.causes import Cause, Diagnosis, MissEvidence, diagnose_miss
from cachediag.analysis.ledger import (
    MISS_MIN_TOKENS,
    MISS_READ_SHARE,
    Ledger,
    LedgerEntry,
    Outcome,
    miss_evidence,
    run_ledger,
)
from cachediag.analysis.session_analysis import SessionAnalysis, StreamAnalysis
from cachediag.analysis.summary import build_prompt_cache
from cachediag.model import (
    MAIN_STREAM,
    TTL_SECONDS,
    RebuildKind,
    RequestRecord,
    SessionLog,
    StreamItem,
    StreamKind,
    StreamLog,
)

MIN_CACHED_TOKENS = 1024
CACHE_STEP_TOKENS = 128


def readable_prefix(tokens: int) -> int:
    """What a shared prefix of ``tokens`` can be read as: 0 below 1,024, else 128-steps."""
    if tokens < MIN_CACHED_TOKENS:
        return 0
    return MIN_CACHED_TOKENS + (tokens - MIN_CACHED_TOKENS) // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS


@dataclass(slots=True)
class OpenAILedger(Ledger):
    """``Ledger`` with OpenAI's semantics: automatic writes, 128-token steps, per-model TTL."""

    def add(self, cur: RequestRecord) -> LedgerEntry:
        entry = Ledger.add(self, cur)
        # Each request wrote its own prefix with its own model's retention.
        entry.ttl = cur.ttl
        self.prev_ttl = cur.ttl
        return entry

    def _classify(
        self,
        prev: RequestRecord,
        cur: RequestRecord,
        announce_at: float | None,
        kind: RebuildKind | None,
    ) -> tuple[Outcome, int, Diagnosis | None, MissEvidence | None]:
        cur_read = cur.cache_read_tokens
        could_read = readable_prefix(min(prev.total_tokens, cur.total_tokens))
        reprocessed = max(0, could_read - cur_read)
        if not (cur_read < MISS_READ_SHARE * could_read and reprocessed >= MISS_MIN_TOKENS):
            return Outcome.HIT, 0, None, None
        window = TTL_SECONDS[prev.ttl]
        evidence = miss_evidence(prev, cur, announce_at, prev.ttl, prev.total_tokens)
        if kind is not None and evidence.gap_s < window:
            return Outcome.EXPECTED, reprocessed, None, evidence
        diagnosis = diagnose_miss(prev, cur, evidence, window)
        if diagnosis.causes == (Cause.LIKELY_SERVER_SIDE,) and (
            cur_read > 0 or not _tools_seen(prev, cur)
        ):
            # An earlier part of the prefix was still read, so the entry lived: something
            # after it changed that the log does not show (Codex records no change of
            # its instructions file, for one). Or the log lists no tools to rule a tools
            # change out. Either way not the server's doing, as far as anyone can tell.
            diagnosis = replace(diagnosis, causes=(Cause.UNKNOWN,))
        if diagnosis.source == "capture" and not _captured(prev, cur):
            # Settings the agent's own log recorded (Codex's turn_context, world_state),
            # not request bodies: named as a transcript's model is, ``inferred``.
            diagnosis = replace(diagnosis, source="inferred")
        return Outcome.MISS, reprocessed, diagnosis, evidence


def _tools_seen(prev: RequestRecord, cur: RequestRecord) -> bool:
    return all(r.fingerprint is not None and r.fingerprint.tools is not None for r in (prev, cur))


def _captured(prev: RequestRecord, cur: RequestRecord) -> bool:
    return all(r.fingerprint is not None and r.fingerprint.joined for r in (prev, cur))


def run_openai_ledger(items: list[StreamItem]) -> tuple[Ledger, list[LedgerEntry]]:
    return run_ledger(items, OpenAILedger())


def analyze_openai_stream(log: StreamLog, now: float) -> StreamAnalysis:
    ledger, entries = run_openai_ledger(log.items)
    return StreamAnalysis(log, ledger, entries, build_prompt_cache(ledger, now))


def analyze_openai_session(log: SessionLog, now: float | None = None) -> SessionAnalysis:
    """A session whose requests went to OpenAI's Responses API (a Codex rollout)."""
    at = time.time() if now is None else now
    main = analyze_openai_stream(log.stream(MAIN_STREAM, StreamKind.MAIN), at)
    others = [analyze_openai_stream(s, at) for sid, s in log.streams.items() if sid != MAIN_STREAM]
    others.sort(key=lambda a: (a.entries[0].record.at if a.entries else float("inf"), a.log.id))
    return SessionAnalysis(log, main, others)
