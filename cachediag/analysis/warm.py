"""Which sessions still have a warm prompt cache, and what letting one go cold costs.

Pure: the caller reads the sessions and looks up prices. Each session is judged by its
provider's cache, as the ledger that counted it (``analysis.ledgers``) sees it, never by
a fixed hour:

- Anthropic (Claude Code, opencode's Anthropic rows): the TTL its last cache entry was
  written with (prompt-cache.md §3); going cold makes the next request write the prompt
  again at that TTL's write price.
- OpenAI (Codex, opencode's other rows): every request leaves its prefix for its model's
  retention (``RequestRecord.ttl``: 5 minutes in memory, 30 minutes from GPT-5.6, 24
  hours when extended), readable from 1,024 tokens in 128-token steps
  (``openai_cache.readable_prefix``); there is no write charge, so a cold resume pays the
  input price for what would have been cached input.
- Gemini: the implicit cache's retention (``GeminiLedger.retention_s``) from the model's
  minimum prompt (``gemini_cache.minimum_tokens``); no write charge either.
"""

from __future__ import annotations

from dataclasses import dataclass

from cachediag.analysis.costs import PER_TOKEN, ModelPrices, PriceFn
from cachediag.analysis.ledgers import GEMINI_FORMATS, OPENAI_FORMATS
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
    """The last request: its whole prompt is what a cold cache makes the next one pay."""
    expires_at: float
    seconds_left: float
    rebuild_usd: float | None
    """That prompt after expiry: written again at the TTL's write price (Anthropic), or
    sent again at the input price (OpenAI, Gemini: no write charge); ``None`` when
    unpriced."""
    resume_usd: float | None
    """The same prompt now: its cached part at the read price (the rest, below the
    provider's granularity, at the input price)."""


@dataclass(slots=True, frozen=True)
class _Kept:
    """What the provider keeps of the last prompt and for how long."""

    ttl: str
    expires_at: float
    cached_tokens: int
    written_for_1h: bool | None
    """Whose write price a cold resume pays (the 1-hour or the 5-minute one); ``None``:
    no write charge, the input price."""


def _kept(a: SessionAnalysis) -> _Kept | None:
    last = a.main.entries[-1].record
    tokens = last.total_tokens
    if a.log.format in OPENAI_FORMATS:
        from cachediag.analysis.openai_cache import readable_prefix

        window = TTL_SECONDS[last.ttl]
        return _Kept(last.ttl, last.at + window, readable_prefix(tokens), None)
    if a.log.format in GEMINI_FORMATS:
        from cachediag.analysis.gemini_cache import (
            DEFAULT_RETENTION_S,
            GeminiLedger,
            minimum_tokens,
        )

        ledger = a.main.ledger  # the retention it counted with (a test passes its own)
        window = ledger.retention_s if isinstance(ledger, GeminiLedger) else DEFAULT_RETENTION_S
        cached = tokens if tokens >= minimum_tokens(last.model) else 0
        return _Kept(last.ttl, last.at + window, cached, None)
    pc = a.main.prompt_cache
    if pc.expires_at is None:
        return None
    return _Kept(pc.ttl, pc.expires_at, tokens, pc.ttl == "1h")


def warmth(a: SessionAnalysis, now: float, price_of: PriceFn) -> Warmth | None:
    """How warm the main conversation of ``a`` is at ``now``; ``None`` once it is cold."""
    if not a.main.entries:
        return None
    kept = _kept(a)
    if kept is None or kept.cached_tokens <= 0 or now >= kept.expires_at:
        return None
    last = a.main.entries[-1].record
    prices = price_of(last)
    rebuild = resume = None
    if prices is not None:
        rebuild, resume = _costs(prices, last.total_tokens, kept)
    return Warmth(
        ttl=kept.ttl,
        last=last,
        expires_at=kept.expires_at,
        seconds_left=kept.expires_at - now,
        rebuild_usd=rebuild,
        resume_usd=resume,
    )


def _costs(prices: ModelPrices, tokens: int, kept: _Kept) -> tuple[float, float]:
    """(cold, warm) cost of sending the last prompt again."""
    p = prices.tier_for(tokens)
    if kept.written_for_1h is None:
        cold_price = p.input_mtok
    else:
        cold_price = p.cache_write_1h_mtok if kept.written_for_1h else p.cache_write_5m_mtok
    uncached = tokens - kept.cached_tokens
    resume = kept.cached_tokens * p.cache_read_mtok + uncached * p.input_mtok
    return tokens * cold_price * PER_TOKEN, resume * PER_TOKEN
