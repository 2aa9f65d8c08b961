"""ccusage 20's JSON for its Claude reports, field for field, plus ``promptCache``.

The shapes are those of ``ccusage claude daily|weekly|monthly|session|blocks --json``
(recorded in ``tests/data/ccusage20_*.json``): a script or dashboard written for them
reads ours unchanged. The one addition is ``promptCache`` on every row (and the
totals): hit ratio, misses, expected rebuilds, re-cache cost, costliest cause.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cachediag.usage.blocks import (
    Block,
    burn_rate,
    iso_ms,
    limit_status,
    ms,
    projection,
)
from cachediag.usage.periods import Bucket, CacheTally, Tokens, models_used
from cachediag.usage.rows import RequestRow

Json = dict[str, Any]
PERIOD_KEYS = {"daily": "date", "weekly": "week", "monthly": "month"}
"""Each period report's list and the field naming its line."""


def token_fields(t: Tokens) -> Json:
    return {
        "inputTokens": t.input,
        "outputTokens": t.output,
        "cacheCreationTokens": t.cache_creation,
        "cacheReadTokens": t.cache_read,
        "totalTokens": t.total,
        "totalCost": t.cost_usd,
    }


def model_breakdowns(bucket: Bucket) -> list[Json]:
    """Per model, costliest first (ccusage's order)."""
    per = sorted(bucket.models.items(), key=lambda kv: -kv[1].cost_usd)
    return [
        {
            "modelName": name,
            "inputTokens": t.input,
            "outputTokens": t.output,
            "cacheCreationTokens": t.cache_creation,
            "cacheReadTokens": t.cache_read,
            "cost": t.cost_usd,
        }
        for name, t in per
    ]


def prompt_cache(c: CacheTally) -> Json:
    """The cache figures of one line: the key ccusage's rows do not have."""
    costliest = c.costliest_cause()
    return {
        "requests": c.requests,
        "hits": c.hits,
        "hitRatio": c.hit_ratio,
        "misses": c.misses,
        "expectedRebuilds": c.expected_rebuilds,
        "recacheCostUSD": c.recache_usd,
        "costliestCause": (
            None if costliest is None else {"cause": costliest[0], "recacheCostUSD": costliest[1]}
        ),
    }


MODEL_ORDER = {"daily": "file", "session": "file", "weekly": "name", "monthly": "name"}
"""How each report lists a line's models (``periods.models_used``)."""


def line(bucket: Bucket, report: str) -> Json:
    """What every line of daily, weekly, monthly and session has."""
    return {
        **token_fields(bucket.tokens),
        "modelsUsed": models_used(bucket, MODEL_ORDER[report]),
        "modelBreakdowns": model_breakdowns(bucket),
        "promptCache": prompt_cache(bucket.cache),
    }


def summed(buckets: Iterable[Bucket]) -> tuple[Tokens, CacheTally]:
    """The tokens and the cache tally of every bucket together (a report's totals)."""
    t, cache = Tokens(), CacheTally()
    for b in buckets:
        t.merge(b.tokens)
        cache.merge(b.cache)
    return t, cache


def totals(buckets: Iterable[Bucket]) -> Json:
    t, cache = summed(buckets)
    return {**token_fields(t), "promptCache": prompt_cache(cache)}


def period_report(report: str, buckets: Sequence[Bucket], project: str | None = None) -> Json:
    """``{"daily": [...], "totals": {...}}`` (or weekly, monthly), lines in given order;
    under ``--project`` each line names it, as ccusage's do."""
    key = PERIOD_KEYS[report]
    named = {} if project is None else {"project": project}
    lines = [{key: b.key, **line(b, report), **named} for b in buckets]
    return {report: lines, "totals": totals(buckets)}


def instances_report(report: str, projects: Mapping[str, Sequence[Bucket]]) -> Json:
    """``--instances``: the lines of each project under its name, ``project`` in each."""
    key = PERIOD_KEYS[report]
    every = [b for bs in projects.values() for b in bs]
    return {
        "projects": {
            name: [{key: b.key, **line(b, report), "project": name} for b in bs]
            for name, bs in projects.items()
        },
        "totals": totals(every),
    }


