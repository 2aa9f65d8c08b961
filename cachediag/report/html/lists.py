"""The report's lists: one row per session (the session list) and the spend by project,
model and agent, from the audit the overview comes from, so every figure agrees with
``audit --json --by session|project|model`` to the cent.

"Re-cache cost" is the one name of the extra cost of misses and expected rebuilds beyond
what the same requests would have cost as hits (``miss_cost_usd + rebuild_cost_usd``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cachediag.analysis.rollup import Audit, GroupBy
from cachediag.report.audit_report import group_row

PageDict = dict[str, Any]
EXPECTED_CAUSE = "expected rebuild"
"""The top cause of a session whose only re-cache cost is expected rebuilds."""


def top_cause(events: list[dict[str, Any]]) -> str | None:
    """The cause with the largest re-cache cost in a session's misses and rebuilds (by
    count where none is priced; the first listed cause of a miss names it); ``None``
    for a session with neither."""
    cost: dict[str, float] = {}
    count: dict[str, int] = {}
    for e in events:
        causes = e.get("causes") or []
        named = causes[0] if causes else "unknown"
        key = EXPECTED_CAUSE if e["outcome"] == "expected" else named
        cost[key] = cost.get(key, 0.0) + float(e.get("miss_cost_usd") or 0.0)
        count[key] = count.get(key, 0) + 1
    if not count:
        return None
    return max(count, key=lambda k: (cost[k], count[k], k != EXPECTED_CAUSE, k))


def session_rows(audit: Audit, sessions: list[PageDict]) -> list[PageDict]:
    """One row per page session, in the page's order: what the session list shows and
    sorts by. Money comes from the audit's line of the same session."""
    lines = {(s.session_id, s.source): s for s in audit.sessions}
    rows: list[PageDict] = []
    for n, page in enumerate(sessions):
        line = lines.get((page["session_id"], page["source"]))
        events = page["events"]
        row: PageDict = {
            "n": n,
            "session_id": page["session_id"],
            "project": page["project"],
            "agent": page["agent"],
            "first_at": page["first_at"],
            "misses": sum(1 for e in events if e["outcome"] == "miss"),
            "expected_rebuilds": sum(1 for e in events if e["outcome"] == "expected"),
            "top_cause": top_cause(events),
            "requests": 0,
            "unpriced_requests": 0,
            "cost_usd": None,
            "recache_cost_usd": None,
        }
        if line is not None:
            t = line.totals
            row.update(
                requests=t.requests,
                unpriced_requests=t.unpriced_requests,
                cost_usd=round(t.cost_usd, 6),
                recache_cost_usd=round(t.miss_cost_usd + t.rebuild_cost_usd, 6),
                misses=t.misses,
                expected_rebuilds=t.expected_rebuilds,
            )
        rows.append(row)
    return rows


def spend_rows(audit: Audit, by: GroupBy) -> list[PageDict]:
    """The audit's rows of one grouping (``audit --json --by project|model``'s groups)."""
    return [asdict(group_row(k, t)) for k, t in audit.rows(by)]


def cause_advice(causes: list[str]) -> dict[str, dict[str, Any]]:
    """What to do about each cause the page shows (``analysis.advice``, the table every
    view reads), with nothing known of one session: what usually produces it, the
    action, its docs link, and whether anything avoids it at all."""
    from cachediag.analysis.advice import advice_for

    out: dict[str, dict[str, Any]] = {}
    for cause in causes:
        a = advice_for(cause)
        out[cause] = {
            "produced_by": a.produced_by,
            "action": a.action,
            "doc": a.doc,
            "actionable": a.actionable,
        }
    return out
