"""The audit report as tables for a terminal (rich): what ``cachediag audit`` prints
without ``--json`` or ``--csv``. Reads the ``AuditReport`` of ``report.audit``."""

from __future__ import annotations

from datetime import UTC, tzinfo

from rich.console import Group, RenderableType

from cachediag.analysis.whatif import Policy
from cachediag.report.audit_report import POLICY_LABELS, AuditReport, GroupRow
from cachediag.report.clock import format_minute, zone_label
from cachediag.report.layout import (
    Column,
    compact_count,
    fitted_table,
    path_variants,
    short_id,
    text_lines,
)
from cachediag.report.tables import format_duration, format_usd, plural
from cachediag.text import sanitize


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _group_usd(row: GroupRow, value: float) -> str:
    """A group's money: ``unpriced`` when none of its requests had a price."""
    return "unpriced" if row.requests and row.unpriced_requests >= row.requests else _usd(value)


def _cost(row: GroupRow) -> str:
    shown = _group_usd(row, row.cost_usd)
    return shown + ("*" if row.unpriced_requests and shown != "unpriced" else "")


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
    return key.replace("+", " + ") if report.by == "cause" else sanitize(key)


def _groups_table(report: AuditReport, width: int, tokens: bool) -> RenderableType:
    rows = [*report.groups, report.totals]
    keys = [_key(report, r.key) for r in rows]
    columns = [
        Column(
            report.by,
            path_variants(keys) if report.by == "project" else [keys],
            wraps=True,
        ),
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
            [[_cost(r) for r in rows]],
            justify="right",
        ),
        Column(
            "re-caching",
            [[_group_usd(r, r.miss_cost_usd + r.rebuild_cost_usd) for r in rows]],
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
        Column("cost", [[format_usd(m.cost_usd) for m in misses]], justify="right"),
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


def _whatif_table(report: AuditReport, width: int) -> RenderableType:
    policies = report.whatif.policies
    actual = policies[0].cost_usd
    # Every policy prices the same requests: none priced, no policy has a cost to show.
    unpriced = _group_usd(report.totals, 0.0) == "unpriced"
    columns = [
        Column("policy", [[POLICY_LABELS.get(p.policy, p.policy) for p in policies]], wraps=True),
        Column(
            "cost",
            [["unpriced" if unpriced else _usd(p.cost_usd) for p in policies]],
            justify="right",
        ),
        Column(
            "vs actual",
            [
                [
                    "-"
                    if unpriced or p.policy == Policy.AS_HAPPENED.value
                    else f"{p.cost_usd - actual:+,.2f}"
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
        _group_usd(t, t.cost_usd),
        f"{plural(t.misses, 'miss', 'misses')} cost {_group_usd(t, t.miss_cost_usd)} beyond hits",
        f"{plural(t.expected_rebuilds, 'expected rebuild')} {_group_usd(t, t.rebuild_cost_usd)}",
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
