"""One session's ledger as dataset rows: the per-request facts an audit adds up.

Runs in the worker process that read the session (no DuckDB, no pyarrow), and sends
back plain tuples. Each row carries what the request adds to every what-if policy
(``whatif.replay_rows``), so that a query engine sums them like ``cachediag audit``
sums its replays; accounting stays in ``analysis``, the dataset only stores it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachediag.analysis.costs import PriceFn, miss_cost_usd, request_cost_usd
from cachediag.analysis.group_keys import agent_key, cause_key, day_of, gap_key, valid_or_none
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.analysis.whatif import Policy, replay_rows
from cachediag.dataset.schema import NAMES
from cachediag.pipeline_audit import response_id

ROW_COLUMNS = (*NAMES[: NAMES.index("session_skipped_lines") + 1], "day")
"""What a worker fills in; the export adds the labels, its time and version."""
_POLICIES = (Policy.TTL_5M, Policy.TTL_1H, Policy.KEEP_ALIVE, Policy.EVIDENCE)
OTEL_FORMAT = "claude-code-otel"

Row = tuple[Any, ...]


def request_key(session_id: str, stream: str, entry: LedgerEntry) -> str:
    r = entry.record
    key = response_id(r.message_id, r.request_id)
    return key if key is not None else f"{session_id}|{stream}|{entry.index}|{r.at!r}"


def session_rows(analysis: SessionAnalysis, price_of: PriceFn, pricing_source: str) -> list[Row]:
    log = analysis.log
    skipped = len(log.issues)
    agent = agent_key(log)
    rows: list[Row] = []
    for stream in analysis.streams:
        entries = stream.entries
        whatif = [list(replay_rows(entries, p, price_of)) for p in _POLICIES]
        for i, e in enumerate(entries):
            # The TTL in force across a gap is the one the previous request left.
            ttl_before = entries[i - 1].ttl if i > 0 else e.ttl
            r = e.record
            prices = price_of(r)
            cost = None if prices is None else request_cost_usd(r, prices)
            extra = None if prices is None else miss_cost_usd(e, prices)
            d = e.diagnosis if e.outcome is Outcome.MISS else None
            causes = [] if d is None else [c.value for c in d.causes]
            policy_cells: list[Any] = []
            for results in whatif:
                row = results[i]
                policy_cells += [row.cost_usd, row.misses, row.unpriced_requests]
            policy_cells.append(whatif[2][i].keep_alive_requests)
            rows.append(
                (
                    request_key(log.session_id, stream.log.id, e),
                    r.message_id,
                    r.request_id,
                    log.session_id,
                    analysis.project,
                    log.source,
                    log.format,
                    agent,
                    stream.log.id,
                    stream.log.kind.value,
                    e.index,
                    r.at,
                    r.at,
                    e.gap_s,
                    valid_or_none(r.model),
                    r.input_tokens,
                    r.cache_read_tokens,
                    r.cache_creation_tokens,
                    r.cache_creation_5m_tokens,
                    r.cache_creation_1h_tokens,
                    r.output_tokens,
                    e.ttl,
                    log.assumed_ttl is not None and r.cache_creation_5m_tokens is None,
                    e.outcome.value,
                    causes,
                    cause_key(e),
                    gap_key(e.gap_s, ttl_before),
                    None if d is None else d.source,
                    None if e.announced is None else e.announced.value,
                    e.reprocessed_tokens,
                    cost,
                    extra,
                    pricing_source,
                    *policy_cells,
                    skipped,
                    day_of(r.at),
                )
            )
    return rows


@dataclass(slots=True, frozen=True)
class RowRender:
    """One analysed session -> its rows (built in the worker process; must pickle)."""

    pricing_file: Path | None = None

    def __call__(self, analysis: SessionAnalysis) -> list[Row]:
        from cachediag.pricing import price_function, pricing_source

        return session_rows(
            analysis, price_function(self.pricing_file), pricing_source(self.pricing_file)
        )
