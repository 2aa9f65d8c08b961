"""What in a stream's prompts breaks or wastes the cache: the hygiene findings.

Pure functions over one stream's ledger entries and their per-block fingerprints (hashes
and sizes, never text). Each finding is confirmed by the usage the provider reported,
not by the layout alone: a change "forces misses" only where the ledger saw a miss with
the cache still alive, a breakpoint is "below the minimum" only where nothing was cached,
the lookback "cannot find" the earlier entry only where the read fell short of it.
What each check measures a request with (its blocks' tokens and costs, where it stops
repeating the one before) is ``prompt_request``; here are the checks and their tallies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from cachediag.analysis.breakdown import (
    MESSAGES,
    SYSTEM,
    TOOLS,
    Place,
    layout_of,
    raw_tokens,
)
from cachediag.analysis.costs import PriceFn
from cachediag.analysis.ledger import MISS_READ_SHARE, LedgerEntry, Outcome
from cachediag.analysis.minimums import cache_minimum
from cachediag.analysis.prompt_request import PromptRequest, common_prefix, divergence, reordered

LOOKBACK_BLOCKS = 20
"""A breakpoint's lookup checks at most this many block boundaries before it."""
MIN_BLOCK_TOKENS = 300
"""Repeated or stable content smaller than this is noise, not a finding."""
VOLATILE_MIN_CHANGES = 2
"""A block that changed once is a miss cause (explain names it); twice, it is volatile."""


class FindingKind(StrEnum):
    VOLATILE_IN_PREFIX = "volatile_in_prefix"
    STABLE_AFTER_BREAKPOINT = "stable_after_breakpoint"
    REPEATED_BLOCK = "repeated_block"
    BELOW_MIN_CACHEABLE = "below_min_cacheable"
    LOOKBACK_EXCEEDED = "lookback_exceeded"
    NO_BREAKPOINT = "no_breakpoint"
    TOOLS_REORDERED = "tools_reordered"


@dataclass(slots=True, frozen=True)
class Finding:
    kind: str
    """A ``FindingKind`` value; other producers' kinds are kept as they are."""
    where: Place
    first_request: int
    requests: int
    tokens: int
    """Tokens the problem cost over the stream (re-processed, paid uncached, repeated)."""
    cost_usd: float | None
    """What those tokens cost beyond the cheapest way to send them; ``None`` unpriced."""
    detail: str
    misses: int = 0
    """Misses of the ledger it caused (volatile blocks, reordered tools, lookback)."""


@dataclass(slots=True)
class _Tally:
    where: Place
    first: int
    requests: int = 0
    tokens: float = 0.0
    cost: float | None = 0.0
    misses: int = 0
    facts: dict[str, int] = field(default_factory=dict)

    def add(self, tokens: float, cost: float | None, miss: bool = False) -> None:
        self.requests += 1
        self.tokens += tokens
        self.cost = None if cost is None or self.cost is None else self.cost + cost
        self.misses += int(miss)


def _explicit(req: PromptRequest) -> int | None:
    """The model's minimum when caching needs breakpoints, else ``None``."""
    row = cache_minimum(req.record.model)
    return row.tokens if row is not None and row.explicit else None


@dataclass(slots=True)
class _Findings:
    by_kind: dict[tuple[FindingKind, object], _Tally] = field(default_factory=dict)

    def tally(self, kind: FindingKind, key: object, where: Place, first: int) -> _Tally:
        found = self.by_kind.get((kind, key))
        if found is None:
            found = self.by_kind[(kind, key)] = _Tally(where, first)
        return found


def _check_pair(prev: PromptRequest, cur: PromptRequest, out: _Findings) -> None:
    index = cur.entry.index
    moved = reordered(prev, cur)
    short = cur.shortfall(prev)
    miss = cur.entry.outcome is Outcome.MISS
    if moved is not None:
        t = out.tally(FindingKind.TOOLS_REORDERED, None, Place(TOOLS, moved), index)
        t.add(short, cur.rewrite_cost(short), miss)
        t.facts["tools"] = len(cur.fp.tools or ())
    d = divergence(prev, cur)
    bps_prev = prev.layout.breakpoints
    if (
        moved is None
        and d is not None
        and cur.entry.outcome is not Outcome.EXPECTED
        and prev.record.cached_tokens > 0
        and bps_prev
        and d <= bps_prev[-1]
        and d < len(cur.layout.prints)
        and prev.layout.place(d) == cur.layout.place(d)
    ):
        place = cur.layout.place(d)
        t = out.tally(FindingKind.VOLATILE_IN_PREFIX, place, place, index)
        t.add(short, cur.rewrite_cost(short), miss)
        t.facts["broke"] = t.facts.get("broke", 0) + int(short > 0)
    minimum = _explicit(cur)
    if minimum is None:
        return
    common = len(prev.layout.prints) if d is None else d
    _check_stable_tail(prev, cur, minimum, out)
    _check_lookback(prev, cur, common, out)


