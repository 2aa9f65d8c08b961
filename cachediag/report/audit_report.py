"""The audit report: the ``--json`` contract (with its JSON Schema) and the CSV.

``build_report`` is the one place that turns an ``Audit`` into output fields; the JSON,
the CSV and the tables (``report.audit_tables``) all read the ``AuditReport`` it
returns. The contract's types are plain dataclasses, written by orjson in field order:
``audit --json`` imports neither pydantic nor rich. pydantic reads the same types, only
for ``--schema`` and in tests (``__pydantic_config__``: unknown fields are errors).
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import orjson

from cachediag.analysis.rollup import Audit, GroupBy, MissRow, Totals
from cachediag.analysis.whatif import Policy, WhatIf
from cachediag.report.serialize import escape_json_utf8

SCHEMA_VERSION = 1
_STRICT = {"extra": "forbid"}


@dataclass(slots=True)
class GroupRow:
    """Totals of one group (or of the whole audit). Costs cover priced requests only."""

    __pydantic_config__ = _STRICT

    key: str
    requests: int
    input_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    output_tokens: int
    cost_usd: float
    unpriced_requests: int
    """Requests whose model has no price in the source: not counted in any cost."""
    misses: int
    expected_rebuilds: int
    reprocessed_tokens: int
    miss_cost_usd: float
    """What misses paid beyond hits."""
    rebuild_cost_usd: float
    """What announced rebuilds (compactions) paid beyond hits."""
    recache_share: float | None
    """(miss_cost_usd + rebuild_cost_usd) / cost_usd; null when nothing was priced."""


@dataclass(slots=True)
class MissOut:
    __pydantic_config__ = _STRICT

    session_id: str
    project: str | None
    agent: str
    """The coding agent whose session it is: claude, codex, gemini, opencode."""
    stream: str
    stream_kind: str
    index: int
    at: float
    model: str | None
    causes: list[str]
    gap_s: float | None
    reprocessed_tokens: int
    cost_usd: float | None
    """What the miss paid beyond a hit; null when its model is unpriced."""


@dataclass(slots=True)
class PolicyOut:
    __pydantic_config__ = _STRICT

    policy: str
    cost_usd: float
    misses: int
    keep_alive_requests: int
    unpriced_requests: int


@dataclass(slots=True)
class WhatIfOut:
    __pydantic_config__ = _STRICT

    policies: list[PolicyOut]
    best: str
    recommendation: str


@dataclass(slots=True)
class SessionWhatIf:
    __pydantic_config__ = _STRICT

    session_id: str
    project: str | None
    agent: str
    """The coding agent whose session it is: claude, codex, gemini, opencode."""
    whatif: WhatIfOut


@dataclass(slots=True)
class AuditReport:
    """``cachediag audit --json``: one object for the whole audit."""

    __pydantic_config__ = _STRICT

    schema_version: int
    pricing_source: str
    """Which price source and version priced this audit."""
    by: str
    since: str | None
    until: str | None
    sessions: int
    first_at: float | None
    last_at: float | None
    totals: GroupRow
    groups: list[GroupRow]
    top_misses: list[MissOut]
    whatif: WhatIfOut
    whatif_by_session: list[SessionWhatIf]
    unpriced_models: list[str]
    skipped_lines: int
    """Lines skipped in the sessions read: the sum of analyze's ``skipped_lines``."""
    empty_sessions: int = 0
    """Sessions read that have no request in the range (analyze prints them too)."""
    unreadable_files: int = 0
    """Files and folders that could not be read (vanished, no permission); each is named
    on stderr and the rest is audited."""
    agents: list[str] = field(default_factory=list)
    """The agents whose sessions are in the audit, by name; with more than one, the
    session rows (``--by session``: table and CSV) and the top misses name theirs."""

    def several_agents(self) -> bool:
        return len(self.agents) > 1

    def session_agents(self) -> list[str]:
        """The agent of each of ``groups`` when they are sessions (``--by session``),
        from ``whatif_by_session``: a session id two agents share names both."""
        found: dict[str, set[str]] = {}
        for s in self.whatif_by_session:
            found.setdefault(s.session_id, set()).add(s.agent)
        return ["+".join(sorted(found.get(g.key, ()))) for g in self.groups]


def group_row(key: str, t: Totals) -> GroupRow:
    return GroupRow(
        key=key,
        requests=t.requests,
        input_tokens=t.input_tokens,
        cache_read_tokens=t.cache_read_tokens,
        cache_creation_tokens=t.cache_creation_tokens,
        output_tokens=t.output_tokens,
        cost_usd=round(t.cost_usd, 6),
        unpriced_requests=t.unpriced_requests,
        misses=t.misses,
        expected_rebuilds=t.expected_rebuilds,
        reprocessed_tokens=t.reprocessed_tokens,
        miss_cost_usd=round(t.miss_cost_usd, 6),
        rebuild_cost_usd=round(t.rebuild_cost_usd, 6),
        recache_share=None if t.recache_share is None else round(t.recache_share, 6),
    )


