"""The ledger under Gemini's implicit caching (docs/agents.md, "Gemini's cache").

The miss rule is the one of prompt-cache.md §2, on the shortfall against what the previous
request could have lent; Gemini's implicit cache decides what that is:

- every request leaves its prefix, unasked and unbilled (no write charge, no
  ``cache_creation``): there is no cold start after a miss;
- a read is reported as ``cachedContentTokenCount`` (inside ``promptTokenCount``) and only
  happens for a shared prefix of at least the model's minimum (1,024 tokens for Flash
  models, 4,096 for Pro), so a shorter previous prompt lends nothing;
- retention is not published: a few minutes is what can be relied on, so ``5m`` unless the
  caller knows better (``retention_s``, the suite's fake keeps seconds).

Causes come from what the chat file holds (``ingest.gemini``): the model, the instructions
(GEMINI.md in the first user content) and the conversation. The system instruction and the
tools are never in it, so where a request opened a new process and nothing visible changed
within the retention, the cause is ``unknown``, not ``likely_server_side``: the new process
may have sent other tools (an MCP server added) or another system instruction.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
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
    RebuildKind,
    RequestRecord,
    SessionLog,
    StreamItem,
    StreamKind,
    StreamLog,
)

DEFAULT_RETENTION_S = 300.0
FLASH_MINIMUM = 1024
PRO_MINIMUM = 4096


def minimum_tokens(model: str | None) -> int:
    """Gemini's documented minimum prompt for an implicit-cache read."""
    return PRO_MINIMUM if model is not None and "-pro" in model else FLASH_MINIMUM


def _process_start(record: RequestRecord) -> bool:
    return bool(getattr(record, "process_start", False))


@dataclass(slots=True)
class GeminiLedger(Ledger):
    """``Ledger`` with Gemini's implicit-cache semantics."""

    retention_s: float = DEFAULT_RETENTION_S

    def _classify(
        self,
        prev: RequestRecord,
        cur: RequestRecord,
        announce_at: float | None,
        kind: RebuildKind | None,
    ) -> tuple[Outcome, int, Diagnosis | None, MissEvidence | None]:
        cur_read = cur.cache_read_tokens
        shared = min(prev.total_tokens, cur.total_tokens)
        could_read = shared if shared >= minimum_tokens(cur.model) else 0
        reprocessed = max(0, could_read - cur_read)
        if not (cur_read < MISS_READ_SHARE * could_read and reprocessed >= MISS_MIN_TOKENS):
            return Outcome.HIT, 0, None, None
        evidence = miss_evidence(
            prev, cur, announce_at, prev.ttl, prev.total_tokens, server_said=False
        )
        if kind is not None and evidence.gap_s < self.retention_s:
            return Outcome.EXPECTED, reprocessed, None, evidence
        diagnosis = diagnose_miss(prev, cur, evidence, self.retention_s)
        # The agent's own record, not request bodies: named as a transcript's model is.
        diagnosis = replace(diagnosis, source="inferred")
        if _process_start(cur) and diagnosis.causes == (Cause.LIKELY_SERVER_SIDE,):
            diagnosis = Diagnosis(causes=(Cause.UNKNOWN,), source="inferred")
        return Outcome.MISS, reprocessed, diagnosis, evidence


def run_gemini_ledger(
    items: Iterable[StreamItem], retention_s: float = DEFAULT_RETENTION_S
) -> tuple[Ledger, list[LedgerEntry]]:
    return run_ledger(items, GeminiLedger(retention_s=retention_s))


def analyze_gemini_stream(log: StreamLog, now: float, retention_s: float) -> StreamAnalysis:
    ledger, entries = run_gemini_ledger(log.items, retention_s)
    return StreamAnalysis(log, ledger, entries, build_prompt_cache(ledger, now))


def analyze_gemini_session(
    log: SessionLog, now: float | None = None, retention_s: float = DEFAULT_RETENTION_S
) -> SessionAnalysis:
    """A session whose requests went to the Gemini API (a Gemini CLI chat)."""
    at = time.time() if now is None else now
    main = analyze_gemini_stream(log.stream(MAIN_STREAM, StreamKind.MAIN), at, retention_s)
    others = [
        analyze_gemini_stream(s, at, retention_s)
        for sid, s in log.streams.items()
        if sid != MAIN_STREAM
    ]
    return SessionAnalysis(log, main, others)
