"""The one serializer of cachediag's JSON output.

Plain dicts built from the analysis dataclasses, so that the status line can emit the
same ``prompt_cache`` object without importing pydantic. ``report.contract`` holds the
pydantic models that document and validate exactly these shapes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import orjson

from cachediag.analysis.costs import (
    CostTotals,
    EntryCost,
    PriceFn,
    entry_cost,
    sum_costs,
    totals_of,
)
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.summary import PromptCache
from cachediag.analysis.totals import session_totals
from cachediag.jsonsafe import escape_json as escape_json  # re-exported: report's name
from cachediag.jsonsafe import escape_json_utf8 as escape_json_utf8

if TYPE_CHECKING:  # annotations only: the status line imports this module on its own
    from cachediag.analysis.advice import Advice
    from cachediag.analysis.session_analysis import SessionAnalysis, StreamAnalysis


def json_line(obj: object) -> str:
    """The line every JSON output prints: orjson's compact text (no spaces after ``:``
    and ``,``; floats as orjson writes them, ``0.00001``, ``1e-7``, ``1e+16``) with
    ``escape_json``'s escapes, so the line is safe to print at a terminal. What orjson
    does not take (a lone surrogate, an int beyond 64 bits, a key that is not a string)
    goes to ``py_json_line``, which writes the same text for everything orjson takes."""
    try:
        data = orjson.dumps(obj)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return py_json_line(obj)
    return escape_json_utf8(data).decode()


def py_json_line(obj: object) -> str:
    """``json_line`` in Python: strings and big ints as ``json.dumps`` writes them (a
    lone surrogate as its ``\\u`` escape), floats in orjson's spelling. Other types and a
    loop raise as ``json.dumps`` would (``TypeError``, ``ValueError``)."""
    out: list[str] = []
    _write(obj, out, set())
    return escape_json("".join(out))


def _write(value: object, out: list[str], seen: set[int]) -> None:
    if value is None or value is True or value is False:
        out.append("null" if value is None else "true" if value else "false")
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        out.append(int.__repr__(value))  # an IntEnum as its number, as orjson writes it
    elif isinstance(value, float):
        out.append(orjson.dumps(value).decode())  # NaN and infinities: null, as orjson
    elif isinstance(value, dict | list | tuple):
        if id(value) in seen:
            raise ValueError("Circular reference detected")
        seen.add(id(value))
        if isinstance(value, dict):
            _write_object(value, out, seen)
        else:
            _write_array(value, out, seen)
        seen.discard(id(value))
    else:
        out.append(orjson.dumps(value).decode())  # an enum, a dataclass... or TypeError


def _write_array(items: list[Any] | tuple[Any, ...], out: list[str], seen: set[int]) -> None:
    out.append("[")
    for i, item in enumerate(items):
        if i:
            out.append(",")
        _write(item, out, seen)
    out.append("]")


def _write_object(obj: dict[Any, Any], out: list[str], seen: set[int]) -> None:
    out.append("{")
    for i, (key, item) in enumerate(obj.items()):
        if i:
            out.append(",")
        out.append(json.dumps(_key(key), ensure_ascii=False))
        out.append(":")
        _write(item, out, seen)
    out.append("}")


def _key(key: object) -> str:
    """A key as ``json.dumps`` turns it into a string (floats in orjson's spelling)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return "null" if key is None else "true" if key else "false"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return orjson.dumps(key).decode()
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


SCHEMA_VERSION = 2
"""2: a request's ``tools_added`` / ``tools_removed`` are counts, as in ``prompt_cache``
(names in ``tools_added_names`` / ``tools_removed_names``); ``prompt_cache`` is null when
the input holds only subagent files of the session; ``unreadable_files``."""


def prompt_cache_dict(pc: PromptCache) -> dict[str, Any]:
    cause: dict[str, Any] | None = None
    if pc.last_miss_cause is not None:
        c = pc.last_miss_cause
        cause = {"causes": list(c.causes)}
        for key in ("tools_added", "tools_removed", "system_char_delta"):
            if getattr(c, key) is not None:
                cause[key] = getattr(c, key)
    return {
        "warm": pc.warm,
        "caching_observed": pc.caching_observed,
        "ttl": pc.ttl,
        "expires_at": pc.expires_at,
        "requests": pc.requests,
        "misses": pc.misses,
        "expected_rebuilds": pc.expected_rebuilds,
        "hit_ratio": pc.hit_ratio,
        "cache_write_tokens": pc.cache_write_tokens,
        "miss_recache_tokens": pc.miss_recache_tokens,
        "last_miss_at": pc.last_miss_at,
        "last_miss_cause": cause,
        "miss_causes": dict(pc.miss_causes),
        "recache_tokens_if_cold": pc.recache_tokens_if_cold,
        "hits": pc.hits,
        "cold_starts": pc.cold_starts,
    }


def _details(entry: LedgerEntry) -> dict[str, Any]:
    d = entry.diagnosis
    out: dict[str, Any] = {}
    if d is not None:
        # Counts under the contract's names, as in ``last_miss_cause``; names beside them.
        if d.tools_added is not None:
            out["tools_added"] = len(d.tools_added)
            out["tools_added_names"] = list(d.tools_added)
        if d.tools_removed is not None:
            out["tools_removed"] = len(d.tools_removed)
            out["tools_removed_names"] = list(d.tools_removed)
        if d.tools_changed:
            out["tools_changed"] = list(d.tools_changed)
        if d.system_char_delta is not None:
            out["system_char_delta"] = d.system_char_delta
        if d.system_blocks_changed is not None:
            out["system_blocks_changed"] = list(d.system_blocks_changed)
        if d.first_rewritten_message is not None:
            out["first_rewritten_message"] = d.first_rewritten_message
            out["first_rewritten_role"] = d.first_rewritten_role
        if d.server_causes:
            out["server_causes"] = [c.value for c in d.server_causes]
            out["inferred_causes"] = [c.value for c in d.causes if c not in d.server_causes]
    ev = entry.evidence
    if ev is not None:
        out["evidence"] = {
            "idle_s": round(ev.gap_s, 3),
            "ttl_in_force": ev.ttl_in_force,
            "prev_cached_tokens": ev.prev_cached_tokens,
            "read_tokens": ev.read_tokens,
            "fell_back_to": ev.fell_back_to,
            "model_before": ev.model_before,
            "model_after": ev.model_after,
            "server_reason": ev.server_reason,
        }
        if ev.server_missed_tokens is not None:
            out["evidence"]["server_missed_tokens"] = ev.server_missed_tokens
        if ev.server_reusable_tokens is not None:
            out["evidence"]["server_reusable_tokens"] = ev.server_reusable_tokens
    return out


def request_dict(entry: LedgerEntry, price_of: PriceFn | None = None) -> dict[str, Any]:
    return _request_dict(entry, None if price_of is None else entry_cost(entry, price_of))


def _request_dict(entry: LedgerEntry, cost: EntryCost | None) -> dict[str, Any]:
    r = entry.record
    d = entry.diagnosis
    outcome = entry.outcome
    out: dict[str, Any] = {
        "index": entry.index,
        "at": r.at,
        "message_id": r.message_id,
        "request_id": r.request_id,
        "model": r.model,
        "input_tokens": r.input_tokens,
        "cache_read_tokens": r.cache_read_tokens,
        "cache_creation_tokens": r.cache_creation_tokens,
        "cache_creation_1h_tokens": r.cache_creation_1h_tokens,
        "output_tokens": r.output_tokens,
        "ttl": entry.ttl,
        "gap_s": None if entry.gap_s is None else round(entry.gap_s, 3),
        "outcome": _OUTCOME_VALUES[outcome],
        "causes": [c.value for c in d.causes] if d is not None else [],
        "cause_source": d.source if d is not None else None,
        "reprocessed_tokens": entry.reprocessed_tokens,
        "announced": None if entry.announced is None else entry.announced.value,
        "line": r.line,
    }
    if cost is not None:
        out["cost_usd"] = cost.cost_usd
        out["miss_cost_usd"] = cost.miss_cost_usd
        if cost.reported:
            out["cost_source"] = "provider"
    if r.provider is not None:
        out["provider"] = r.provider
    if r.captured_only:
        out["captured_only"] = True
    if outcome is Outcome.MISS or outcome is Outcome.EXPECTED:
        out.update(_details(entry))
    return out


_OUTCOME_VALUES = {o: o.value for o in Outcome}
"""``Outcome.value`` is a Python-level property, read here once per request."""


def cost_dict(c: CostTotals) -> dict[str, Any]:
    """Costs of a stream (or several): unpriced requests are counted, never priced at $0."""
    out: dict[str, Any] = {
        "cost_usd": round(c.cost_usd, 6),
        "miss_cost_usd": round(c.miss_cost_usd, 6),
        "unpriced_requests": c.unpriced_requests,
    }
    if c.reported_requests:
        out["reported_cost_requests"] = c.reported_requests
    return out


def _stream_dict(
    s: StreamAnalysis,
    requests: bool,
    costs: CostTotals | None = None,
    entry_costs: list[EntryCost] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": s.log.id,
        "kind": s.log.kind.value,
        "source": s.log.source,
        "prompt_cache": prompt_cache_dict(s.prompt_cache),
    }
    if costs is not None:
        out["cost"] = cost_dict(costs)
    if requests:
        out["requests"] = _request_dicts(s.entries, entry_costs)
    return out


def _request_dicts(
    entries: list[LedgerEntry], costs: list[EntryCost] | None
) -> list[dict[str, Any]]:
    if costs is None:
        return [_request_dict(e, None) for e in entries]
    return list(map(_request_dict, entries, costs))


def session_dict(
    a: SessionAnalysis,
    *,
    requests: bool = False,
    price_of: PriceFn | None = None,
    pricing_source: str | None = None,
) -> dict[str, Any]:
    log = a.log
    streams = a.streams
    # Each request is priced once: for its own line and for its stream's total; the
    # session's total is the sum of its streams.
    entry_costs = (
        None
        if price_of is None
        else [[entry_cost(e, price_of) for e in s.entries] for s in streams]
    )
    costs = None if entry_costs is None else [totals_of(c) for c in entry_costs]
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "session_id": log.session_id,
        "source": log.source,
        "format": log.format,
        "project": a.project,
        # Null when only subagent files of the session were read: a main conversation of
        # zero requests would claim a session that never ran.
        "prompt_cache": prompt_cache_dict(a.main.prompt_cache) if log.main_present else None,
        "streams": [
            _stream_dict(
                s,
                requests,
                None if costs is None else costs[i],
                None if entry_costs is None else entry_costs[i],
            )
            for i, s in enumerate(a.others, start=1)
        ],
        "totals": totals_dict(a),
        "api_errors": log.api_errors,
        "replayed_responses": log.replayed_responses,
        "non_model_calls": log.non_model_calls,
        "skipped_lines": len(log.issues),
        "unreadable_files": len(log.unreadable),
    }
    if log.assumed_ttl is not None:
        out["assumed_ttl"] = log.assumed_ttl
    if costs is not None:
        out["cost"] = {
            **cost_dict(sum_costs(costs)),
            "main": cost_dict(costs[0]),
            "pricing_source": pricing_source,
        }
    if requests:
        out["requests"] = _request_dicts(
            a.main.entries, None if entry_costs is None else entry_costs[0]
        )
    return out


def totals_dict(a: SessionAnalysis) -> dict[str, int]:
    """Token totals over every stream, deduplicated per API response."""
    t = session_totals(a)
    return {
        "requests": t.requests,
        "input_tokens": t.input_tokens,
        "cache_read_tokens": t.cache_read_tokens,
        "cache_creation_tokens": t.cache_creation_tokens,
        "output_tokens": t.output_tokens,
    }


def advice_dict(a: Advice) -> dict[str, Any]:
    """One cause's advice (``analysis.advice``) as explain's JSON carries it
    (``contract.Advice``)."""
    return {
        "cause": a.cause,
        "produced_by": a.produced_by,
        "action": a.action,
        "actionable": a.actionable,
        "settings": list(a.knobs),
        "docs": a.doc,
    }
