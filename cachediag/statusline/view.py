"""From a session's state header (and Claude Code's own object) to what the line and
``--json`` show, as plain values: no I/O, standard library only.
"""

from __future__ import annotations

from cachediag.statusline import render

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from typing import Any

USD_DIGITS = 6
"""Costs in ``--json`` are rounded to the micro-dollar, as every JSON cost of cachediag
(``analyze``, ``audit``, ``explain``): sums of float products otherwise print as
``1.3890562499999999``."""


def usd(value: float | None) -> float | None:
    return None if value is None else round(value, USD_DIGITS)


def _streams(
    header: dict[str, Any], now: float
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The main stream and the others (in the order they started) from a state header."""
    main = None
    others: list[dict[str, Any]] = []
    for sid, s in header["streams"].items():
        pc = dict(s["prompt_cache"])
        # The one clock-dependent field (prompt-cache.md §3), against this run's now.
        pc["warm"] = pc["expires_at"] is not None and now < pc["expires_at"]
        entry = {**s, "id": sid, "prompt_cache": pc}
        if sid == "main":
            main = entry
        else:
            others.append(entry)
    others.sort(key=lambda s: (s["first_at"] is None, s["first_at"] or 0.0, s["id"]))
    return main, others


def session_view(header: dict[str, Any], now: float) -> dict[str, Any]:
    """What a session's state adds to the view; raises on a state of the wrong shape."""
    main, streams = _streams(header, now)
    bad = header.get("unreadable") or {}
    out: dict[str, Any] = {
        "streams": streams,
        "subagents": _subagents(streams),
        "partial": header.get("partial") is True,
        "unreadable_files": sorted(bad) if isinstance(bad, dict) else [],
    }
    if main is not None:
        pc = main["prompt_cache"]
        if not isinstance(pc["misses"], int) or not isinstance(main["unpriced_models"], list):
            raise TypeError("state: main stream fields of the wrong type")
        out["main_prompt_cache"] = pc
        out["miss_cost_usd"] = main["miss_cost_usd"]
        out["unpriced_models"] = main["unpriced_models"]
        out["last_miss_tools"] = _tools_of(main["ledger"].get("last_miss"))
        # A state saved before these were kept has neither: the fields are left out.
        out["usage"] = {
            "context_tokens": main.get("last_prompt_tokens"),
            "model": main.get("last_model"),
        }
    return out


def _tools_of(diagnosis: Any) -> dict[str, list[str]] | None:
    """The names of the tools the last miss added and removed (the ledger's diagnosis
    keeps them; ``prompt_cache`` carries only their counts); ``None`` when none are
    known: a transcript alone holds no tool list, the capture proxy's records do."""
    if not isinstance(diagnosis, dict):
        return None
    added, removed = diagnosis.get("tools_added"), diagnosis.get("tools_removed")
    if not isinstance(added, list) or not isinstance(removed, list) or not (added or removed):
        return None
    return {"added": [str(n) for n in added], "removed": [str(n) for n in removed]}


def _subagents(streams: list[dict[str, Any]]) -> dict[str, Any] | None:
    agents = [s for s in streams if s.get("kind") in ("subagent", "sidechain")]
    if not agents:
        return None
    read = total = requests = misses = warm = 0
    cost: float | None = 0.0
    for s in agents:
        ledger, pc = s["ledger"], s["prompt_cache"]
        read += ledger["read_tokens"]
        total += ledger["read_tokens"] + ledger["creation_tokens"] + ledger["input_tokens"]
        requests += pc["requests"]
        misses += pc["misses"]
        warm += bool(pc["warm"])
        if cost is not None and pc["misses"]:
            cost = None if s["miss_cost_usd"] is None else cost + s["miss_cost_usd"]
    return {
        "streams": len(agents),
        "requests": requests,
        "misses": misses,
        "hit_ratio": read / total if total else None,
        "warm": warm,
        "miss_cost_usd": cost,
    }


AGREEMENT_FIELDS = ("requests", "misses", "expected_rebuilds")
HIT_RATIO_SLACK = 0.005
"""Hit ratios closer than this agree (Claude Code and the transcript may round apart)."""


def agreement(sent: dict[str, Any], computed: dict[str, Any]) -> dict[str, Any]:
    """The fields where Claude Code's object and the transcript's differ, each as
    ``{"claude_code": ..., "transcript": ...}``; empty when they agree."""
    out: dict[str, Any] = {}
    for key in AGREEMENT_FIELDS:
        theirs, ours = render.count(sent, key), computed.get(key)
        if theirs != ours:
            out[key] = {"claude_code": sent.get(key), "transcript": ours}
    theirs_ratio, ours_ratio = render.number(sent, "hit_ratio"), computed.get("hit_ratio")
    if (theirs_ratio is None) != (ours_ratio is None) or (
        theirs_ratio is not None
        and ours_ratio is not None
        and abs(theirs_ratio - ours_ratio) > HIT_RATIO_SLACK
    ):
        out["hit_ratio"] = {"claude_code": sent.get("hit_ratio"), "transcript": ours_ratio}
    causes = sent.get("miss_causes")
    if causes != computed.get("miss_causes"):
        out["miss_causes"] = {"claude_code": causes, "transcript": computed.get("miss_causes")}
    return out


def combine(view: dict[str, Any], sent: Any) -> None:
    """Choose the object the line shows: Claude Code's when it sent one (with the cost of
    the misses the transcript shows, and where the two differ), else the computed one."""
    computed = view.pop("main_prompt_cache", None)
    view["computed"] = computed
    if isinstance(sent, dict):
        view["prompt_cache"], view["source"] = sent, "claude-code"
        view["agreement"] = None if computed is None else agreement(sent, computed)
        if computed is not None and render.count(sent, "misses") != computed["misses"]:
            view["transcript_misses"] = computed["misses"]
    elif computed is not None:
        view["prompt_cache"], view["source"] = computed, "transcript"
    view.setdefault("streams", [])
    view.setdefault("subagents", None)


def _names_object(view: dict[str, Any]) -> dict[str, list[str]] | None:
    """``{"tools_added_names": [...], "tools_removed_names": [...]}`` of the transcript's
    last miss (the names request records carry beside their counts), or null."""
    tools = view.get("last_miss_tools")
    if not tools:
        return None
    return {"tools_added_names": tools["added"], "tools_removed_names": tools["removed"]}


def json_object(payload: Any, view: dict[str, Any]) -> dict[str, Any]:
    out = dict(payload) if isinstance(payload, dict) else {}
    if view["source"] == "transcript":
        out["prompt_cache"] = view["prompt_cache"]
    elif view["source"] == "none":
        out.setdefault("prompt_cache", None)
    expires = render.number(view["prompt_cache"], "expires_at")
    extra: dict[str, Any] = {}
    if view["source"] == "claude-code":
        extra = {"computed": view["computed"], "agreement": view.get("agreement")}
    agents = view["subagents"]
    if agents is not None:
        agents = {**agents, "miss_cost_usd": usd(agents["miss_cost_usd"])}
    out["cachediag"] = {
        "version": 1,
        "source": view["source"],
        "transcript": view.get("transcript"),
        "partial": bool(view.get("partial")),
        "miss_cost_usd": usd(view.get("miss_cost_usd")),
        "unpriced_models": view.get("unpriced_models", []),
        "seconds_to_expiry": None if expires is None else round(max(0.0, expires - view["now"]), 3),
        "subagents": agents,
        "last_miss_cause": _names_object(view),
        "unreadable_files": view.get("unreadable_files", []),
        "streams": [
            {
                "id": s["id"],
                "kind": s["kind"],
                "prompt_cache": s["prompt_cache"],
                "miss_cost_usd": usd(s["miss_cost_usd"]),
            }
            for s in view["streams"]
        ],
        **extra,
    }
    return out
