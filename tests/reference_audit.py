"""The audit of one session, request by request, written from the spec: the reference
that the fast ``analysis.audit.audit_session`` is held to, to the last bit
(tests/test_audit_reference.py).

Read from ``spec/prompt-cache.md`` §1, §2, §4-6, ``spec/pricing.md`` and the what-if's
policies as ``docs/audit.md`` states them, without the implementation's accounting:
nothing of ``cachediag.analysis.costs`` or ``.whatif`` is called, only their data types
(and the audit's grouping keys, held to their own test). It takes the ledger's outcomes
(``tests/reference_ledger.py`` checks those against the spec separately) and the stream's
own items as given, and works out prices, idle times and the replayed policies itself.

Choices the spec leaves open, made here on purpose:
- A write whose 5m / 1h split the log does not give is at the request's own ``ttl``.
- Prices are per million tokens; the sum is scaled by ``1e-6`` (a multiplication, as the
  implementation does), so that two correct readings round alike and can be compared to
  the last bit.
- A miss's re-processed tokens are taken first from what it wrote, then from its
  uncached input (§5: "at the write or input price"); a mixed 5m / 1h write is priced at
  its average.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, tzinfo

from cachediag.analysis.costs import ModelPrices
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.rollup import (
    GroupBy,
    MissRow,
    SessionAudit,
    cause_key,
    day_of,
    gap_key,
    month_of,
    week_of,
)
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.analysis.totals import Totals
from cachediag.analysis.whatif import Policy, PolicyResult, PriceFn, WhatIf
from cachediag.ingest.agents import agent_of
from cachediag.model import RebuildAnnounced, RequestRecord, StreamLog

TTL_S = {"5m": 300.0, "1h": 3600.0}
# prompt-cache.md §4: the causes that say only the clock ran out.
TTL_CAUSES = frozenset({"ttl_expired_5m", "ttl_expired_1h"})
# spec §6: "a keep-alive every ~4.5 minutes"; docs/audit.md: it gives up after an hour
# (it cannot know how long a pause will last), and asks for one output token.
KEEP_ALIVE_EVERY_S = 270.0
KEEP_ALIVE_FOR_S = 3600.0
KEEP_ALIVE_OUTPUT = 1
# docs/audit.md: the 5m / 1h choice is Anthropic's; OpenAI's and Gemini's cache lifetime
# is the provider's. Model names, by family, possibly behind a router's "vendor/" prefix.
NO_TTL_CHOICE = ("gpt-", "chatgpt", "codex", "gemini")


# --- Prices (prompt-cache.md §5, pricing.md) -------------------------------------------


def tier(prices: ModelPrices, prompt_tokens: int) -> ModelPrices:
    """pricing.md: past the threshold of its whole input (reads and writes included),
    every token of the request is at the long-context prices."""
    while (
        prices.long_context is not None
        and prices.long_context_threshold_tokens is not None
        and prompt_tokens > prices.long_context_threshold_tokens
    ):
        prices = prices.long_context
    return prices


def writes(record: RequestRecord, write_ttl: str | None = None) -> tuple[int, int]:
    """(5m, 1h) tokens written: all at ``write_ttl`` when a policy says so, else the log's
    split, else all at the request's own TTL."""
    written = record.cache_creation_tokens
    if write_ttl is not None:
        return (0, written) if write_ttl == "1h" else (written, 0)
    if record.cache_creation_5m_tokens is None and record.cache_creation_1h_tokens is None:
        return (0, written) if record.ttl == "1h" else (written, 0)
    return record.cache_creation_5m_tokens or 0, record.cache_creation_1h_tokens or 0


def cost(record: RequestRecord, prices: ModelPrices, write_ttl: str | None = None) -> float:
    """§5: input * p_in + creation_5m * p_w5 + creation_1h * p_w1h + read * p_read +
    output * p_out, in that order."""
    p = tier(prices, record.input_tokens + record.cache_read_tokens + record.cache_creation_tokens)
    w5, w1h = writes(record, write_ttl)
    usd_per_million = (
        record.input_tokens * p.input_mtok
        + w5 * p.cache_write_5m_mtok
        + w1h * p.cache_write_1h_mtok
        + record.cache_read_tokens * p.cache_read_mtok
        + record.output_tokens * p.output_mtok
    )
    return 1e-6 * usd_per_million


