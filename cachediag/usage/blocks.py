"""ccusage's 5-hour billing blocks: the rule, the gaps, burn rate, projection, token limit.

The rule, as ccusage 20 applies it (times in milliseconds, as it compares them): a block
starts at the hour of its first request, floored in UTC, and lasts ``session_hours``. A
request more than that after the block's start, or more than that after the request
before it, starts a new block; when the idle time alone is longer than a block, a gap
block runs from the end of the last request's window (last request + block length) to
the next request. A block is active when its last request is less than a block length
ago and its end is still ahead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cachediag.usage.periods import Bucket
from cachediag.usage.rows import RequestRow

HOUR_MS = 3_600_000
RECENT_DAYS = 3
"""``--recent``: blocks that started in the last 3 days, and the active one."""
WARNING_SHARE = 0.8
"""ccusage's ``warning`` past 80% of the token limit; ``exceeds`` past 100%."""


def ms(at: float) -> int:
    """Epoch milliseconds, as the transcript wrote them (``...T12:34:56.789Z``)."""
    return round(at * 1000)


@dataclass(slots=True)
class Block:
    """One block: a window of requests, or a gap between two."""

    start_ms: int
    end_ms: int
    is_gap: bool = False
    is_active: bool = False
    bucket: Bucket = field(default_factory=lambda: Bucket(""))
    last_ms: int | None = None
    """When its last request was logged (ccusage's ``actualEndTime``); ``None`` for a gap."""
    first_ms: int | None = None

    @property
    def id(self) -> str:
        start = iso_ms(self.start_ms)
        return f"gap-{start}" if self.is_gap else start


def iso_ms(at_ms: int) -> str:
    """``2026-02-11T20:00:00.000Z``: JavaScript's ``toISOString``."""
    from datetime import UTC, datetime

    seconds, millis = divmod(at_ms, 1000)
    moment = datetime.fromtimestamp(seconds, UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{millis:03d}Z"


def identify_blocks(
    rows: Iterable[RequestRow], now: float, session_hours: float = 5
) -> list[Block]:
    """Every block of ``rows`` in time order, gap blocks between them."""
    length = round(session_hours * HOUR_MS)
    now_ms = ms(now)
    blocks: list[Block] = []
    current: list[RequestRow] = []
    start = 0
    for row in sorted(rows, key=lambda r: r.at):
        at = ms(row.at)
        if current:
            last = ms(current[-1].at)
            if at - start > length or at - last > length:
                blocks.append(_block(start, current, now_ms, length))
                if at - last > length:
                    blocks.append(Block(last + length, at, is_gap=True))
                current = []
        if not current:
            start = at - at % HOUR_MS
        current.append(row)
    if current:
        blocks.append(_block(start, current, now_ms, length))
    return blocks


def _block(start: int, rows: Sequence[RequestRow], now_ms: int, length: int) -> Block:
    bucket = Bucket(iso_ms(start))
    for row in rows:
        bucket.add(row)
    first, last = ms(rows[0].at), ms(rows[-1].at)
    end = start + length
    active = now_ms - last < length and now_ms < end
    return Block(start, end, False, active, bucket, last, first)


@dataclass(slots=True, frozen=True)
class BurnRate:
    tokens_per_minute: float
    tokens_per_minute_for_indicator: float
    """Input and output tokens only: what ccusage's indicator (HIGH/MODERATE) reads."""
    cost_per_hour: float


def burn_rate(block: Block) -> BurnRate | None:
    """Tokens and dollars per unit of time between the block's first and last request;
    ``None`` for a gap or a block whose requests all came at one instant."""
    if block.is_gap or block.first_ms is None or block.last_ms is None:
        return None
    minutes = (block.last_ms - block.first_ms) / 60_000
    if minutes <= 0:
        return None
    t = block.bucket.tokens
    return BurnRate(t.total / minutes, (t.input + t.output) / minutes, t.cost_usd / minutes * 60)


@dataclass(slots=True, frozen=True)
class Projection:
    total_tokens: int
    total_cost_usd: float
    """Rounded to the cent, as ccusage rounds it."""
    remaining_minutes: int


def projection(block: Block, now: float) -> Projection | None:
    """Where the active block ends up if requests keep coming at its burn rate."""
    if not block.is_active or block.is_gap:
        return None
    rate = burn_rate(block)
    if rate is None:
        return None
    # Whole minutes, as ccusage 20 projects (it shows and multiplies the same number).
    remaining = _js_round(max(0.0, (block.end_ms - ms(now)) / 60_000))
    t = block.bucket.tokens
    tokens = t.total + rate.tokens_per_minute * remaining
    cost = t.cost_usd + rate.cost_per_hour / 60 * remaining
    return Projection(_js_round(tokens), _js_round(cost * 100) / 100, remaining)


def _js_round(x: float) -> int:
    """JavaScript's ``Math.round``: halves go up (Python's ``round`` goes to even)."""
    import math

    return math.floor(x + 0.5)


def max_block_tokens(blocks: Iterable[Block]) -> int:
    """``--token-limit max``: the most tokens any finished block used."""
    return max(
        (b.bucket.tokens.total for b in blocks if not b.is_gap and not b.is_active), default=0
    )


def token_limit(value: str | None, blocks: Sequence[Block]) -> int | None:
    """The limit ``--token-limit`` names: a count, or ``max`` (none before a finished
    block exists, as in ccusage)."""
    if value is None:
        return None
    if value.strip().lower() == "max":
        most = max_block_tokens(blocks)
        return most if most > 0 else None
    return int(value)


@dataclass(slots=True, frozen=True)
class LimitStatus:
    limit: int
    projected_usage: int
    percent_used: float
    status: str
    """``ok``, ``warning`` (past 80%) or ``exceeds`` (past 100%)."""


def limit_status(limit: int | None, proj: Projection | None) -> LimitStatus | None:
    if limit is None or limit <= 0 or proj is None:
        return None
    percent = proj.total_tokens / limit * 100
    status = "exceeds" if percent > 100 else "warning" if percent > WARNING_SHARE * 100 else "ok"
    return LimitStatus(limit, proj.total_tokens, percent, status)


def recent_blocks(blocks: Iterable[Block], now: float) -> list[Block]:
    since = ms(now) - RECENT_DAYS * 24 * HOUR_MS
    return [b for b in blocks if b.start_ms >= since or b.is_active]
