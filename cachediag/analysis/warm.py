"""Which sessions still have a warm prompt cache, and what letting one go cold costs.

Pure: the caller reads the sessions and looks up prices. Each session is judged by its
own TTL (the one its last cache entry was written with, prompt-cache.md §3), never by a
fixed hour: a 5-minute session is cold five minutes after its last response.
"""

from __future__ import annotations

from dataclasses import dataclass

from cachediag.analysis.costs import PER_TOKEN, PriceFn
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.model import TTL_SECONDS, RequestRecord

LONGEST_TTL_S = max(TTL_SECONDS.values())
"""No cache outlives this: a session idle for longer is cold whatever its TTL."""


@dataclass(slots=True, frozen=True)
class Warmth:
    """What is judged of a warm session; what it is (id, project, file) is the session's
    own. The fields people and machines read are named in ``report.warm``."""

    ttl: str
    last: RequestRecord
    """The last request: its whole prompt is what a cold cache makes the next one write."""
    expires_at: float
    seconds_left: float
    rebuild_usd: float | None
    """That prompt written again at the TTL's write price; ``None`` when unpriced."""
    resume_usd: float | None
    """The same prompt read from the warm cache (what resuming now costs)."""


def warmth(a: SessionAnalysis, now: float, price_of: PriceFn) -> Warmth | None:
    """How warm the main conversation of ``a`` is at ``now``; ``None`` once it is cold."""
    pc = a.main.prompt_cache
    if not pc.warm or pc.expires_at is None or not a.main.entries:
        return None
    last = a.main.entries[-1].record
    tokens = last.total_tokens
    prices = price_of(last)
    rebuild = resume = None
    if prices is not None:
        p = prices.tier_for(tokens)
        write = p.cache_write_1h_mtok if pc.ttl == "1h" else p.cache_write_5m_mtok
        rebuild = tokens * write * PER_TOKEN
        resume = tokens * p.cache_read_mtok * PER_TOKEN
    return Warmth(
        ttl=pc.ttl,
        last=last,
        expires_at=pc.expires_at,
        seconds_left=pc.expires_at - now,
        rebuild_usd=rebuild,
        resume_usd=resume,
    )