def whatif_out(w: WhatIf) -> WhatIfOut:
    return WhatIfOut(
        policies=[
            PolicyOut(
                policy=r.policy.value,
                cost_usd=round(r.cost_usd, 6),
                misses=r.misses,
                keep_alive_requests=r.keep_alive_requests,
                unpriced_requests=r.unpriced_requests,
            )
            for r in w.results.values()
        ],
        best=w.best().value,
        recommendation=w.recommendation(),
    )


def _miss_out(m: MissRow) -> MissOut:
    return MissOut(
        session_id=m.session_id,
        project=m.project,
        agent=m.agent,
        stream=m.stream,
        stream_kind=m.stream_kind,
        index=m.index,
        at=m.at,
        model=m.model,
        causes=list(m.causes),
        gap_s=None if m.gap_s is None else round(m.gap_s, 3),
        reprocessed_tokens=m.reprocessed_tokens,
        cost_usd=None if m.cost_usd is None else round(m.cost_usd, 6),
    )


def build_report(
    audit: Audit,
    by: GroupBy,
    pricing_source: str,
    since: str | None = None,
    until: str | None = None,
    unreadable_files: int = 0,
) -> AuditReport:
    span = audit.session_span()
    return AuditReport(
        schema_version=SCHEMA_VERSION,
        pricing_source=pricing_source,
        by=by.value,
        since=since,
        until=until,
        sessions=span.sessions,
        first_at=span.first_at,
        last_at=span.last_at,
        totals=group_row("total", audit.totals),
        groups=[group_row(k, t) for k, t in audit.rows(by)],
        top_misses=[_miss_out(m) for m in audit.top_misses],
        whatif=whatif_out(audit.whatif),
        whatif_by_session=[
            SessionWhatIf(
                session_id=s.session_id,
                project=s.project,
                agent=s.agent,
                whatif=whatif_out(s.whatif),
            )
            for s in audit.sessions
        ],
        unpriced_models=sorted(audit.unpriced_models),
        skipped_lines=audit.skipped_lines,
        empty_sessions=audit.empty_sessions,
        unreadable_files=unreadable_files,
        agents=sorted(audit.agents),
    )


def report_json(report: AuditReport) -> bytes:
    """``audit --json``: the report's fields in their declared order, no spaces; the
    bytes pydantic wrote when these types were its models (a test holds it so), with
    the C1 controls and U+2028/U+2029 of log strings escaped as ``analyze --json``'s."""
    return escape_json_utf8(orjson.dumps(report))


def report_dict(report: AuditReport) -> dict[str, Any]:
    """The report as JSON values (what ``--jq`` programs and the HTML page read)."""
    found: dict[str, Any] = orjson.loads(report_json(report))
    return found


def audit_schema() -> dict[str, Any]:
    """The JSON Schema of ``audit --json`` (imports pydantic: ``--schema`` only)."""
    from pydantic import TypeAdapter

    schema: dict[str, Any] = TypeAdapter(AuditReport).json_schema()
    return schema


POLICY_LABELS = {
    Policy.AS_HAPPENED.value: "(a) as happened",
    Policy.TTL_5M.value: "(b) 5m everywhere",
    Policy.TTL_1H.value: "(c) 1h everywhere",
    Policy.KEEP_ALIVE.value: "(d) keep-alive in pauses",
    Policy.EVIDENCE.value: "(e) 1h after first pause miss",
}
_POLICY_LABELS = POLICY_LABELS  # the name the HTML page's data imports

CSV_FIELDS = [f.name for f in fields(GroupRow) if f.name != "key"]


def report_csv(report: AuditReport) -> str:
    """One header row, then one row per group; the first column is named after ``--by``,
    the last names the price source (every report says what priced it). Sessions of
    several agents: an ``agent`` column after the session's id."""
    import csv  # only here: --json need not build its classes

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    named = report.by == GroupBy.SESSION.value and report.several_agents()
    agents = report.session_agents() if named else []
    writer.writerow([report.by, *(["agent"] if named else []), *CSV_FIELDS, "pricing_source"])
    for n, row in enumerate(report.groups):
        data = asdict(row)
        cells = ("" if data[f] is None else data[f] for f in CSV_FIELDS)
        writer.writerow([row.key, *agents[n : n + 1], *cells, report.pricing_source])
    return out.getvalue()