def miss_cost(entry: LedgerEntry, prices: ModelPrices) -> float:
    """§5: what a miss (or rebuild) paid over a hit: its re-processed tokens at the write
    or input price instead of the read price."""
    reprocessed = entry.reprocessed_tokens
    if entry.outcome not in (Outcome.MISS, Outcome.EXPECTED) or reprocessed <= 0:
        return 0.0
    r = entry.record
    p = tier(prices, r.input_tokens + r.cache_read_tokens + r.cache_creation_tokens)
    w5, w1h = writes(r)
    written = w5 + w1h
    at_write = min(reprocessed, written)
    at_input = reprocessed - at_write
    write_price = (
        (w5 * p.cache_write_5m_mtok + w1h * p.cache_write_1h_mtok) / written if written else 0.0
    )
    return 1e-6 * (
        at_write * (write_price - p.cache_read_mtok) + at_input * (p.input_mtok - p.cache_read_mtok)
    )


# --- The what-if's pieces (prompt-cache.md §2, §4, §6) ---------------------------------


def pauses(log: StreamLog, entries: list[LedgerEntry]) -> dict[int, tuple[float, float]]:
    """(pause, idle) before each request, by entry index: the pause since the previous
    response, and the idle time of the cache, since that response or since a compaction
    announced in between, which touches the cache (§2). They differ only after an
    announcement."""
    records = [item for item in log.items if isinstance(item, RequestRecord)]
    assert len(records) == len(entries), "every request of the stream has its entry"
    out: dict[int, tuple[float, float]] = {}
    prev_at: float | None = None
    announce_at: float | None = None
    pairs = iter(zip(records, entries, strict=True))
    for item in log.items:
        if isinstance(item, RebuildAnnounced):
            announce_at = item.at
            continue
        record, entry = next(pairs)
        assert entry.record is record
        if prev_at is not None:
            since = prev_at if announce_at is None else max(prev_at, announce_at)
            out[entry.index] = (record.at - prev_at, record.at - since)
        prev_at, announce_at = record.at, None
    return out


def is_ttl_miss(entry: LedgerEntry) -> bool:
    """A miss only the clock caused (its causes as the ledger diagnosed them, §4)."""
    d = entry.diagnosis
    return d is not None and any(str(c) in TTL_CAUSES for c in d.causes)


def as_hit(record: RequestRecord, reprocessed: int) -> RequestRecord:
    """The request had its re-processed tokens been read: from what it wrote first, then
    from its uncached input (as ``miss_cost`` prices them)."""
    from_write = min(reprocessed, record.cache_creation_tokens)
    from_input = min(reprocessed - from_write, record.input_tokens)
    return replace(
        record,
        input_tokens=record.input_tokens - from_input,
        cache_read_tokens=record.cache_read_tokens + from_write + from_input,
        cache_creation_tokens=record.cache_creation_tokens - from_write,
    )


def keep_alives(idle: float) -> int:
    """Keep-alives sent in a pause: one each 270 s strictly before the next request, the
    last one before the first hour is out."""
    sent = 0
    while (sent + 1) * KEEP_ALIVE_EVERY_S < min(idle, KEEP_ALIVE_FOR_S):
        sent += 1
    return sent


def offers_ttl_choice(entries: list[LedgerEntry]) -> bool:
    """Whether the caller could pick 5m or 1h: not when every model named is an OpenAI or
    Gemini one (OpenAI's o-series too: ``o1``, ``o3-mini``)."""

    def provider_lifetime(model: str) -> bool:
        for name in model.lower().split("/"):
            if name.startswith(NO_TTL_CHOICE) or (name[:1] == "o" and name[1:2].isdigit()):
                return True
        return False

    models = {e.record.model for e in entries if e.record.model is not None}
    return not models or not all(provider_lifetime(m) for m in models)


def _in_range(at: float, since: float | None, until: float | None) -> bool:
    return (since is None or at >= since) and (until is None or at < until)


