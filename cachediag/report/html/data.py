"""The report page's data, from what ``analyze --json --requests`` and ``audit`` emit.

A session is reduced, in the process that read it, from its ``session_dict`` (the
``analyze --json`` object) to columns per stream plus the rows of its miss table: the
page shows nothing that JSON does not already show, and no prompt text. The overview
comes from the audit's own report (``report.audit``), so both views agree to the cent.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachediag.analysis.dimensions import Cause
from cachediag.analysis.rollup import Audit, GroupBy
from cachediag.analysis.session_analysis import SessionAnalysis, StreamAnalysis
from cachediag.ingest.agents import agent_of
from cachediag.model import TTL_SECONDS

PageDict = dict[str, Any]
CAUSES = frozenset(str(c) for c in Cause)
"""The closed set of causes, each with advice (``no_miss`` and ``expected_rebuild`` are
rows of the cause table too, but not causes of a miss)."""

EVENT_OUTCOMES = ("miss", "expected")
EVENT_FIELDS = (
    "index",
    "at",
    "model",
    "gap_s",
    "outcome",
    "causes",
    "cause_source",
    "reprocessed_tokens",
    "miss_cost_usd",
    "announced",
    "tools_added_names",
    "tools_removed_names",
    "system_char_delta",
    "first_rewritten_message",
)
"""What a row of the miss table shows: fields of the request record, no content."""
EVIDENCE_FIELDS = ("idle_s", "ttl_in_force", "prev_cached_tokens", "read_tokens", "fell_back_to")


def ttl_windows(
    ats: list[float], ttls: list[str], cached: list[bool]
) -> list[tuple[float, float, str]]:
    """When a stream's cache was alive, and the pauses it outlived, as ``(start, end,
    "alive" | "expired")``: each request that read or wrote cache keeps the prefix alive
    for the TTL in force after it; a pause past that is expired until the next request.
    Touching windows are merged, so a busy stream is one band, not one per request."""
    out: list[tuple[float, float, str]] = []
    for i, at in enumerate(ats):
        if not cached[i]:
            continue
        end = at + TTL_SECONDS[ttls[i]]
        nxt = ats[i + 1] if i + 1 < len(ats) else None
        alive_end = end if nxt is None else min(end, nxt)
        if out and out[-1][2] == "alive" and out[-1][1] >= at:
            out[-1] = (out[-1][0], max(out[-1][1], alive_end), "alive")
        else:
            out.append((at, alive_end, "alive"))
        if nxt is not None and nxt > end:
            out.append((end, nxt, "expired"))
    return [(round(s, 3), round(e, 3), state) for s, e, state in out]


def _label(s: StreamAnalysis) -> str:
    return "main" if s.log.kind.value == "main" else f"{s.log.kind.value} {s.log.id}"


def _event(request: dict[str, Any], stream: dict[str, Any]) -> dict[str, Any]:
    row = {k: request.get(k) for k in EVENT_FIELDS}
    evidence = request.get("evidence") or {}
    row.update({k: evidence.get(k) for k in EVIDENCE_FIELDS})
    row["model_before"] = evidence.get("model_before")
    row["stream"] = stream["id"]
    row["stream_kind"] = stream["kind"]
    return row


def _in_window(at: float, since: float | None, until: float | None) -> bool:
    return (since is None or at >= since) and (until is None or at < until)


def session_page(
    a: SessionAnalysis,
    obj: dict[str, Any],
    summaries: list[str],
    cost_line: str | None,
    *,
    since: float | None = None,
    until: float | None = None,
    advised: bool = True,
    version: str | None = None,
) -> PageDict:
    """One session for the page. ``obj`` is its ``session_dict(..., requests=True)``;
    ``summaries`` the summary line of each of ``a.streams``, in order. ``advised``: the
    advice (written for Claude Code) fits this log; ``version``: the Claude Code version
    it ran, so no advice names a setting that version lacks."""
    cost = obj.get("cost")
    main = {
        "id": a.main.log.id,
        "kind": a.main.log.kind.value,
        "requests": obj.get("requests") or [],
        "cost": None if cost is None else cost["main"],
    }
    streams_json = [main, *obj["streams"]]
    models: list[str | None] = []
    model_ids: dict[str | None, int] = {}
    lanes: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    switches: list[dict[str, Any]] = []
    times: list[float] = []
    for s, sj, summary in zip(a.streams, streams_json, summaries, strict=True):
        kept = [r for r in sj.get("requests") or [] if _in_window(r["at"], since, until)]
        columns: dict[str, list[Any]] = {
            k: [] for k in ("at", "index", "input", "read", "written", "output", "cost", "model")
        }
        columns["outcome"] = []
        announced: list[tuple[float, str]] = []
        previous_model: str | None = None
        for n, r in enumerate(kept):
            model = r["model"]
            if model not in model_ids:
                model_ids[model] = len(models)
                models.append(model)
            if n and model != previous_model:
                switches.append(
                    {"stream": sj["id"], "at": r["at"], "before": previous_model, "after": model}
                )
            previous_model = model
            columns["at"].append(r["at"])
            columns["index"].append(r["index"])
            columns["input"].append(r["input_tokens"])
            columns["read"].append(r["cache_read_tokens"])
            columns["written"].append(r["cache_creation_tokens"])
            columns["output"].append(r["output_tokens"])
            columns["cost"].append(r.get("cost_usd"))
            columns["model"].append(model_ids[model])
            columns["outcome"].append(r["outcome"])
            if r["announced"] is not None:
                announced.append((r["at"], r["announced"]))
            if r["outcome"] in EVENT_OUTCOMES:
                events.append(_event(r, sj))
        times.extend(columns["at"])
        windows = ttl_windows(
            columns["at"],
            [r["ttl"] for r in kept],
            [r["cache_read_tokens"] + r["cache_creation_tokens"] > 0 for r in kept],
        )
        lanes.append(
            {
                "id": sj["id"],
                "kind": sj["kind"],
                "label": _label(s),
                "summary": summary,
                "cost": sj.get("cost"),
                "columns": columns,
                "windows": windows,
                "announced": announced,
            }
        )
    events.sort(key=lambda e: (e["at"], e["stream"] != "main", e["index"]))
    advice = _fit_advice(events, version) if advised else []
    return {
        "session_id": obj["session_id"],
        "project": obj["project"],
        "source": obj["source"],
        "format": obj["format"],
        "agent": agent_of(obj["format"]),
        "first_at": min(times) if times else None,
        "last_at": max(times) if times else None,
        "summaries": summaries,
        "cost_line": cost_line,
        "cost": cost,
        "totals": obj["totals"],
        "notes": {
            "api_errors": obj["api_errors"],
            "replayed_responses": obj["replayed_responses"],
            "non_model_calls": obj["non_model_calls"],
            "skipped_lines": obj["skipped_lines"],
            "unreadable_files": obj.get("unreadable_files", 0),
        },
        "models": models,
        "lanes": lanes,
        "events": events,
        "advised": advised,
        "advice": advice,
        "switches": switches,
    }


def _fit_advice(events: list[dict[str, Any]], version: str | None) -> list[str]:
    """What to do about each miss, fitted to what its log showed (the Claude Code
    version, the TTL in force, the kind of stream: a subagent's TTL is another setting):
    each distinct text once, each miss's ``advice`` its index there (a history's misses
    share a handful of texts)."""
    from cachediag.analysis.advice import AdviceContext, advice_for

    texts: dict[str, int] = {}
    for e in events:
        if e["outcome"] != "miss":
            continue
        causes = e.get("causes") or ["unknown"]
        ctx = AdviceContext(
            version=version, ttl_in_force=e.get("ttl_in_force"), stream_kind=e.get("stream_kind")
        )
        action = advice_for(causes[0], ctx).action
        e["advice"] = texts.setdefault(action, len(texts))
    return list(texts)


@dataclass(slots=True, frozen=True)
class SessionPage:
    """One analysed session -> its page data; runs in the worker that read it."""

    pricing_file: Path | None = None
    since: float | None = None
    until: float | None = None

    def __call__(self, a: SessionAnalysis) -> PageDict:
        from cachediag.analysis.advice_context import advises, session_version
        from cachediag.pricing import price_function, pricing_source
        from cachediag.report.serialize import session_dict
        from cachediag.report.tables import cost_line, summary_line

        price_of, source = price_function(self.pricing_file), pricing_source(self.pricing_file)
        obj = session_dict(a, requests=True, price_of=price_of, pricing_source=source)
        summaries = [summary_line(_label(s), s.prompt_cache) for s in a.streams]
        return session_page(
            a,
            obj,
            summaries,
            cost_line(a, price_of, source),
            since=self.since,
            until=self.until,
            advised=advises(a),
            version=session_version(a) if advises(a) else None,
        )


def overview(
    audit: Audit, pricing_source: str, since: str | None = None, until: str | None = None
) -> PageDict:
    """Totals, spend by cause, day, project, model and (when there are several) agent,
    the most expensive misses and the what-if, as ``audit --json`` reports them."""
    from dataclasses import asdict

    from cachediag.report.audit_report import _POLICY_LABELS, build_report, group_row
    from cachediag.report.html.lists import spend_rows

    report = build_report(audit, GroupBy.CAUSE, pricing_source, since=since, until=until)
    out: PageDict = asdict(report)
    del out["whatif_by_session"], out["by"]
    out["by_cause"] = out.pop("groups")
    out["by_day"] = [asdict(group_row(k, t)) for k, t in audit.rows(GroupBy.DAY)]
    out["by_project"] = spend_rows(audit, GroupBy.PROJECT)
    out["by_model"] = spend_rows(audit, GroupBy.MODEL)
    out["by_agent"] = spend_rows(audit, GroupBy.AGENT) if len(audit.agents) > 1 else []
    out["policy_labels"] = dict(_POLICY_LABELS)
    return out


def without_timeline(page: PageDict) -> PageDict:
    """The page of a session whose requests are left out (its misses stay listed)."""
    lanes = [{**lane, "columns": None, "windows": [], "announced": []} for lane in page["lanes"]]
    return {**page, "lanes": lanes}


def page_data(
    audit: Audit,
    pricing_source: str,
    sessions: list[PageDict],
    *,
    timelines: int,
    since: str | None = None,
    until: str | None = None,
    generator: str = "",
    days_in: str = "UTC",
) -> PageDict:
    """Everything the page shows. The ``timelines`` most expensive sessions keep every
    request; the others keep their summary and miss table, so the file stays small.
    ``days_in`` names the zone the audit's days begin in (``--timezone``)."""
    order = sorted(sessions, key=lambda p: (p["first_at"] or 0.0, p["session_id"]))

    def cost(p: PageDict) -> float:
        c = p.get("cost")
        return float(c["cost_usd"]) if c else 0.0

    from cachediag.report.html.lists import cause_advice, session_rows

    keep = {id(p) for p in sorted(order, key=cost, reverse=True)[:timelines]}
    ov = overview(audit, pricing_source, since, until)
    causes = [row["key"] for row in ov["by_cause"] if row["key"] in CAUSES]
    return {
        "generator": generator,
        "overview": {**ov, "days_in": days_in},
        # Claude Code's settings and habits: shown where some session is Claude Code's.
        "advice": cause_advice(causes) if any(p.get("advised", True) for p in order) else {},
        "sessions": [p if id(p) in keep else without_timeline(p) for p in order],
        "session_list": session_rows(audit, order),
        "timelines_omitted": max(0, len(order) - timelines),
    }
