"""``cachediag tune``: the TTL each kind of request should use, chosen by the history's
own pauses, and the settings that say so. Click-free: ``cli.tune`` parses the options.

The history is read as ``audit`` reads it (``AuditInputs.read``, the same window,
prices and once-per-response counting); each session is reduced in its worker to the
evidence of its streams (``tune_evidence``), so that every kind's what-if is the
audit's what-if of those streams.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import tzinfo
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.analysis.tune_evidence import (
    AGENT_PREFIX,
    MAIN,
    SUBAGENTS,
    KindEvidence,
    Verdict,
    decide,
    merge,
    session_evidence,
)
from cachediag.analysis.whatif import Policy
from cachediag.commands.audit import AuditInputs, iso_bound
from cachediag.commands.tune_agents import agent_types
from cachediag.commands.tune_settings import KEYS, KeyPlan, plan_keys
from cachediag.commands.window import Window
from cachediag.errors import CachediagError
from cachediag.safefiles import open_regular

if TYPE_CHECKING:
    from cachediag.pipeline_audit import AuditRun

DEFAULT_SINCE = "30d"
_ORDER = (MAIN, SUBAGENTS, "compaction", "side_calls")
"""Kinds in the order they are shown; agent types follow the subagents."""


@dataclass(slots=True, frozen=True)
class TuneKeep:
    """Run in each worker on each analysed session: its evidence by kind (it pickles)."""

    since: float | None
    until: float | None
    pricing_file: Path | None

    def __call__(self, analysis: SessionAnalysis) -> list[KindEvidence]:
        from cachediag.pricing import price_function

        prices = price_function(self.pricing_file)
        types = agent_types(analysis)
        return session_evidence(analysis, prices, self.since, self.until, types)


@dataclass(slots=True)
class KindRow:
    evidence: KindEvidence
    verdict: Verdict

    @property
    def setting(self) -> str | None:
        """Where this kind's TTL is set: a settings.json key, an agent's frontmatter."""
        if self.evidence.kind in KEYS:
            return KEYS[self.evidence.kind]
        if self.evidence.kind.startswith(AGENT_PREFIX) and agent_name(self.evidence.kind):
            return "experimental.cacheTtl"
        return None


def agent_name(kind: str) -> str:
    return kind.removeprefix(AGENT_PREFIX)


@dataclass(slots=True)
class Tune:
    window: Window
    settings_path: Path
    rows: list[KindRow]
    plans: list[KeyPlan]
    run: AuditRun[list[KindEvidence]]
    agents_dir: Path
    notes: list[str] = field(default_factory=list)

    def saved_usd(self) -> float:
        """What the recommended settings.json TTLs would have saved over the window."""
        return sum(
            r.verdict.saved_usd
            for r in self.rows
            if r.evidence.kind in KEYS and r.verdict.ttl is not None
        )


def _sort_key(kind: str) -> tuple[int, str]:
    if kind.startswith(AGENT_PREFIX):
        return _ORDER.index(SUBAGENTS), kind or "~"
    return (_ORDER.index(kind) if kind in _ORDER else len(_ORDER)), ""


def run_tune(inputs: AuditInputs, settings_path: Path) -> Tune:
    window, zone = inputs.window()
    return tune_of(inputs, window, zone, settings_path)


def tune_of(inputs: AuditInputs, window: Window, zone: tzinfo, settings_path: Path) -> Tune:
    keep = TuneKeep(window.since, window.until, inputs.pricing_file)
    run = inputs.read(window, zone, keep=keep)
    kinds = merge(chain.from_iterable(run.kept))
    rows = [
        KindRow(kinds[k], decide(kinds[k])) for k in sorted(kinds, key=lambda k: (_sort_key(k), k))
    ]
    by_kind = {r.evidence.kind: r for r in rows}
    history = {k: by_kind[k].evidence.ttl_seen() for k in KEYS if k in by_kind}
    recommended = {k: by_kind[k].verdict.ttl for k in KEYS if k in by_kind}
    notes: list[str] = []
    try:
        plans = plan_keys(settings_path, history, recommended)
    except CachediagError as exc:
        # The evidence stands without the settings: say why they are left out.
        notes.append(str(exc))
        plans = []
    agents = settings_path.parent / "agents"
    return Tune(window, settings_path, rows, plans, run, agents, notes)


def agent_file(tune: Tune, name: str) -> Path | None:
    """The user's own file of that agent type, if there is one."""
    path = tune.agents_dir / f"{name}.md"
    return path if os.path.isfile(path) else None


_CACHE_TTL = re.compile(r"^\s*(?:experimental\.)?cacheTtl\s*:\s*[\"']?(5m|1h)\b", re.M)
_FLOW = re.compile(r"^\s*experimental\s*:\s*\{[^}]*\bcacheTtl\s*:\s*[\"']?(5m|1h)\b", re.M)


def agent_file_ttl(path: Path) -> str | None:
    """The ``cacheTtl`` an agent file's frontmatter already sets (5m or 1h), if any."""
    try:
        with open_regular(str(path)) as fp:
            text = fp.read(64 << 10).decode("utf-8", "replace")
    except OSError:
        return None
    parts = text.split("---", 2)
    if len(parts) < 3 or parts[0].strip():
        return None  # no frontmatter
    found = _FLOW.search(parts[1]) or _CACHE_TTL.search(parts[1])
    return found.group(1) if found else None


def tune_dict(tune: Tune) -> dict[str, Any]:
    """``tune --json``: everything the table shows, and the settings plan."""
    return {
        "since": iso_bound(tune.window.since),
        "until": iso_bound(tune.window.until),
        "settings_file": str(tune.settings_path),
        "sessions": len(tune.run.kept),
        "saved_usd": round(tune.saved_usd(), 6),
        "kinds": [_kind_dict(tune, r) for r in tune.rows],
        "settings": [_plan_dict(p) for p in tune.plans],
        "settings_error": tune.notes[0] if tune.notes else None,
    }


def _kind_dict(tune: Tune, row: KindRow) -> dict[str, Any]:
    e, v = row.evidence, row.verdict
    results = e.whatif.results
    out: dict[str, Any] = {
        "kind": e.kind,
        "streams": e.streams,
        "requests": e.requests,
        "cost_usd": {p.value: round(results[p].cost_usd, 6) for p in Policy},
        "misses": {p.value: results[p].misses for p in Policy},
        "pauses_5m_to_1h": e.covered_pauses,
        "pauses_over_1h": e.long_pauses,
        "ttl_written": e.ttl_seen(),
        "recommended_ttl": v.ttl,
        "reason": v.reason,
        "saved_usd": round(v.saved_usd, 6),
        "versus_other_ttl_usd": round(v.versus_other_usd, 6),
        "confidence": v.confidence,
        "setting": row.setting,
    }
    if row.setting == "experimental.cacheTtl" and v.ttl is not None:
        name = agent_name(e.kind)
        found = agent_file(tune, name)
        out["frontmatter"] = frontmatter(v.ttl)
        out["agent_file"] = None if found is None else str(found)
        out["agent_file_ttl"] = None if found is None else agent_file_ttl(found)
    return out


def frontmatter(ttl: str) -> str:
    """The line for an agent's YAML frontmatter (Claude Code 2.1.248+)."""
    return f"experimental: {{cacheTtl: {ttl}}}"


def _plan_dict(plan: KeyPlan) -> dict[str, Any]:
    ttl, where = plan.in_force()
    return {
        "key": plan.key,
        "current": plan.current,
        "set_by_tune": plan.ours,
        "in_force": ttl,
        "in_force_from": where,
        "recommended": plan.recommended,
        "action": plan.action,
    }
