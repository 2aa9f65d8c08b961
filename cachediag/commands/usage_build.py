"""From rows to one usage report: grouping, window, order, then JSON or tables."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from cachediag.commands.usage import UsageOptions
from cachediag.errors import UsageError
from cachediag.usage import agents_json as aj
from cachediag.usage import ccusage_json as cj
from cachediag.usage.agents import CLAUDE, CODEX, GEMINI, OPENCODE
from cachediag.usage.blocks import (
    Block,
    identify_blocks,
    recent_blocks,
    token_limit,
)
from cachediag.usage.periods import (
    WEEKDAYS,
    Bucket,
    KeyFn,
    day_key,
    group_rows,
    local_date,
    month_key,
    session_key,
    week_key,
)
from cachediag.usage.rows import RequestRow

if TYPE_CHECKING:
    from rich.console import RenderableType


ALL = "all"
AGENT_REPORTS = {
    CODEX: ("daily", "monthly", "session"),
    GEMINI: ("daily", "monthly", "session"),
    OPENCODE: ("daily", "weekly", "monthly", "session"),
}
"""The reports ccusage 20.0.24 has for one agent alone (``ccusage <agent> <report>``);
another report of one agent takes the all-agents shape, as ccusage has no other."""


def json_shape(rows: Sequence[RequestRow], options: UsageOptions) -> str:
    """Whose JSON a report prints: ``claude`` (``ccusage claude <report>``, as always),
    ``all`` (``ccusage <report>``, every agent) or one other agent's own report.

    ``--agent claude``, and by default a history whose every row is Claude Code's, keep
    the Claude shape; ``--agent all``, or by default rows of any other agent, take the
    all-agents one; one other agent named, its own report where ccusage has one."""
    agent = options.agent
    if agent == CLAUDE:
        return CLAUDE
    if agent is None:
        return CLAUDE if all(r.agent == CLAUDE for r in rows) else ALL
    if options.report in AGENT_REPORTS.get(agent, ()):
        return agent
    return ALL


def build_report(rows: list[RequestRow], options: UsageOptions) -> str | list[RenderableType]:
    if options.report == "blocks":
        return _blocks(rows, options)
    if options.report == "session":
        return _sessions(rows, options)
    return _periods(rows, options)


def week_start(options: UsageOptions, shape: str) -> str:
    """The day weeks start on: ``--start-of-week``, else ccusage's for the shape (Sunday
    for Claude Code's weekly, Monday for the one across agents and opencode's)."""
    start = options.start_of_week or ("sunday" if shape == CLAUDE else "monday")
    if start not in WEEKDAYS:
        raise UsageError(f"--start-of-week: one of {', '.join(WEEKDAYS)}")
    return start


def period_key(options: UsageOptions, shape: str = CLAUDE) -> KeyFn:
    zone = options.display_zone()
    if options.report == "daily":
        return day_key(zone)
    if options.report == "weekly":
        return week_key(zone, week_start(options, shape))
    return month_key(zone)


def ordered(buckets: dict[str, Bucket], order: str) -> list[Bucket]:
    """Lines by their key (a date, week or month sorts as text), newest last for ``asc``."""
    lines = [buckets[k] for k in sorted(buckets)]
    return lines[::-1] if order == "desc" else lines


def _periods(rows: list[RequestRow], options: UsageOptions) -> str | list[RenderableType]:
    window = options.window()
    kept = [r for r in rows if window.holds(r.at)]
    if options.instances:
        key = period_key(options)
        per = {
            name: ordered(_last(group_rows(mine, key), options, CLAUDE), options.order)
            for name, mine in sorted(_split(kept).items())
        }
        if options.json:
            return cj.dumps(cj.instances_report(options.report, per))
        from cachediag.usage.tables import period_tables

        return [t for name, lines in per.items() for t in period_tables(options, lines, name)]
    shape = json_shape(rows, options)
    key = period_key(options, shape)
    lines = ordered(_last(group_rows(kept, key), options, shape), options.order)
    if options.json:
        return cj.dumps(_period_json(options, lines, shape))
    from cachediag.usage.tables import period_tables

    return period_tables(options, lines, None)


def _period_json(options: UsageOptions, lines: list[Bucket], shape: str) -> cj.Json:
    if shape == CLAUDE:
        return cj.period_report(options.report, lines, options.project)
    if shape == ALL:
        return aj.all_period_report(options.report, lines)
    if shape == CODEX:
        return aj.codex_period_report(options.report, lines)
    return aj.agent_period_report(options.report, lines, shape)


def _last(buckets: dict[str, Bucket], options: UsageOptions, shape: str) -> dict[str, Bucket]:
    """``--last N``: the periods from N-1 before the current one (1: today, this week,
    this month) in --timezone, by the clock (``--now``)."""
    if options.last is None:
        return buckets
    if options.last < 1:
        raise UsageError("--last: a number of periods, 1 or more")
    today = local_date(options.clock(), options.display_zone())
    n = options.last - 1
    if options.report == "daily":
        first = (today - timedelta(days=n)).isoformat()
    elif options.report == "weekly":
        start = WEEKDAYS.index(week_start(options, shape))
        week = today - timedelta(days=(today.weekday() - start) % 7)
        first = (week - timedelta(weeks=n)).isoformat()
    else:
        months = today.year * 12 + today.month - 1 - n
        first = f"{months // 12:04d}-{months % 12 + 1:02d}"
    return {k: b for k, b in buckets.items() if k >= first}


def _split(rows: Sequence[RequestRow]) -> dict[str, list[RequestRow]]:
    out: dict[str, list[RequestRow]] = {}
    for r in rows:
        out.setdefault(r.project, []).append(r)
    return out


def _sessions(rows: list[RequestRow], options: UsageOptions) -> str | list[RenderableType]:
    window = options.window()
    if options.session_id is not None and options.json:
        return cj.dumps_any(cj.session_detail(rows))
    buckets = group_rows(rows, session_key)
    # ccusage keeps a session by the day of its last activity, and lists the costliest
    # first whatever --order says.
    lines = [b for b in buckets.values() if window.holds(b.last_at)]
    lines.sort(key=lambda b: (-b.tokens.cost_usd, b.last_at, b.key))
    if options.json:
        shape = json_shape(rows, options)
        if shape == CLAUDE:
            return cj.dumps(cj.session_report(lines))
        if shape == ALL:
            return cj.dumps(aj.all_session_report(lines))
        if shape == CODEX:
            return cj.dumps(aj.codex_session_report(lines))
        return cj.dumps(aj.agent_session_report(lines, shape))
    from cachediag.usage.tables import session_tables

    return session_tables(options, lines)


def _blocks(rows: list[RequestRow], options: UsageOptions) -> str | list[RenderableType]:
    if options.session_hours <= 0:
        raise UsageError("--session-length: a number of hours above 0")
    now = options.clock()
    if options.agent is None:
        # ccusage's blocks are Claude Code's alone: the 5-hour window is Anthropic's
        # plan limit, which no other agent's requests count against.
        rows = [r for r in rows if r.agent == CLAUDE]
    every = identify_blocks(rows, now, options.session_hours)
    try:
        limit = token_limit(options.token_limit, every)
    except ValueError:
        raise UsageError(
            f"--token-limit: a number of tokens or 'max', not {options.token_limit!r}"
        ) from None
    blocks = _window_blocks(every, options)
    if options.recent:
        blocks = recent_blocks(blocks, now)
    if options.active:
        blocks = [b for b in blocks if b.is_active]
    if options.order == "desc":
        blocks = blocks[::-1]
    if options.json:
        return cj.dumps(cj.blocks_report(blocks, now, limit))
    from cachediag.usage.tables import block_tables

    return block_tables(options, blocks, now, limit)


def _window_blocks(blocks: list[Block], options: UsageOptions) -> list[Block]:
    """Blocks whose start falls on a day within --since/--until (ccusage's filter)."""
    if options.since is None and options.until is None:
        return blocks
    window = options.window()
    return [b for b in blocks if window.holds(b.start_ms / 1000)]
