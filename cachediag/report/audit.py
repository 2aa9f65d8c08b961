"""The audit report: a pydantic contract for ``--json`` (with its JSON Schema), CSV, rich.

``build_report`` is the one place that turns an ``Audit`` into output fields; the JSON,
the CSV and the tables all read the ``AuditReport`` it returns.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from cachediag.analysis.audit import Audit, GroupBy, MissRow, Totals
from cachediag.analysis.whatif import Policy, WhatIf
from cachediag.report.tables import format_duration

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GroupRow(_Strict):
    """Totals of one group (or of the whole audit). Costs cover priced requests only."""

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


class MissOut(_Strict):
    session_id: str
    project: str | None
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


class PolicyOut(_Strict):
    policy: str
    cost_usd: float
    misses: int
    keep_alive_requests: int
    unpriced_requests: int


class WhatIfOut(_Strict):
    policies: list[PolicyOut]
    best: str
    recommendation: str


class SessionWhatIf(_Strict):
    session_id: str
    project: str | None
    whatif: WhatIfOut


class AuditReport(_Strict):
    """``cachediag audit --json``: one object for the whole audit."""

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
) -> AuditReport:
    firsts = [s.first_at for s in audit.sessions if s.first_at is not None]
    lasts = [s.last_at for s in audit.sessions if s.last_at is not None]
    return AuditReport(
        schema_version=SCHEMA_VERSION,
        pricing_source=pricing_source,
        by=by.value,
        since=since,
        until=until,
        sessions=len(audit.sessions),
        first_at=min(firsts) if firsts else None,
        last_at=max(lasts) if lasts else None,
        totals=group_row("total", audit.totals),
        groups=[group_row(k, t) for k, t in audit.rows(by)],
        top_misses=[_miss_out(m) for m in audit.top_misses],
        whatif=whatif_out(audit.whatif),
        whatif_by_session=[
            SessionWhatIf(session_id=s.session_id, project=s.project, whatif=whatif_out(s.whatif))
            for s in audit.sessions
        ],
        unpriced_models=sorted(audit.unpriced_models),
        skipped_lines=audit.skipped_lines,
    )


CSV_FIELDS = [f for f in GroupRow.model_fields if f != "key"]


def report_csv(report: AuditReport) -> str:
    """One header row, then one row per group; the first column is named after ``--by``,
    the last names the price source (every report says what priced it)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([report.by, *CSV_FIELDS, "pricing_source"])
    for row in report.groups:
        data = row.model_dump()
        cells = ("" if data[f] is None else data[f] for f in CSV_FIELDS)
        writer.writerow([row.key, *cells, report.pricing_source])
    return out.getvalue()


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _time(at: float | None) -> str:
    return "-" if at is None else datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M")


def _groups_table(report: AuditReport) -> Table:
    table = Table(title=f"By {report.by}", show_edge=False, pad_edge=False)
    table.add_column(report.by, overflow="fold")
    for name in ("requests", "misses", "cost", "re-caching", "share"):
        table.add_column(name, justify="right")
    for row in [*report.groups, report.totals]:
        style = "bold" if row is report.totals else None
        table.add_row(
            row.key,
            f"{row.requests:,}",
            f"{row.misses:,}",
            _usd(row.cost_usd) + ("*" if row.unpriced_requests else ""),
            _usd(row.miss_cost_usd + row.rebuild_cost_usd),
            _share(row.recache_share),
            style=style,
        )
    return table


def _misses_table(report: AuditReport) -> Table | None:
    if not report.top_misses:
        return None
    table = Table(title="Most expensive misses", show_edge=False, pad_edge=False)
    for name in ("cost", "time (UTC)", "session", "stream", "gap", "re-processed", "cause"):
        table.add_column(name, justify="right" if name in ("cost", "re-processed") else "left")
    for m in report.top_misses:
        gap = format_duration(m.gap_s)
        table.add_row(
            _usd(m.cost_usd),
            _time(m.at),
            m.session_id[:8],
            m.stream,
            gap,
            f"{m.reprocessed_tokens:,}",
            ", ".join(m.causes),
        )
    return table


_POLICY_LABELS = {
    Policy.AS_HAPPENED.value: "(a) as happened",
    Policy.TTL_5M.value: "(b) 5m everywhere",
    Policy.TTL_1H.value: "(c) 1h everywhere",
    Policy.KEEP_ALIVE.value: "(d) keep-alive in pauses",
    Policy.EVIDENCE.value: "(e) 1h after first pause miss",
}


def _whatif_table(report: AuditReport) -> Table:
    table = Table(title="TTL what-if", show_edge=False, pad_edge=False)
    for name in ("policy", "cost", "vs actual", "misses", "keep-alives"):
        table.add_column(name, justify="left" if name == "policy" else "right")
    actual = report.whatif.policies[0].cost_usd
    for p in report.whatif.policies:
        delta = p.cost_usd - actual
        table.add_row(
            _POLICY_LABELS.get(p.policy, p.policy),
            _usd(p.cost_usd),
            "-" if p.policy == Policy.AS_HAPPENED.value else f"{delta:+,.2f}",
            f"{p.misses:,}",
            f"{p.keep_alive_requests:,}",
        )
    return table


def audit_tables(report: AuditReport) -> RenderableType:
    t = report.totals
    parts: list[RenderableType] = [
        Text(
            f"Audit of {report.sessions} session(s), {_time(report.first_at)} to "
            f"{_time(report.last_at)} UTC; prices: {report.pricing_source}",
            style="bold",
        ),
        Text(
            f"{t.requests:,} requests · {_usd(t.cost_usd)} · {t.misses:,} misses cost "
            f"{_usd(t.miss_cost_usd)} beyond hits, {t.expected_rebuilds:,} expected rebuilds "
            f"{_usd(t.rebuild_cost_usd)} · re-caching {_share(t.recache_share)} of spend"
        ),
        _groups_table(report),
    ]
    misses = _misses_table(report)
    if misses is not None:
        parts.append(misses)
    parts += [_whatif_table(report), Text(f"Recommendation: {report.whatif.recommendation}")]
    if report.unpriced_models:
        parts.append(
            Text(
                f"* {t.unpriced_requests:,} request(s) unpriced (no price for "
                + ", ".join(report.unpriced_models)
                + "): not counted in costs",
                style="yellow",
            )
        )
    return Group(*parts)
