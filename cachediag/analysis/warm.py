"""Which sessions still have a warm prompt cache, and what letting one go cold costs.

Pure: the caller reads the sessions and looks up prices. Each session is judged by its
own TTL (the one its last cache entry was written with, prompt-cache.md §3), never by a
fixed hour: a 5-minute session is cold five minutes after its last response.
"""

from __future__ import annotations

from dataclasses import dataclass

from cachediag.analysis.costs import PER_TOKEN, PriceFn
from cachediag.analysis.session import SessionAnalysis
from cachediag.model import TTL_SECONDS

LONGEST_TTL_S = max(TTL_SECONDS.values())
"""No cache outlives this: a session idle for longer is cold whatever its TTL."""


@dataclass(slots=True, frozen=True)
class WarmSession:
    session_id: str
    project: str | None
    source: str
    model: str | None
    ttl: str
    last_activity_at: float
    expires_at: float
    seconds_left: float
    prompt_tokens: int
    """The last request's whole prompt: what a cold cache makes the next one write."""
    rebuild_usd: float | None
    """That prompt written again at the TTL's write price; ``None`` when unpriced."""
    resume_usd: float | None
    """The same prompt read from the warm cache (what resuming now costs)."""


def warm_session(a: SessionAnalysis, now: float, price_of: PriceFn) -> WarmSession | None:
    """The main conversation of ``a`` if its cache is still warm at ``now``."""
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
    return WarmSession(
        session_id=a.log.session_id,
        project=a.project,
        source=a.log.source,
        model=last.model,
        ttl=pc.ttl,
        last_activity_at=last.at,
        expires_at=pc.expires_at,
        seconds_left=pc.expires_at - now,
        prompt_tokens=tokens,
        rebuild_usd=rebuild,
        resume_usd=resume,
    )