def _check_stable_tail(
    prev: PromptRequest, cur: PromptRequest, minimum: int, out: _Findings
) -> None:
    """Blocks after this request's last breakpoint that the previous request also sent
    after its own: the same content paid as uncached input again."""
    bps, bps_prev = cur.layout.breakpoints, prev.layout.breakpoints
    if not bps or not bps_prev or cur.layout.automatic:
        return
    prints = cur.layout.prints
    before = {bp.hash for bp in prev.layout.prints[bps_prev[-1] + 1 :]}
    stable = [p for p in range(bps[-1] + 1, len(prints)) if prints[p].hash in before]
    if not stable:
        return
    tokens = sum(cur.block_total(p) for p in stable)
    # A breakpoint moved past this content only pays if that prefix can be cached.
    if tokens < MIN_BLOCK_TOKENS or cur.run_tokens(range(stable[-1] + 1)) < minimum:
        return
    place = cur.layout.place(stable[0])
    t = out.tally(
        FindingKind.STABLE_AFTER_BREAKPOINT, prints[stable[0]].hash, place, cur.entry.index
    )
    t.add(tokens, cur.input_over_read(tokens))
    t.facts["blocks"] = max(t.facts.get("blocks", 0), len(stable))


def _check_lookback(prev: PromptRequest, cur: PromptRequest, common: int, out: _Findings) -> None:
    bps_prev, bps = prev.layout.breakpoints, cur.layout.breakpoints
    cached = prev.record.cached_tokens
    if not bps_prev or not bps or cached <= 0 or common <= bps_prev[-1]:
        return
    last_cached = bps_prev[-1]
    if any(last_cached <= q <= last_cached + LOOKBACK_BLOCKS for q in bps):
        return
    beyond = [q for q in bps if q > last_cached + LOOKBACK_BLOCKS]
    short = cached - cur.record.cache_read_tokens
    if not beyond or cur.record.cache_read_tokens >= MISS_READ_SHARE * cached:
        return
    w = cur.write_price()
    p = cur.tier()
    cost = None if w is None or p is None else short * (w - p.cache_read_mtok) * 1e-6
    place = cur.layout.place(beyond[0])
    t = out.tally(FindingKind.LOOKBACK_EXCEEDED, None, place, cur.entry.index)
    t.add(short, cost, cur.entry.outcome is Outcome.MISS)
    t.facts["blocks"] = max(t.facts.get("blocks", 0), beyond[0] - last_cached)
    t.facts.setdefault("from", last_cached)


def _check_request(prev: PromptRequest | None, cur: PromptRequest, out: _Findings) -> None:
    index = cur.entry.index
    _check_repeats(cur, out)
    minimum = _explicit(cur)
    if minimum is None or cur.record.cached_tokens > 0:
        return
    bps = cur.layout.breakpoints
    if bps:
        t = cur.tokens
        prefix = sum(t.read[p] + t.written[p] + t.uncached[p] for p in range(bps[-1] + 1))
        if prefix < minimum:
            place = cur.layout.place(bps[-1])
            tally = out.tally(FindingKind.BELOW_MIN_CACHEABLE, place, place, index)
            again = tally.requests > 0
            tally.add(prefix, cur.input_over_read(prefix) if again else 0.0)
            tally.facts["minimum"] = minimum
            tally.facts["prefix"] = round(prefix)
    elif cur.record.total_tokens >= minimum and cur.layout.prints:
        shared = 0.0
        if prev is not None:
            shared = cur.run_tokens(range(common_prefix(prev, cur)))
        last = cur.layout.place(len(cur.layout.prints) - 1)
        tally = out.tally(FindingKind.NO_BREAKPOINT, None, last, index)
        tally.add(shared, cur.input_over_read(shared))
        tally.facts["minimum"] = minimum


def _check_repeats(cur: PromptRequest, out: _Findings) -> None:
    layout = cur.layout
    seen: dict[str, list[int]] = {}
    floor = MIN_BLOCK_TOKENS / 4  # raw estimates are rarely off by 4x; scaled below
    for pos, bp in enumerate(layout.prints):
        if bp.chars / 4 >= floor or bp.media:
            seen.setdefault(bp.hash, []).append(pos)
    for h, positions in seen.items():
        if len(positions) < 2:
            continue
        per_copy = cur.block_total(positions[0])
        # Either estimate will do: the scaling can shrink a block the provider counted.
        if max(per_copy, raw_tokens(layout.prints[positions[0]])) < MIN_BLOCK_TOKENS:
            continue
        extra = positions[1:]
        tokens = sum(cur.block_total(p) for p in extra)
        where = layout.place(extra[0])
        t = out.tally(FindingKind.REPEATED_BLOCK, h, where, cur.entry.index)
        t.add(tokens, cur.paid(extra))
        t.facts["copies"] = max(t.facts.get("copies", 0), len(positions))
        t.facts["per_copy"] = round(per_copy)
        t.facts.setdefault("first_copy", positions[0])