def _miss_sort_key(row: MissRow) -> tuple[float, int]:
    return (row.cost_usd if row.cost_usd is not None else -1.0, row.reprocessed_tokens)


def replay_streams(
    streams: list[tuple[list[LedgerEntry], dict[int, tuple[float, float]]]], price_of: PriceFn
) -> WhatIf:
    total = WhatIf()
    for entries, gaps in streams:
        choice = offers_ttl_choice(entries)
        for policy in Policy:
            replayed = policy if choice else Policy.AS_HAPPENED
            result = PolicyResult(replayed)
            for row in replay_rows(entries, gaps, replayed, price_of):
                result.add(row)
            total.results[policy].add(result)
    return total


def replay_rows(
    entries: list[LedgerEntry],
    gaps: dict[int, tuple[float, float]],
    policy: Policy,
    price_of: PriceFn,
) -> Iterator[PolicyResult]:
    """What each request of a stream adds under ``policy``, one result per entry, in
    order (the keep-alives sent in the pause before a request count with it): the sum
    is ``replay_stream``, and a dataset stores these per request so that any engine can
    add them up."""
    if policy is Policy.AS_HAPPENED:
        for e in entries:
            row = PolicyResult(policy, misses=int(e.outcome is Outcome.MISS))
            prices = price_of(e.record)
            if prices is None:
                row.unpriced_requests = 1
            else:
                row.cost_usd = cost(e.record, prices)
            yield row
        return
    write_ttl = "1h" if policy is Policy.TTL_1H else "5m"
    ttl_in_force = write_ttl
    prev: RequestRecord | None = None
    for i, e in enumerate(entries):
        result = PolicyResult(policy)
        r = e.record
        prices = price_of(r)
        outcome = e.outcome
        if i > 0 and prev is not None:
            pause, idle = gaps[e.index]
            window = TTL_S[ttl_in_force]
            pings = 0
            if policy is Policy.KEEP_ALIVE and prev.cached_tokens > 0:
                # The sender pings through the whole pause; the cache was last touched by
                # its last ping or by a compaction, whichever came later.
                pings = keep_alives(pause)
                alive = min(pause - pings * KEEP_ALIVE_EVERY_S, idle) < window
                _add_pings(result, prev, pings, price_of)
            else:
                alive = idle < window
            if outcome is Outcome.MISS and is_ttl_miss(e) and alive:
                r = as_hit(r, e.reprocessed_tokens)
                outcome = Outcome.HIT
            elif (
                outcome is Outcome.HIT
                and not alive
                and window < TTL_S[entries[i - 1].ttl]
                and r.cache_read_tokens > 0
            ):
                r = replace(
                    r,
                    cache_read_tokens=0,
                    cache_creation_tokens=r.cache_creation_tokens + r.cache_read_tokens,
                )
                outcome = Outcome.MISS
            if (
                policy is Policy.EVIDENCE
                and outcome is Outcome.MISS
                and write_ttl == "5m"
                and (is_ttl_miss(e) or e.outcome is Outcome.HIT)
                and idle < TTL_S["1h"]
            ):
                # The miss is observed when its response arrives: it was written at 5m,
                # the requests after it write at 1h.
                result.misses += 1
                _price_into(result, r, write_ttl, prices)
                write_ttl = "1h"
                ttl_in_force = "5m" if r.cache_creation_tokens > 0 else ttl_in_force
                prev = r
                yield result
                continue
        result.misses += outcome is Outcome.MISS
        _price_into(result, r, write_ttl, prices)
        if i == 0 or r.cache_creation_tokens > 0:
            ttl_in_force = write_ttl
        prev = r
        yield result


def _price_into(
    result: PolicyResult, record: RequestRecord, write_ttl: str, prices: ModelPrices | None
) -> None:
    if prices is None:
        result.unpriced_requests += 1
    else:
        result.cost_usd += cost(record, prices, write_ttl)


