"""The audit report: a pydantic contract for ``--json`` (with its JSON Schema), CSV, rich.

``build_report`` is the one place that turns an ``Audit`` into output fields; the JSON,
the CSV and the tables all read the ``AuditReport`` it returns.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, tzinfo

from pydantic import BaseModel, ConfigDict
from rich.console import Group, RenderableType

from cachediag.analysis.audit import Audit, GroupBy, MissRow, Totals
from cachediag.analysis.whatif import Policy, WhatIf
from cachediag.report.clock import format_minute, zone_label
from cachediag.report.layout import Column, compact_count, fitted_table, short_id, text_lines
from cachediag.report.tables import format_duration, plural

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
    """Lines skipped in the sessions read: the sum of analyze's ``skipped_lines``."""
    empty_sessions: int = 0
    """Sessions read that have no request in the range (analyze prints them too)."""
    unreadable_files: int = 0
    """Files and folders that could not be read (vanished, no permission); each is named
    on stderr and the rest is audited."""


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
    unreadable_files: int = 0,
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
        empty_sessions=audit.empty_sessions,
        unreadable_files=unreadable_files,
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


def _tokens(values: list[int], header: str, short: str, keep: int) -> Column:
    return Column(
        header,
        [[f"{v:,}" for v in values], [compact_count(v) for v in values]],
        justify="right",
        keep=keep,
        short_header=short,
    )


def _key(report: AuditReport, key: str) -> str:
    # Causes joined by "+" wrap between names, never inside one.
    return key.replace("+", " + ") if report.by == "cause" else key


def _groups_table(report: AuditReport, width: int, tokens: bool) -> RenderableType:
    rows = [*report.groups, report.totals]
    columns = [
        Column(report.by, [[_key(report, r.key) for r in rows]], wraps=True),
        Column(
            "requests",
            [[f"{r.requests:,}" for r in rows]],
            justify="right",
            keep=97,
            short_header="reqs",
        ),
        Column("misses", [[f"{r.misses:,}" for r in rows]], justify="right"),
    ]
    if report.by == "gap":
        columns.append(
            Column(
                "miss rate",
                [[_share(r.misses / r.requests if r.requests else None) for r in rows]],
                justify="right",
                short_header="rate",
            )
        )
    if tokens:
        columns += [
            _tokens([r.input_tokens for r in rows], "input", "in", 96),
            _tokens([r.output_tokens for r in rows], "output", "out", 96),
            _tokens([r.cache_creation_tokens for r in rows], "cache write", "write", 96),
            _tokens([r.cache_read_tokens for r in rows], "cache read", "read", 96),
        ]
    columns += [
        Column(
            "cost",
            [[_usd(r.cost_usd) + ("*" if r.unpriced_requests else "") for r in rows]],
            justify="right",
        ),
        Column(
            "re-caching",
            [[_usd(r.miss_cost_usd + r.rebuild_cost_usd) for r in rows]],
            justify="right",
            keep=95,
        ),
        Column("share", [[_share(r.recache_share) for r in rows]], justify="right", keep=80),
    ]
    styles = [None] * len(report.groups) + ["bold"]
    return fitted_table(columns, width, title=f"By {report.by}", row_styles=styles)


def _misses_table(report: AuditReport, width: int, zone: tzinfo) -> RenderableType | None:
    misses = report.top_misses
    if not misses:
        return None
    label = zone_label(zone, misses[0].at)
    columns = [
        Column("cost", [[_usd(m.cost_usd) for m in misses]], justify="right"),
        Column(
            f"time ({label})",
            [
                [format_minute(m.at, zone) for m in misses],
                [format_minute(m.at, zone)[5:] for m in misses],
            ],
            keep=98,
            short_header=label,
        ),
        Column("session", [[m.session_id[:8] for m in misses]], keep=70),
        Column("stream", [[short_id(m.stream) for m in misses]], keep=50),
        Column("gap", [[format_duration(m.gap_s) for m in misses]], justify="right", keep=60),
        Column(
            "re-processed",
            [[f"{m.reprocessed_tokens:,}" for m in misses]],
            justify="right",
            short_header="redone",
            keep=97,
        ),
        Column("cause", [[", ".join(m.causes) for m in misses]], wraps=True),
    ]
    return fitted_table(columns, width, title="Most expensive misses")


_POLICY_LABELS = {
    Policy.AS_HAPPENED.value: "(a) as happened",
    Policy.TTL_5M.value: "(b) 5m everywhere",
    Policy.TTL_1H.value: "(c) 1h everywhere",
    Policy.KEEP_ALIVE.value: "(d) keep-alive in pauses",
    Policy.EVIDENCE.value: "(e) 1h after first pause miss",
}


def _whatif_table(report: AuditReport, width: int) -> RenderableType:
    policies = report.whatif.policies
    actual = policies[0].cost_usd
    columns = [
        Column("policy", [[_POLICY_LABELS.get(p.policy, p.policy) for p in policies]], wraps=True),
        Column("cost", [[_usd(p.cost_usd) for p in policies]], justify="right"),
        Column(
            "vs actual",
            [
                [
                    "-" if p.policy == Policy.AS_HAPPENED.value else f"{p.cost_usd - actual:+,.2f}"
                    for p in policies
                ]
            ],
            justify="right",
        ),
        Column("misses", [[f"{p.misses:,}" for p in policies]], justify="right"),
        Column("keep-alives", [[f"{p.keep_alive_requests:,}" for p in policies]], justify="right"),
    ]
    return fitted_table(columns, width, title="TTL what-if")


def audit_tables(
    report: AuditReport, *, zone: tzinfo = UTC, tokens: bool = False, width: int = 80
) -> RenderableType:
    t = report.totals
    label = zone_label(zone, report.first_at)
    head = [
        f"Audit of {plural(report.sessions, 'session')}",
        f"{format_minute(report.first_at, zone)} to {format_minute(report.last_at, zone)} {label}",
        f"prices: {report.pricing_source}",
    ]
    summary = [
        plural(t.requests, "request"),
        _usd(t.cost_usd),
        f"{plural(t.misses, 'miss', 'misses')} cost {_usd(t.miss_cost_usd)} beyond hits",
        f"{plural(t.expected_rebuilds, 'expected rebuild')} {_usd(t.rebuild_cost_usd)}",
        f"re-caching {_share(t.recache_share)} of spend",
    ]
    parts: list[RenderableType] = [
        text_lines(head, width, style="bold"),
        text_lines(summary, width),
        _groups_table(report, width, tokens),
    ]
    misses = _misses_table(report, width, zone)
    if misses is not None:
        parts.append(misses)
    parts += [
        _whatif_table(report, width),
        text_lines([f"Recommendation: {report.whatif.recommendation}"], width),
    ]
    if report.unpriced_models:
        parts.append(
            text_lines(
                [
                    f"* {plural(t.unpriced_requests, 'request')} unpriced (no price for "
                    + ", ".join(report.unpriced_models)
                    + "): not counted in costs"
                ],
                width,
                style="yellow",
            )
        )
    return Group(*parts)
