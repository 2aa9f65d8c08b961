"""ccusage 20's JSON for reports across agents and for Codex alone, plus ``promptCache``.

Shapes as ccusage 20.0.24 prints them (``tests/data/ccusage20_all_*.json``):

- every agent (``ccusage daily|weekly|monthly|session --json``): each line has
  ``period`` (the day, week, month or session), ``agent`` (``all`` for a period; the
  session's own agent), ``metadata`` (a period's ``agents``; a session's
  ``lastActivity``, and for Codex ``reasoningOutputTokens``; none for a Gemini CLI
  session, as ccusage prints it) and the Claude reports' token fields, ``modelsUsed``
  (by name for a period) and ``modelBreakdowns``; the list is named ``session`` there.
- Codex alone (``ccusage codex daily|monthly|session --json``): ``costUSD`` for
  ``totalCost``, ``reasoningOutputTokens``, and ``models`` by name in place of the
  breakdowns; a session has ``sessionId``, ``sessionFile``, ``directory``,
  ``lastActivity``.

Gemini CLI's and opencode's own reports have the Claude reports' shape
(``ccusage_json``) without a session's project and activity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cachediag.usage.agents import CODEX, GEMINI
from cachediag.usage.blocks import iso_ms, ms
from cachediag.usage.ccusage_json import (
    PERIOD_KEYS,
    model_breakdowns,
    prompt_cache,
    summed,
    token_fields,
    totals,
)
from cachediag.usage.periods import Bucket, Tokens, models_used

Json = dict[str, Any]
SESSION_MODEL_ORDER = {"claude": "file", "codex": "name", "gemini": "name", "opencode": "time"}
"""How ccusage lists a session's models, by its agent (recorded: opencode's in the
order first used, Gemini CLI's by name, Claude Code's in its files' order)."""


def _line(bucket: Bucket, order: str) -> Json:
    return {
        **token_fields(bucket.tokens),
        "modelsUsed": models_used(bucket, order),
        "modelBreakdowns": model_breakdowns(bucket),
        "promptCache": prompt_cache(bucket.cache),
    }


def all_period_report(report: str, buckets: Sequence[Bucket]) -> Json:
    """``{"daily": [{"period", "agent": "all", "metadata": {"agents"}, ...}], "totals"}``."""
    lines = [
        {
            "period": b.key,
            "agent": "all",
            "metadata": {"agents": sorted(b.agents)},
            **_line(b, "name"),
        }
        for b in buckets
    ]
    return {report: lines, "totals": totals(buckets)}


def all_session_report(buckets: Sequence[Bucket]) -> Json:
    """``{"session": [{"period": <session>, "agent", "metadata"?, ...}], "totals"}``."""
    lines = []
    for b in buckets:
        agent = next(iter(b.agents), "claude")
        line: Json = {"period": b.session, "agent": agent}
        if agent != GEMINI:
            meta: Json = {"lastActivity": iso_ms(ms(b.last_at))}
            if agent == CODEX:
                meta["reasoningOutputTokens"] = b.tokens.reasoning
            line["metadata"] = meta
        lines.append({**line, **_line(b, SESSION_MODEL_ORDER.get(agent, "file"))})
    return {"session": lines, "totals": totals(buckets)}


def agent_session_report(buckets: Sequence[Bucket], agent: str) -> Json:
    """``ccusage gemini|opencode session --json``: ``sessionId`` and the token fields."""
    order = SESSION_MODEL_ORDER.get(agent, "file")
    lines = [{"sessionId": b.session, **_line(b, order)} for b in buckets]
    return {"sessions": lines, "totals": totals(buckets)}


def agent_period_report(report: str, buckets: Sequence[Bucket], agent: str) -> Json:
    """``ccusage gemini|opencode daily|weekly|monthly --json``: the Claude reports'
    lines, models in the agent's own order."""
    key = PERIOD_KEYS[report]
    order = SESSION_MODEL_ORDER.get(agent, "file")
    return {report: [{key: b.key, **_line(b, order)} for b in buckets], "totals": totals(buckets)}


def _codex_tokens(t: Tokens) -> Json:
    return {
        "inputTokens": t.input,
        "cacheCreationTokens": t.cache_creation,
        "cacheReadTokens": t.cache_read,
        "outputTokens": t.output,
        "reasoningOutputTokens": t.reasoning,
        "totalTokens": t.total,
    }


def _codex_line(bucket: Bucket) -> Json:
    models = {
        name: {**_codex_tokens(t), "isFallback": False} for name, t in sorted(bucket.models.items())
    }
    return {
        **_codex_tokens(bucket.tokens),
        "costUSD": bucket.tokens.cost_usd,
        "models": models,
        "promptCache": prompt_cache(bucket.cache),
    }


def _codex_totals(buckets: Sequence[Bucket]) -> Json:
    t, cache = summed(buckets)
    return {**_codex_tokens(t), "costUSD": t.cost_usd, "promptCache": prompt_cache(cache)}


def codex_period_report(report: str, buckets: Sequence[Bucket]) -> Json:
    """``ccusage codex daily|monthly --json``."""
    key = PERIOD_KEYS[report]
    lines = [{key: b.key, **_codex_line(b)} for b in buckets]
    return {report: lines, "totals": _codex_totals(buckets)}


def codex_session_report(buckets: Sequence[Bucket]) -> Json:
    """``ccusage codex session --json``: a session is a rollout, named by its path."""
    lines = []
    for b in buckets:
        directory, _, name = b.session.rpartition("/")
        lines.append(
            {
                "sessionId": b.session,
                "sessionFile": name,
                "directory": directory,
                "lastActivity": iso_ms(ms(b.last_at)),
                **_codex_line(b),
            }
        )
    return {"sessions": lines, "totals": _codex_totals(buckets)}
