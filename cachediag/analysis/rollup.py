"""Cost audit aggregation: totals and breakdowns over many sessions. Pure: no I/O.

A session is reduced to a ``SessionAudit`` (a few small dicts) as soon as it is read, so
that an audit of a gigabyte of transcripts holds one session's requests at a time and
worker processes send back only these summaries. The keys requests are grouped under
(days, gap buckets, causes) are made in ``group_keys``.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from typing import Any

from cachediag.analysis.costs import (
    ModelPrices,
    miss_cost_usd,
    request_cost_usd,
)
from cachediag.analysis.group_keys import CALENDAR, NO_MISS, Calendar, agent_key, gap_order

# Re-exported where callers have always found them; group_keys is their home.
from cachediag.analysis.group_keys import GroupBy as GroupBy
from cachediag.analysis.group_keys import cause_key as cause_key
from cachediag.analysis.group_keys import day_of as day_of
from cachediag.analysis.group_keys import gap_key as gap_key
from cachediag.analysis.group_keys import month_of as month_of
from cachediag.analysis.group_keys import valid_or_none as valid_or_none
from cachediag.analysis.group_keys import valid_text as valid_text
from cachediag.analysis.group_keys import week_of as week_of
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.analysis.totals import Rows
from cachediag.analysis.totals import Totals as Totals  # where callers have always found it
from cachediag.analysis.whatif import PriceFn, WhatIf, replay_priced


@dataclass(slots=True)  # not frozen: cachediag.analysis says why
class MissRow:
    """One miss, for the "most expensive misses" list (no prompt content)."""

    session_id: str
    project: str | None
    stream: str
    stream_kind: str
    index: int
    at: float
    model: str | None
    causes: tuple[str, ...]
    gap_s: float | None
    reprocessed_tokens: int
    cost_usd: float | None
    """What the miss paid beyond a hit; ``None`` when its model is unpriced."""
    agent: str = "claude"
    """The agent of its session (``group_keys.agent_key``)."""


@dataclass(slots=True)
class SessionAudit:
    session_id: str
    project: str | None
    source: str
    agent: str = "claude"
    totals: Totals = field(default_factory=Totals)
    groups: dict[GroupBy, dict[str, Totals]] = field(default_factory=dict)
    top_misses: list[MissRow] = field(default_factory=list)
    whatif: WhatIf = field(default_factory=WhatIf)
    first_at: float | None = None
    last_at: float | None = None
    unpriced_models: set[str] = field(default_factory=set)
    skipped_lines: int = 0


_INF = float("inf")


def _miss_sort_key(row: MissRow) -> tuple[float, int]:
    return (row.cost_usd if row.cost_usd is not None else -1.0, row.reprocessed_tokens)


def audit_session(
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
    project = analysis.project
    session_id = log.session_id
    agent = agent_key(log)
    out = SessionAudit(session_id, project, log.source, agent, skipped_lines=len(log.issues))
    keys_of = Calendar(zone).keys
    windowed = since is not None or until is not None
    rows: list[tuple[Any, ...]] = []
    misses: list[MissRow] = []
    first_at, last_at = _INF, -_INF
    for stream in analysis.streams:
        kind = stream.log.kind.value
        entries = stream.entries
        kept: list[LedgerEntry] = [] if windowed else entries
        prices: list[ModelPrices | None] = []
        costs: list[float | None] = []
        ttl_before: str | None = None
        for e in entries:
            # The TTL in force across a gap is the one the previous request left.
            ttl_in_force, ttl_before = ttl_before or e.ttl, e.ttl
            r = e.record
            at = r.at
            if windowed:
                if (since is not None and at < since) or (until is not None and at >= until):
                    continue
                kept.append(e)
            p = price_of(r)
            prices.append(p)
            outcome = e.outcome
            miss, expected = outcome is Outcome.MISS, outcome is Outcome.EXPECTED
            if p is None:
                cost = miss_cost = None
                out.unpriced_models.add(r.model or "(no model)")
            else:
                cost = request_cost_usd(r, p)
                miss_cost = miss_cost_usd(e, p) if miss or expected else 0.0
            costs.append(cost)
            if miss or expected:
                cause = cause_key(e)
                reprocessed = e.reprocessed_tokens
                if miss:
                    misses.append(
                        MissRow(
                            session_id,
                            project,
                            stream.log.id,
                            kind,
                            e.index,
                            at,
                            valid_or_none(r.model),
                            tuple(cause.split("+")),
                            e.gap_s,
                            reprocessed,
                            miss_cost,
                            agent,
                        )
                    )
            else:
                cause, reprocessed = NO_MISS, 0
            rows.append(
                (
                    # The Totals fields (Rows.FIELDS of them), then the keys (_KEYED).
                    r.input_tokens,
                    r.cache_read_tokens,
                    r.cache_creation_tokens,
                    r.output_tokens,
                    0.0 if cost is None else cost,
                    cost is None,
                    miss,
                    expected,
                    reprocessed,
                    (miss_cost or 0.0) if miss else 0.0,
                    (miss_cost or 0.0) if expected else 0.0,
                    *keys_of(at),
                    gap_key(e.gap_s, ttl_in_force),
                    r.model or "(no model)",
                    cause,
                    kind,
                )
            )
            if at < first_at:
                first_at = at
            if at > last_at:
                last_at = at
        if kept:
            out.whatif.add_stream(replay_priced(kept, prices, costs))
    if rows:
        out.first_at, out.last_at = first_at, last_at
    table = Rows(rows, Rows.FIELDS + len(_KEYED))
    out.totals = table.totals()
    out.groups = {g: {} for g in GroupBy if g is not GroupBy.SESSION}
    if rows:
        out.groups[GroupBy.PROJECT] = {project or "(none)": out.totals.copy()}
        out.groups[GroupBy.AGENT] = {agent: out.totals.copy()}
        for column, group in enumerate(_KEYED, start=Rows.FIELDS):
            out.groups[group] = table.grouped(column, out.totals)
        # Models come from the log: a few keys, made writable once here, not per request.
        models = out.groups[GroupBy.MODEL]
        if not all(m.isascii() for m in models):
            valid: dict[str, Totals] = {}
            for m, t in models.items():
                valid.setdefault(valid_text(m), Totals()).add(t)
            out.groups[GroupBy.MODEL] = valid
    out.unpriced_models = {valid_text(m) for m in out.unpriced_models}
    out.top_misses = heapq.nlargest(top, misses, key=_miss_sort_key)
    return out


_KEYED = (
    GroupBy.DAY,
    GroupBy.WEEK,
    GroupBy.MONTH,
    GroupBy.GAP,
    GroupBy.MODEL,
    GroupBy.CAUSE,
    GroupBy.STREAM_KIND,
)
"""The groups whose key can change from one request of a session to the next, in the
order of their keys in a row."""


@dataclass(slots=True)
class SessionLine:
    """What an audit keeps of each session: enough for ``--by session`` and its what-if."""

    session_id: str
    project: str | None
    source: str
    first_at: float | None
    last_at: float | None
    totals: Totals
    whatif: WhatIf
    agent: str = "claude"


@dataclass(slots=True)  # not frozen: cachediag.analysis says why
class SessionSpan:
    """How many sessions an audit covers, and from when to when."""

    sessions: int = 0
    first_at: float | None = None
    last_at: float | None = None


def session_span(sessions: list[SessionLine]) -> SessionSpan:
    firsts = [s.first_at for s in sessions if s.first_at is not None]
    lasts = [s.last_at for s in sessions if s.last_at is not None]
    return SessionSpan(len(sessions), min(firsts, default=None), max(lasts, default=None))


@dataclass(slots=True)
class Audit:
    """The running result of an audit; ``add`` one session at a time, in any order."""

    top: int = 10
    sessions: list[SessionLine] = field(default_factory=list)
    totals: Totals = field(default_factory=Totals)
    groups: dict[GroupBy, dict[str, Totals]] = field(
        default_factory=lambda: {g: {} for g in GroupBy if g is not GroupBy.SESSION}
    )
    top_misses: list[MissRow] = field(default_factory=list)
    whatif: WhatIf = field(default_factory=WhatIf)
    unpriced_models: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)
    """The agents whose sessions have requests here: a session list names each
    session's agent when there are several."""
    skipped_lines: int = 0
    empty_sessions: int = 0
    """Sessions read with no request in the audited range (not in ``sessions``)."""
    span: SessionSpan | None = None
    """Set where ``sessions`` is left empty because the output lists none (an audit of a
    dataset of 100,000 sessions shown as tables): what ``sessions`` would have said."""

    def session_span(self) -> SessionSpan:
        return self.span if self.span is not None else session_span(self.sessions)

    def add(self, s: SessionAudit) -> None:
        # Counted as analyze counts them, whether or not the session has requests here.
        self.skipped_lines += s.skipped_lines
        if s.totals.requests == 0:
            self.empty_sessions += 1
            return
        self.sessions.append(
            SessionLine(
                s.session_id,
                s.project,
                s.source,
                s.first_at,
                s.last_at,
                s.totals,
                s.whatif,
                s.agent,
            )
        )
        self.agents.add(s.agent)
        self.totals.add(s.totals)
        for group, rows in s.groups.items():
            mine = self.groups.setdefault(group, {})
            for key, t in rows.items():
                mine.setdefault(key, Totals()).add(t)
        self.top_misses = heapq.nlargest(
            self.top, [*self.top_misses, *s.top_misses], key=_miss_sort_key
        )
        self.whatif.add(s.whatif)
        self.unpriced_models |= s.unpriced_models

    def rows(self, by: GroupBy) -> list[tuple[str, Totals]]:
        """One row per group, most expensive first (then by name)."""
        if by is GroupBy.SESSION:
            pairs = [(s.session_id, s.totals) for s in self.sessions]
        elif by in CALENDAR:
            return sorted(self.groups[by].items())
        elif by is GroupBy.GAP:
            return sorted(self.groups[by].items(), key=lambda kv: gap_order(kv[0]))
        else:
            pairs = list(self.groups[by].items())
        return sorted(pairs, key=lambda kv: (-kv[1].cost_usd, kv[0]))
