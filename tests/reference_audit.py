"""The audit of one session as it was first written (request by request, every policy
replayed on its own, a price lookup each time): the reference that the faster
``analysis.audit.audit_session`` is held to, to the last bit (tests/test_audit_reference.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, tzinfo

from cachediag.analysis.audit import (
    GroupBy,
    MissRow,
    SessionAudit,
    cause_key,
    day_of,
    gap_key,
    month_of,
    week_of,
)
from cachediag.analysis.costs import ModelPrices, miss_cost_usd, request_cost_usd
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.session import SessionAnalysis
from cachediag.analysis.totals import Totals
from cachediag.analysis.whatif import (
    KEEP_ALIVE_EVERY_S,
    KEEP_ALIVE_OUTPUT_TOKENS,
    Policy,
    PolicyResult,
    PriceFn,
    WhatIf,
    _as_hit,
    _idle_s,
    _is_ttl_miss,
    _priced,
    keep_alive_pings,
    offers_ttl_choice,
)
from cachediag.model import TTL_SECONDS, RequestRecord


def _in_range(at: float, since: float | None, until: float | None) -> bool:
    return (since is None or at >= since) and (until is None or at < until)


def _miss_sort_key(row: MissRow) -> tuple[float, int]:
    return (row.cost_usd if row.cost_usd is not None else -1.0, row.reprocessed_tokens)


def replay_streams(streams: list[list[LedgerEntry]], price_of: PriceFn) -> WhatIf:
    total = WhatIf()
    for entries in streams:
        choice = offers_ttl_choice(entries)
        for policy in Policy:
            replayed = policy if choice else Policy.AS_HAPPENED
            result = PolicyResult(replayed)
            for row in replay_rows(entries, replayed, price_of):
                result.add(row)
            total.results[policy].add(result)
    return total


def replay_rows(
    entries: list[LedgerEntry], policy: Policy, price_of: PriceFn
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
                row.cost_usd = request_cost_usd(e.record, prices)
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
            idle = _idle_s(e)
            window = TTL_SECONDS[ttl_in_force]
            pings = 0
            if policy is Policy.KEEP_ALIVE and prev.cached_tokens > 0:
                pings = keep_alive_pings(idle)
                alive = idle - pings * KEEP_ALIVE_EVERY_S < window
                _add_pings(result, prev, pings, price_of)
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
                policy is Policy.EVIDENCE
                and outcome is Outcome.MISS
                and write_ttl == "5m"
                and (_is_ttl_miss(e) or e.outcome is Outcome.HIT)
                and idle < TTL_SECONDS["1h"]
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
        result.cost_usd += _priced(record, write_ttl, prices)


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
        output_tokens=KEEP_ALIVE_OUTPUT_TOKENS,
        model=prev.model,
    )
    result.cost_usd += pings * request_cost_usd(ping, prices)


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
    out = SessionAudit(
        log.session_id,
        analysis.project,
        log.source,
        skipped_lines=len(log.issues),
    )
    out.groups = {g: {} for g in GroupBy if g is not GroupBy.SESSION}
    kept_streams: list[list[LedgerEntry]] = []
    misses: list[MissRow] = []
    for stream in analysis.streams:
        kind = stream.log.kind.value
        kept = [e for e in stream.entries if _in_range(e.record.at, since, until)]
        kept_streams.append(kept)
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
            miss_cost: float | None = None
            if prices is None:
                t.unpriced_requests = 1
                out.unpriced_models.add(r.model or "(no model)")
            else:
                t.cost_usd = request_cost_usd(r, prices)
                miss_cost = miss_cost_usd(e, prices)
            if e.outcome is Outcome.MISS:
                t.misses = 1
                t.reprocessed_tokens = e.reprocessed_tokens
                t.miss_cost_usd = miss_cost or 0.0
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
                        miss_cost,
                    )
                )
            elif e.outcome is Outcome.EXPECTED:
                t.expected_rebuilds = 1
                t.reprocessed_tokens = e.reprocessed_tokens
                t.rebuild_cost_usd = miss_cost or 0.0
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
            }
            for group, key in keys.items():
                out.groups[group].setdefault(key, Totals()).add(t)
            out.first_at = r.at if out.first_at is None else min(out.first_at, r.at)
            out.last_at = r.at if out.last_at is None else max(out.last_at, r.at)
    out.top_misses = heapq.nlargest(top, misses, key=_miss_sort_key)
    out.whatif = replay_streams(kept_streams, price_of)
    return out
