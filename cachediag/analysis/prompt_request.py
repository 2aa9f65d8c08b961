"""One request's prompt as the hygiene checks measure it: the tokens and the cost of each
of its blocks, and where it stops repeating the request before it.

Pure: a request's layout (block hashes and sizes, never text), its usage and its prices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cachediag.analysis.breakdown import BlockTokens, Layout, block_tokens
from cachediag.analysis.costs import ModelPrices
from cachediag.analysis.ledger import MISS_READ_SHARE, LedgerEntry
from cachediag.model import TTL_SECONDS, Fingerprint, RequestRecord


@dataclass(slots=True)
class PromptRequest:
    """A request of a stream with the layout of its prompt and its model's prices."""

    entry: LedgerEntry
    layout: Layout
    prices: ModelPrices | None
    _tokens: BlockTokens | None = None

    @property
    def record(self) -> RequestRecord:
        return self.entry.record

    @property
    def fp(self) -> Fingerprint:
        assert self.entry.record.fingerprint is not None
        return self.entry.record.fingerprint

    @property
    def tokens(self) -> BlockTokens:
        if self._tokens is None:
            self._tokens = block_tokens(self.layout, self.record)
        return self._tokens

    def block_total(self, pos: int) -> float:
        t = self.tokens
        return t.read[pos] + t.written[pos] + t.uncached[pos]

    def run_tokens(self, positions: range) -> float:
        t = self.tokens
        return sum(t.read[p] + t.written[p] + t.uncached[p] for p in positions)

    def tier(self) -> ModelPrices | None:
        return None if self.prices is None else self.prices.tier_for(self.record.total_tokens)

    def input_over_read(self, tokens: float) -> float | None:
        """What ``tokens`` paid as uncached input beyond reading them from cache."""
        p = self.tier()
        return None if p is None else tokens * (p.input_mtok - p.cache_read_mtok) * 1e-6

    def write_price(self) -> float | None:
        p = self.tier()
        if p is None:
            return None
        r = self.record
        c1h = r.cache_creation_1h_tokens or (r.cache_creation_tokens if r.ttl == "1h" else 0)
        if r.cache_creation_tokens > 0:
            share = min(c1h / r.cache_creation_tokens, 1.0)
            return share * p.cache_write_1h_mtok + (1 - share) * p.cache_write_5m_mtok
        return p.cache_write_1h_mtok if r.ttl == "1h" else p.cache_write_5m_mtok

    def paid(self, positions: Sequence[int]) -> float | None:
        """What these blocks cost on this request, each part at the price it was paid."""
        p, w = self.tier(), self.write_price()
        if p is None or w is None:
            return None
        t = self.tokens
        return 1e-6 * sum(
            t.read[i] * p.cache_read_mtok + t.written[i] * w + t.uncached[i] * p.input_mtok
            for i in positions
        )

    def shortfall(self, prev: PromptRequest) -> float:
        """Tokens this request processed again although ``prev`` had left them in a live
        cache (0 when it read what it could, or the cache had expired)."""
        r, e = self.record, self.entry
        could = min(prev.record.total_tokens, r.total_tokens)
        if prev.record.cached_tokens <= 0 or r.cache_read_tokens >= MISS_READ_SHARE * could:
            return 0.0
        if e.gap_s is not None and e.gap_s >= TTL_SECONDS.get(prev.entry.ttl, 300.0):
            return 0.0
        return float(could - r.cache_read_tokens)

    def rewrite_cost(self, tokens: float) -> float | None:
        """What ``tokens`` processed again cost beyond reading them: written ones at the
        write price, the rest at the input price."""
        p, w = self.tier(), self.write_price()
        if p is None or w is None:
            return None
        as_write = min(tokens, float(self.record.cache_creation_tokens))
        as_input = tokens - as_write
        return 1e-6 * (
            as_write * (w - p.cache_read_mtok) + as_input * (p.input_mtok - p.cache_read_mtok)
        )


def divergence(prev: PromptRequest, cur: PromptRequest) -> int | None:
    """First position in ``cur`` whose block differs from ``prev``'s (``None``: ``cur``
    repeats all of ``prev`` and perhaps goes on). Messages compare by their own hashes
    first, which also see the tool-call ids the block hashes leave out."""
    a, b = prev.layout, cur.layout
    for lo_a, lo_b, n_a, n_b in (
        (0, 0, a.n_tools, b.n_tools),
        (a.n_tools, b.n_tools, a.n_system, b.n_system),
    ):
        for i in range(max(n_a, n_b)):
            if i >= n_a or i >= n_b or a.prints[lo_a + i].hash != b.prints[lo_b + i].hash:
                return lo_b + min(i, n_b)
    ha, hb = prev.fp.message_hashes or (), cur.fp.message_hashes or ()
    for j, h in enumerate(ha):
        if j >= len(hb):
            return len(b.prints)
        if hb[j] == h:
            continue
        start_a, start_b = a.message_starts[j], b.message_starts[j]
        end_b = b.message_starts[j + 1] if j + 1 < len(hb) else len(b.prints)
        end_a = a.message_starts[j + 1] if j + 1 < len(ha) else len(a.prints)
        for k in range(end_b - start_b):
            if start_a + k >= end_a or a.prints[start_a + k].hash != b.prints[start_b + k].hash:
                return start_b + k
        return start_b
    return None


def common_prefix(prev: PromptRequest, cur: PromptRequest) -> int:
    d = divergence(prev, cur)
    return len(prev.layout.prints) if d is None else d


def reordered(prev: PromptRequest, cur: PromptRequest) -> int | None:
    """First tool index that moved when the set is the same in another order."""
    a, b = prev.fp.tools, cur.fp.tools
    if not a or not b or a == b or sorted(a) != sorted(b):
        return None
    return next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