def _add_pings(result: PolicyResult, prev: RequestRecord, pings: int, price_of: PriceFn) -> None:
    if pings == 0:
        return
    prices = price_of(prev)
    result.keep_alive_requests += pings
    if prices is None:
        result.unpriced_requests += pings
        return
    # A keep-alive re-sends the cached prefix (read at the read price) for one token out.
    ping = RequestRecord(
        at=prev.at,
        input_tokens=0,
        cache_read_tokens=prev.total_tokens,
        cache_creation_tokens=0,
        output_tokens=KEEP_ALIVE_OUTPUT,
        model=prev.model,
    )
    result.cost_usd += pings * cost(ping, prices)


def reference_audit_session(
    analysis: SessionAnalysis,
    price_of: PriceFn,
    *,
    since: float | None = None,
    until: float | None = None,
    top: int = 10,
    zone: tzinfo = UTC,
) -> SessionAudit:
    """Costs of one session's requests inside ``[since, until)``.

    The ledger ran over the whole session, so a request keeps the outcome it had even
    when the request before it falls outside the range.
    """
    log = analysis.log
    agent = agent_of(log.format)
    out = SessionAudit(
        log.session_id,
        analysis.project,
        log.source,
        agent,
        skipped_lines=len(log.issues),
    )
    out.groups = {g: {} for g in GroupBy if g is not GroupBy.SESSION}
    kept_streams: list[tuple[list[LedgerEntry], dict[int, tuple[float, float]]]] = []
    misses: list[MissRow] = []
    for stream in analysis.streams:
        kind = stream.log.kind.value
        kept = [e for e in stream.entries if _in_range(e.record.at, since, until)]
        kept_streams.append((kept, pauses(stream.log, stream.entries)))
        # The TTL in force across a gap is the one the previous request left.
        pairs = zip(stream.entries, stream.entries[1:], strict=False)
        ttl_before = {e.index: prev.ttl for prev, e in pairs}
        for e in kept:
            r = e.record
            t = Totals(
                requests=1,
                input_tokens=r.input_tokens,
                cache_read_tokens=r.cache_read_tokens,
                cache_creation_tokens=r.cache_creation_tokens,
                output_tokens=r.output_tokens,
            )
            prices = price_of(r)
            miss_usd: float | None = None
            if prices is None:
                t.unpriced_requests = 1
                out.unpriced_models.add(r.model or "(no model)")
            else:
                t.cost_usd = cost(r, prices)
                miss_usd = miss_cost(e, prices)
            if e.outcome is Outcome.MISS:
                t.misses = 1
                t.reprocessed_tokens = e.reprocessed_tokens
                t.miss_cost_usd = miss_usd or 0.0
                misses.append(
                    MissRow(
                        log.session_id,
                        analysis.project,
                        stream.log.id,
                        kind,
                        e.index,
                        r.at,
                        r.model,
                        tuple(cause_key(e).split("+")),
                        e.gap_s,
                        e.reprocessed_tokens,
                        miss_usd,
                        agent,
                    )
                )
            elif e.outcome is Outcome.EXPECTED:
                t.expected_rebuilds = 1
                t.reprocessed_tokens = e.reprocessed_tokens
                t.rebuild_cost_usd = miss_usd or 0.0
            out.totals.add(t)
            keys = {
                GroupBy.PROJECT: analysis.project or "(none)",
                GroupBy.DAY: day_of(r.at, zone),
                GroupBy.WEEK: week_of(r.at, zone),
                GroupBy.MONTH: month_of(r.at, zone),
                GroupBy.GAP: gap_key(e.gap_s, ttl_before.get(e.index, e.ttl)),
                GroupBy.MODEL: r.model or "(no model)",
                GroupBy.CAUSE: cause_key(e),
                GroupBy.STREAM_KIND: kind,
                GroupBy.AGENT: agent,
            }
            for group, key in keys.items():
                out.groups[group].setdefault(key, Totals()).add(t)
            out.first_at = r.at if out.first_at is None else min(out.first_at, r.at)
            out.last_at = r.at if out.last_at is None else max(out.last_at, r.at)
    out.top_misses = heapq.nlargest(top, misses, key=_miss_sort_key)
    out.whatif = replay_streams(kept_streams, price_of)
    return out