def session_report(buckets: Sequence[Bucket]) -> Json:
    sessions = [
        {
            "sessionId": b.key.split("/", 1)[1] if "/" in b.key else b.key,
            "projectPath": b.project,
            "firstActivity": iso_ms(ms(b.first_at)),
            "lastActivity": iso_ms(ms(b.last_at)),
            **line(b, "session"),
        }
        for b in buckets
    ]
    return {"sessions": sessions, "totals": totals(buckets)}


def block_json(block: Block, now: float, limit: int | None) -> Json:
    t = block.bucket.tokens
    rate = burn_rate(block) if block.is_active else None
    proj = projection(block, now) if block.is_active else None
    out: Json = {
        "id": block.id,
        "startTime": iso_ms(block.start_ms),
        "endTime": iso_ms(block.end_ms),
        "actualEndTime": None if block.last_ms is None else iso_ms(block.last_ms),
        "isActive": block.is_active,
        "isGap": block.is_gap,
        "entries": block.bucket.entries,
        "tokenCounts": {
            "inputTokens": t.input,
            "outputTokens": t.output,
            "cacheCreationInputTokens": t.cache_creation,
            "cacheReadInputTokens": t.cache_read,
        },
        "totalTokens": t.total,
        "costUSD": t.cost_usd,
        "models": list(block.bucket.models),
        "burnRate": None
        if rate is None
        else {
            "tokensPerMinute": rate.tokens_per_minute,
            "tokensPerMinuteForIndicator": rate.tokens_per_minute_for_indicator,
            "costPerHour": rate.cost_per_hour,
        },
        "projection": None
        if proj is None
        else {
            "totalTokens": proj.total_tokens,
            "totalCost": proj.total_cost_usd,
            "remainingMinutes": proj.remaining_minutes,
        },
        "promptCache": prompt_cache(block.bucket.cache),
    }
    status = limit_status(limit, proj)
    if status is not None:
        out["tokenLimitStatus"] = {
            "limit": status.limit,
            "projectedUsage": status.projected_usage,
            "percentUsed": status.percent_used,
            "status": status.status,
        }
    return out


def blocks_report(blocks: Sequence[Block], now: float, limit: int | None) -> Json:
    return {"blocks": [block_json(b, now, limit) for b in blocks]}


def js_numbers(value: Any) -> Any:
    """Numbers as JavaScript writes them: a whole float is an integer (``0``, not
    ``0.0``), which is what ccusage prints."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: js_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [js_numbers(v) for v in value]
    return value


def dumps_any(report: Json | None) -> str:
    return "null" if report is None else dumps(report)


def dumps(report: Json) -> str:
    """ccusage's layout: two-space indent, keys sorted; text from logs as \\u escapes
    beyond ASCII, so no control or reordering character reaches a terminal."""
    return json.dumps(js_numbers(report), indent=2, sort_keys=True)


def session_detail(rows: Sequence[RequestRow]) -> Json | None:
    """``session --id ID --json``: the session's requests one by one (``None``, printed
    ``null`` as ccusage does, when no session has that id). ccusage writes each entry's
    ``costUSD`` as the log's own (0 for Claude Code's transcripts, which carry none);
    ours is the request's cost at the project's prices."""
    if not rows:
        return None
    ordered = sorted(rows, key=lambda r: r.at)
    bucket = Bucket(ordered[0].transcript_session)
    for r in ordered:
        bucket.add(r)
    return {
        "sessionId": bucket.key,
        "totalCost": bucket.tokens.cost_usd,
        "totalTokens": bucket.tokens.total,
        "entries": [
            {
                "timestamp": iso_ms(ms(r.at)),
                "inputTokens": r.input_tokens,
                "outputTokens": r.output_tokens,
                "cacheCreationTokens": r.cache_creation_tokens,
                "cacheReadTokens": r.cache_read_tokens,
                "model": r.model,
                "costUSD": r.cost_usd,
                "promptCache": {
                    "outcome": r.outcome,
                    "recacheCostUSD": r.recache_usd,
                    "cause": r.cause,
                },
            }
            for r in ordered
        ],
        "promptCache": prompt_cache(bucket.cache),
    }
