"""``cachediag explain`` output: the JSON object and the readable account of one request."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, tzinfo
from typing import Any

from cachediag.analysis.advice import Advice
from cachediag.analysis.compare import Explanation
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.report.clock import local_time
from cachediag.report.serialize import SCHEMA_VERSION, advice_dict, request_dict
from cachediag.report.tables import format_duration


def explanation_dict(ex: Explanation, source: str, advice: Sequence[Advice] = ()) -> dict[str, Any]:
    entry = ex.entry
    d = ex.changed
    changes: dict[str, Any] = {}
    if d is not None:
        for key in ("tools_added", "tools_removed"):
            value = getattr(d, key)
            if value:
                # A count under the contract's name (as in requests and the object).
                changes[key] = len(value)
                changes[f"{key}_names"] = list(value)
        for key in ("tools_changed", "system_blocks_changed"):
            value = getattr(d, key)
            if value:
                changes[key] = list(value)
        if d.system_char_delta is not None:
            changes["system_char_delta"] = d.system_char_delta
        if d.first_rewritten_message is not None:
            changes["first_rewritten_message"] = d.first_rewritten_message
            changes["first_rewritten_role"] = d.first_rewritten_role
    for change in ex.settings:
        changes[change.field] = {"before": change.before, "after": change.after}
    if ex.betas_added or ex.betas_removed:
        changes["betas"] = {"added": list(ex.betas_added), "removed": list(ex.betas_removed)}
    if ex.system_cache_control_changed:
        changes["system_cache_control"] = True
    if ex.extra_body_changed:
        changes["extra_body"] = True
    r = entry.record
    return {
        "schema_version": SCHEMA_VERSION,
        "source": source,
        "stream": ex.stream,
        "request": request_dict(entry),
        "previous_index": None if ex.prev is None else ex.prev.index,
        "bodies_visible": ex.visible,
        "changes": changes,
        "ttl_in_force": ex.ttl_in_force,
        "idle_s": None if ex.idle_s is None else round(ex.idle_s, 3),
        "ttl_expired": ex.ttl_expired,
        "tokens": {
            "read": r.cache_read_tokens,
            "written": r.cache_creation_tokens,
            "uncached_input": r.input_tokens,
            "reprocessed": entry.reprocessed_tokens,
            "previous_prompt": None if ex.prev is None else ex.prev.record.total_tokens,
        },
        "cost": None
        if ex.costs is None
        else {
            "actual_usd": round(ex.costs.actual_usd, 6),
            "if_hit_usd": _rounded(ex.costs.if_hit_usd),
            "miss_usd": _rounded(ex.costs.miss_usd),
            "prices_source": ex.costs.prices_source,
        },
        "advice": [advice_dict(a) for a in advice],
    }


def _rounded(usd: float | None) -> float | None:
    return None if usd is None else round(usd, 6)


def _when(at: float, zone: tzinfo) -> str:
    return local_time(at, zone).strftime("%Y-%m-%d %H:%M:%S %Z")


def explanation_lines(ex: Explanation, zone: tzinfo = UTC) -> list[str]:
    """The readable account; every value is a name, count, length or price."""
    entry = ex.entry
    r = entry.record
    d = entry.diagnosis
    lines = [
        f"Request {entry.index} of stream {ex.stream}: {entry.outcome.value} · "
        f"{r.model or 'unknown model'} · {_when(r.at, zone)}",
    ]
    if ex.prev is None:
        lines.append("  first request of its stream: nothing to compare with")
        return lines
    if d is not None:
        source = {
            "server": "reported by the API",
            "capture": "from the captured requests",
        }.get(d.source, "inferred from the log")
        lines.append(f"  cause: {', '.join(c.value for c in d.causes)} ({source})")
        if d.server_causes and len(d.causes) > len(d.server_causes):
            inferred = [c.value for c in d.causes if c not in d.server_causes]
            lines.append(
                f"    API said: {', '.join(c.value for c in d.server_causes)}; "
                f"also changed: {', '.join(inferred)}"
            )
    elif entry.outcome is Outcome.EXPECTED and entry.announced is not None:
        lines.append(f"  expected rebuild, announced by a {entry.announced.value}")
    lines.extend(_server_counts(entry))
    gap = entry.gap_s if entry.gap_s is not None else 0.0
    since = ""
    if entry.announced is not None and ex.idle_s is not None and ex.idle_s != gap:
        since = f"; idle {format_duration(ex.idle_s)} since the {entry.announced.value}"
    if entry.outcome is Outcome.UNCACHED:
        ttl = "no prompt cache in use (no cache tokens reported so far)"
    else:
        alive = " (expired)" if ex.ttl_expired else " (still alive)"
        ttl = f"TTL in force {ex.ttl_in_force}{alive}"
    lines.append(
        f"  compared with request {ex.prev.index}, {format_duration(gap)} earlier{since}; {ttl}"
    )
    lines.extend(_change_lines(ex))
    p = ex.prev.record
    tokens = (
        f"  tokens: read {r.cache_read_tokens:,}, written {r.cache_creation_tokens:,}, "
        f"uncached {r.input_tokens:,}"
    )
    lines.append(tokens)
    # The ledger's "could have been read" is the previous prompt's size (spec §2);
    # analyze's read/cached column shows the part of it the cache held.
    if entry.outcome in (Outcome.MISS, Outcome.EXPECTED):
        lines.append(
            f"  re-processed tokens: {entry.reprocessed_tokens:,} of the previous prompt's "
            f"{p.total_tokens:,} ({p.cache_read_tokens + p.cache_creation_tokens:,} cached)"
        )
    lines += _cost_lines(ex)
    return lines


def _cost_lines(ex: Explanation) -> list[str]:
    c, outcome = ex.costs, ex.entry.outcome
    if c is None:
        return ["  cost: no known price for this model"]
    if outcome not in (Outcome.MISS, Outcome.EXPECTED):
        return [f"  cost: ${c.actual_usd:.4f} (a {outcome.value})", f"  prices: {c.prices_source}"]
    if c.if_hit_usd is None or c.miss_usd is None:
        return [
            f"  cost: ${c.actual_usd:.4f} (no list price for a hit)",
            f"  prices: {c.prices_source}",
        ]
    what = "the rebuild" if outcome is Outcome.EXPECTED else "the miss"
    return [
        f"  cost: ${c.actual_usd:.4f}; as a hit ${c.if_hit_usd:.4f}; "
        f"re-cache cost of {what} ${c.miss_usd:.4f}",
        f"  prices: {c.prices_source}",
    ]


def _server_counts(entry: LedgerEntry) -> list[str]:
    """What the server itself counted (OpenAI's diagnostics, Anthropic's missed tokens)."""
    ev = entry.evidence
    if ev is None or ev.server_reason is None or ev.server_missed_tokens is None:
        return []
    reusable = ev.server_reusable_tokens
    more = "" if reusable is None else f", {reusable:,} reusable"
    missed = f"{ev.server_missed_tokens:,} tokens not reused"
    return [f"  server said: {ev.server_reason}, {missed}{more}"]


def _change_lines(ex: Explanation) -> list[str]:
    d = ex.changed
    out: list[str] = []
    if not ex.visible:
        out.append("  request bodies not in this log: tools and system prompt not compared")
    if d is not None:
        out += _named("tools added", d.tools_added)
        out += _named("tools removed", d.tools_removed)
        out += _named("tools redefined", d.tools_changed)
        if d.system_blocks_changed:
            blocks = ", ".join(str(i) for i in d.system_blocks_changed)
            delta = "" if d.system_char_delta is None else f" ({d.system_char_delta:+,} chars)"
            out.append(f"  system blocks changed: {blocks}{delta}")
        if d.first_rewritten_message is not None:
            out.append(
                f"  first rewritten message: index {d.first_rewritten_message} "
                f"({d.first_rewritten_role or 'unknown role'})"
            )
    for change in ex.settings:
        out.append(f"  {change.field}: {change.before} -> {change.after}")
    out += _named("betas added", ex.betas_added)
    out += _named("betas removed", ex.betas_removed)
    if ex.system_cache_control_changed:
        out.append("  system cache_control (scope or TTL) changed")
    if ex.extra_body_changed:
        out.append("  other request body fields changed")
    return out


def _named(label: str, names: Sequence[str] | None) -> list[str]:
    """One line listing ``names`` after ``label``; none when there are none."""
    return [f"  {label}: {', '.join(names)}"] if names else []
