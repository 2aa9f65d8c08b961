"""The audit report as tables for a terminal (rich): what ``cachediag audit`` prints
without ``--json`` or ``--csv``. Reads the ``AuditReport`` of ``report.audit``."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, tzinfo

from rich.console import Group, RenderableType

from cachediag.analysis.advice import KNOBS, Advice
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
    agents = report.by == "session" and report.several_agents()
    variants = [keys]
    if report.by == "project":
        variants = path_variants(keys)
    elif agents:
        # Ids as the misses table shows them, before the agent or the costs give way.
        variants = [keys, [k[:8] for k in keys]]
    columns = [Column(report.by, variants, wraps=True)]
    if agents:
        # The total row belongs to no one agent.
        columns.append(Column("agent", [[*report.session_agents(), ""]], keep=90))
    columns += [
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
            "re-cache cost",
            # The same cells twice: only the header narrows when the width forces it.
            [[_group_usd(r, r.miss_cost_usd + r.rebuild_cost_usd) for r in rows]] * 2,
            justify="right",
            keep=95,
            short_header="re-cache",
        ),
        # The re-cache cost as a part of the row's cost (the summary says "of spend").
        Column("%", [[_share(r.recache_share) for r in rows]], justify="right", keep=80),
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
        *(
            [Column("agent", [[m.agent for m in misses]], keep=55)]
            if report.several_agents()
            else []
        ),
        Column("stream", [[short_id(m.stream) for m in misses]], keep=50),
        Column("gap", [[format_duration(m.gap_s) for m in misses]], justify="right", keep=60),
        Column(
            "re-processed",
            [[f"{m.reprocessed_tokens:,}" for m in misses]],
            justify="right",
            short_header="re-proc",
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


def _recommendation(report: AuditReport) -> list[str]:
    """The what-if's choice, then how to make it in Claude Code (a keep-alive is not a
    Claude Code feature: the line says so and names the setting that acts instead)."""
    from cachediag.analysis.advice import KEEP_ALIVE_HOW, policy_how

    # The JSON's recommendation, word for word; the "How:" line is the text view's own.
    text, best = report.whatif.recommendation, report.whatif.best
    if best != Policy.KEEP_ALIVE.value:
        how = policy_how(best)
        return [f"Recommendation: {text}", *([f"How: {how}"] if how else [])]
    # Of what Claude Code itself can do, the cheapest policy in this history.
    doable = [p for p in report.whatif.policies if p.policy != Policy.KEEP_ALIVE.value]
    fallback = min(doable, key=lambda p: p.cost_usd).policy
    label = POLICY_LABELS.get(fallback, fallback)
    then = policy_how(fallback) or "keep what you have."
    return [f"Recommendation: {text}", f"How: {KEEP_ALIVE_HOW} Of the rest, {label}: {then}"]


def _top_causes(report: AuditReport, limit: int = 3) -> list[str]:
    """The causes that cost most: the cause groups (``--by cause``), else the most
    expensive misses' causes weighted by their cost."""
    if report.by == "cause":
        rows = sorted(report.groups, key=lambda r: -r.miss_cost_usd)
        names = [c for r in rows if r.misses for c in r.key.split("+")]
    else:
        cost: dict[str, float] = {}
        for m in report.top_misses:
            for c in m.causes:
                cost[c] = cost.get(c, 0.0) + (m.cost_usd or 0.0)
        names = sorted(cost, key=lambda c: (-cost[c], c))
    return list(dict.fromkeys(names))[:limit]


def _in_audit(a: Advice) -> Advice:
    """A pause's advice defers to the what-if above, which weighed the 1-hour TTL on
    this very history (the table's advice is for one session, without that evidence)."""
    if not a.cause.startswith("ttl_expired") or not a.knobs:
        return a
    return replace(
        a,
        action=f"The TTL what-if above says whether a 1-hour TTL (`{a.knobs[0]}`, "
        f"Claude Code {KNOBS[a.knobs[0]].since}+) would have paid on this history.",
    )


def _cause_advice(report: AuditReport, width: int) -> list[RenderableType]:
    from rich.text import Text

    from cachediag.analysis.advice import advice_for
    from cachediag.report.advice_view import stream_advice_lines

    causes = _top_causes(report)
    if not causes:
        return []
    # The audit spans sessions of any Claude Code version: each setting says from which.
    ranked = [(_in_audit(advice_for(c)), 0) for c in causes]
    lines = stream_advice_lines(ranked, width, indent="", counts=False)
    return [Text("\n".join(lines))]


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
        f"re-cache cost {_group_usd(t, t.miss_cost_usd + t.rebuild_cost_usd)}"
        f" ({_share(t.recache_share)} of spend)",
        f"{plural(t.misses, 'miss', 'misses')} {_group_usd(t, t.miss_cost_usd)}",
        f"{plural(t.expected_rebuilds, 'expected rebuild')} {_group_usd(t, t.rebuild_cost_usd)}",
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
        *(text_lines([line], width) for line in _recommendation(report)),
    ]
    parts += _cause_advice(report, width)
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
