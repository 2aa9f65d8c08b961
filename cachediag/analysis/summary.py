"""The session summary: Claude Code's ``prompt_cache`` object (prompt-cache.md §3)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cachediag.analysis.ledger import Ledger
from cachediag.model import TTL_SECONDS


@dataclass(slots=True)  # not frozen: cachediag.analysis says why
class LastMissCause:
    """``prompt_cache.last_miss_cause``: the last miss's causes and their details."""

    causes: tuple[str, ...]
    tools_added: int | None = None
    tools_removed: int | None = None
    system_char_delta: int | None = None


@dataclass(slots=True)  # not frozen: cachediag.analysis says why
class PromptCache:
    """A stream's cache state: the ``prompt_cache`` object (prompt-cache.md §3)."""

    warm: bool
    caching_observed: bool
    ttl: str
    expires_at: float | None
    requests: int
    misses: int
    expected_rebuilds: int
    hit_ratio: float | None
    cache_write_tokens: int
    miss_recache_tokens: int
    last_miss_at: float | None
    last_miss_cause: LastMissCause | None
    miss_causes: dict[str, int] = field(default_factory=dict)
    recache_tokens_if_cold: int | None = None
    hits: int = 0
    cold_starts: int = 0


def build_prompt_cache(ledger: Ledger, now: float) -> PromptCache:
    last = ledger.prev
    has_cache = last is not None and last.cached_tokens > 0
    expires_at = last.at + TTL_SECONDS[ledger.prev_ttl] if has_cache and last else None
    denominator = ledger.read_tokens + ledger.creation_tokens + ledger.input_tokens
    cause = None
    if ledger.last_miss is not None:
        d = ledger.last_miss
        cause = LastMissCause(
            causes=tuple(c.value for c in d.causes),
            tools_added=None if d.tools_added is None else len(d.tools_added),
            tools_removed=None if d.tools_removed is None else len(d.tools_removed),
            system_char_delta=d.system_char_delta,
        )
    pending = ledger.pending_at is not None
    return PromptCache(
        warm=expires_at is not None and now < expires_at,
        caching_observed=ledger.caching_observed,
        ttl=ledger.prev_ttl,
        expires_at=expires_at,
        requests=ledger.requests,
        misses=ledger.misses,
        expected_rebuilds=ledger.expected_rebuilds,
        hit_ratio=ledger.read_tokens / denominator if denominator else None,
        cache_write_tokens=ledger.creation_tokens,
        miss_recache_tokens=ledger.miss_recache_tokens,
        last_miss_at=ledger.last_miss_at,
        last_miss_cause=cause,
        miss_causes=dict(ledger.miss_causes),
        recache_tokens_if_cold=None if (pending or last is None) else last.total_tokens,
        hits=ledger.hits,
        cold_starts=ledger.cold_starts,
    )