def find_findings(entries: Sequence[LedgerEntry], price_of: PriceFn) -> list[Finding]:
    """Every finding of one stream, the costliest first."""
    out = _Findings()
    prev: PromptRequest | None = None
    for entry in entries:
        layout = layout_of(entry.record.fingerprint)
        if layout is None:
            prev = None
            continue
        cur = PromptRequest(entry, layout, price_of(entry.record))
        if prev is not None:
            _check_pair(prev, cur, out)
        _check_request(prev, cur, out)
        prev = cur
    findings = []
    for (kind, _), t in out.by_kind.items():
        if kind is FindingKind.VOLATILE_IN_PREFIX and (
            t.requests < VOLATILE_MIN_CHANGES or not t.facts.get("broke")
        ):
            continue
        findings.append(
            Finding(
                kind=kind.value,
                where=t.where,
                first_request=t.first,
                requests=t.requests,
                tokens=round(t.tokens),
                cost_usd=None if t.cost is None else round(t.cost, 6),
                detail=_DETAIL[kind](t),
                misses=t.misses,
            )
        )
    findings.sort(key=sort_key)
    return findings


def sort_key(f: Finding) -> tuple[float, int, int]:
    """Costliest first; unpriced ones by tokens, after the priced."""
    return (-(f.cost_usd if f.cost_usd is not None else -1.0), -f.tokens, f.first_request)


def _n(value: float) -> str:
    return f"{round(value):,}"


def _requests(t: _Tally) -> str:
    return "1 request" if t.requests == 1 else f"{t.requests} requests"


_DETAIL: dict[FindingKind, Callable[[_Tally], str]] = {
    FindingKind.VOLATILE_IN_PREFIX: lambda t: (
        f"{t.where.label()} changed in {_requests(t)} while cached; "
        f"{_n(t.tokens)} tokens processed again, {t.misses} miss(es)"
    ),
    FindingKind.STABLE_AFTER_BREAKPOINT: lambda t: (
        f"up to {t.facts.get('blocks', 0)} block(s) from {t.where.label()} on, the same as in the "
        f"previous request, sat after the last breakpoint in {_requests(t)}: "
        f"{_n(t.tokens)} tokens paid uncached"
    ),
    FindingKind.REPEATED_BLOCK: lambda t: (
        f"{t.facts.get('copies', 0)} copies of a ~{_n(t.facts.get('per_copy', 0))}-token block "
        f"in {_requests(t)}; {_n(t.tokens)} tokens of extra copies"
    ),
    FindingKind.BELOW_MIN_CACHEABLE: lambda t: (
        f"~{_n(t.facts.get('prefix', 0))} tokens up to the breakpoint at {t.where.label()}; "
        f"this model caches from {_n(t.facts.get('minimum', 0))}: nothing cached in "
        f"{_requests(t)}"
    ),
    FindingKind.LOOKBACK_EXCEEDED: lambda t: (
        f"{t.facts.get('blocks', 0)} blocks between the breakpoint at {t.where.label()} and "
        f"the previous cached one (the lookup checks {LOOKBACK_BLOCKS}); "
        f"{_n(t.tokens)} tokens written again in {_requests(t)}"
    ),
    FindingKind.NO_BREAKPOINT: lambda t: (
        f"{_requests(t)} above the minimum ({_n(t.facts.get('minimum', 0))} tokens) without "
        f"any cache_control; {_n(t.tokens)} tokens resent that a cache would have read"
    ),
    FindingKind.TOOLS_REORDERED: lambda t: (
        f"the same {t.facts.get('tools', 0)} tools in another order in {_requests(t)} "
        f"(first moved: {t.where.label()}); {t.misses} miss(es)"
    ),
}

ADVICE: dict[str, str] = {
    FindingKind.VOLATILE_IN_PREFIX: "Move what changes (dates, counters, lists) after the "
    "last breakpoint, or keep it stable between requests.",
    FindingKind.STABLE_AFTER_BREAKPOINT: "Put a breakpoint after the content that stays the "
    "same, so later requests read it from cache.",
    FindingKind.REPEATED_BLOCK: "Send this content once; the conversation already holds it.",
    FindingKind.BELOW_MIN_CACHEABLE: "Drop this breakpoint or move it later, where the "
    "prefix reaches the model's minimum.",
    FindingKind.LOOKBACK_EXCEEDED: "Add a breakpoint within 20 blocks of the previous one "
    "(for example on the last tool result of each batch).",
    FindingKind.NO_BREAKPOINT: "Add cache_control at the end of the stable prefix (or the "
    "top-level cache_control for automatic caching).",
    FindingKind.TOOLS_REORDERED: "Send the tools in a fixed order (sort them by name).",
}
"""One plain sentence per kind, for the rich view and the JSON's ``advice``."""

SECTIONS = (TOOLS, SYSTEM, MESSAGES)
