"""One request against its predecessor: what changed, what it re-processed, what it cost.

Pure: the caller finds the request and the prices. Only names, counts, lengths and
hashes' equality are compared, so nothing here can leak prompt text.
"""

from __future__ import annotations

from dataclasses import dataclass

from cachediag.analysis.causes import Diagnosis, diff_fingerprints
from cachediag.analysis.costs import ModelPrices, miss_cost_usd, request_cost_usd
from cachediag.analysis.dimensions import SHOWN, visibly_changed
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.model import TTL_SECONDS, Fingerprint


@dataclass(slots=True, frozen=True)
class Change:
    field: str
    before: object
    after: object


REPORTED_SOURCE = "cost reported by the provider"


@dataclass(slots=True, frozen=True)
class Costs:
    actual_usd: float
    if_hit_usd: float | None
    """``None``: a provider-reported cost with no list price to compare a hit with."""
    miss_usd: float | None
    prices_source: str


@dataclass(slots=True, frozen=True)
class Explanation:
    stream: str
    entry: LedgerEntry
    prev: LedgerEntry | None
    changed: Diagnosis | None
    """What differs from the previous request, also for hits and expected rebuilds."""
    settings: tuple[Change, ...]
    """Model, effort, thinking and other settings that differ, before -> after."""
    betas_added: tuple[str, ...]
    betas_removed: tuple[str, ...]
    system_cache_control_changed: bool
    extra_body_changed: bool
    ttl_in_force: str
    idle_s: float | None
    ttl_expired: bool | None
    costs: Costs | None
    """``None`` when the model has no known price (never priced at 0)."""
    visible: bool
    """Whether the log showed the request bodies (captures) or only usage."""


def _setting_changes(prev: Fingerprint, cur: Fingerprint) -> tuple[Change, ...]:
    out = []
    for field, label in SHOWN:
        before, after = getattr(prev, field), getattr(cur, field)
        if visibly_changed(before, after):
            out.append(Change(label, before, after))
    return tuple(out)


def _costs(entry: LedgerEntry, prices: ModelPrices | None) -> Costs | None:
    reported = entry.record.reported_cost_usd
    if reported is not None:
        # The provider's bill is the actual cost; only list prices can say what a hit
        # would have cost instead.
        if prices is None:
            return Costs(reported, None, None, REPORTED_SOURCE)
        extra = miss_cost_usd(entry, prices)
        source = f"{REPORTED_SOURCE}; a hit priced by {prices.source}"
        return Costs(reported, reported - extra, extra, source)
    if prices is None:
        return None
    actual = request_cost_usd(entry.record, prices)
    extra = miss_cost_usd(entry, prices)
    return Costs(actual, actual - extra, extra, prices.source)


def explain_request(
    stream: str,
    entries: list[LedgerEntry],
    index: int,
    prices: ModelPrices | None,
) -> Explanation:
    """The account of ``entries[index]`` against the request before it in its stream."""
    entry = entries[index]
    prev = entries[index - 1] if index > 0 else None
    settings: tuple[Change, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    cc_changed = extra_changed = False
    changed = entry.diagnosis
    cur_fp = entry.record.fingerprint
    prev_fp = None if prev is None else prev.record.fingerprint
    if prev_fp is not None and cur_fp is not None:
        if changed is None:
            changed = diff_fingerprints(prev_fp, cur_fp)
        settings = _setting_changes(prev_fp, cur_fp)
        if prev_fp.betas is not None and cur_fp.betas is not None:
            added = tuple(sorted(set(cur_fp.betas) - set(prev_fp.betas)))
            removed = tuple(sorted(set(prev_fp.betas) - set(cur_fp.betas)))
        cc_changed = prev_fp.system_cache_control != cur_fp.system_cache_control
        extra_changed = prev_fp.extra_body_hash != cur_fp.extra_body_hash
    elif prev is not None and prev.record.model != entry.record.model:
        settings = (Change("model", prev.record.model, entry.record.model),)
    if prev is not None and visibly_changed(prev.record.provider, entry.record.provider):
        settings += (Change("provider", prev.record.provider, entry.record.provider),)
    ttl = prev.ttl if prev is not None else entry.ttl
    idle = entry.evidence.gap_s if entry.evidence is not None else entry.gap_s
    return Explanation(
        stream=stream,
        entry=entry,
        prev=prev,
        changed=changed,
        settings=settings,
        betas_added=added,
        betas_removed=removed,
        system_cache_control_changed=cc_changed,
        extra_body_changed=extra_changed,
        ttl_in_force=ttl,
        idle_s=idle,
        ttl_expired=None if idle is None else idle >= TTL_SECONDS[ttl],
        costs=_costs(entry, prices),
        visible=cur_fp is not None,
    )


def last_miss_index(entries: list[LedgerEntry]) -> int | None:
    for entry in reversed(entries):
        if entry.outcome is Outcome.MISS:
            return entry.index
    return None


def default_target(entries: list[LedgerEntry]) -> int | None:
    """What ``explain`` tells by default: the last miss, else the last expected rebuild."""
    found = last_miss_index(entries)
    if found is not None:
        return found
    for entry in reversed(entries):
        if entry.outcome is Outcome.EXPECTED:
            return entry.index
    return None
