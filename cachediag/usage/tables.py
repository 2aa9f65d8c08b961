"""The usage reports for people: one table each, fitted to the width (``report.layout``).

Columns of lesser use give way first (cache reads and writes, then models), and token
counts shorten to ``12.4M`` before any column goes: an 80-column terminal shows the
line's key, tokens, cost and the cache's hit ratio, misses, re-cache cost and cause.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, tzinfo
from typing import Protocol

from rich.console import RenderableType
from rich.text import Text

from cachediag.ingest.agents import AGENTS
from cachediag.report.layout import Column, compact_count, fitted_table, path_variants, short_id
from cachediag.usage.agents import NAMES
from cachediag.usage.blocks import Block, burn_rate, limit_status, projection
from cachediag.usage.periods import Bucket, CacheTally, Tokens


class TableOptions(Protocol):
    """What the tables read of a report's options (``commands.usage.UsageOptions``)."""

    @property
    def report(self) -> str: ...
    @property
    def width(self) -> int: ...
    @property
    def breakdown(self) -> bool: ...
    @property
    def active(self) -> bool: ...
    def display_zone(self) -> tzinfo: ...


TITLES = {"daily": "Date", "weekly": "Week", "monthly": "Month"}
_ORDER = list(AGENTS)


def usd(value: float) -> str:
    return f"${value:,.2f}"


def _count(values: Sequence[int]) -> list[list[str]]:
    return [[f"{v:,}" for v in values], [compact_count(v) for v in values]]


def _ratio(c: CacheTally) -> str:
    r = c.hit_ratio
    return "—" if r is None else f"{r:.0%}"


def _cause(c: CacheTally) -> str:
    top = c.costliest_cause()
    return "" if top is None else top[0]


def _models(b: Bucket) -> str:
    return ", ".join(_short_model(m) for m in b.models)


def _short_model(name: str) -> str:
    """``opus-4-6`` for ``claude-opus-4-6``: the family and version tell them apart."""
    name = name.removeprefix("claude-")
    head, _, tail = name.rpartition("-")
    return head if tail.isdigit() and len(tail) == 8 else name


def columns(
    first: list[Column],
    tokens: list[Tokens],
    caches: list[CacheTally],
    models: list[str],
    unpriced: list[int],
    agents: list[str] | None = None,
) -> list[Column]:
    """The columns every report shares, after its own first ones; ``agents``: each row's
    agents, for a table of several."""
    costs = [usd(t.cost_usd) + ("*" if n else "") for t, n in zip(tokens, unpriced, strict=True)]
    who = [] if agents is None else [Column("Agent", [agents], wraps=True, keep=60)]
    return [
        *first,
        *who,
        Column("Models", [models], wraps=True, keep=20),
        Column("Input", _count([t.input for t in tokens]), justify="right", keep=40),
        Column("Output", _count([t.output for t in tokens]), justify="right", keep=45),
        Column(
            "Cache write",
            _count([t.cache_creation for t in tokens]),
            justify="right",
            keep=30,
            short_header="Write",
        ),
        Column(
            "Cache read",
            _count([t.cache_read for t in tokens]),
            justify="right",
            keep=35,
            short_header="Read",
        ),
        Column("Total", _count([t.total for t in tokens]), justify="right", keep=90),
        Column("Cost", [costs], justify="right", keep=100),
        Column("Hit", [[_ratio(c) for c in caches]], justify="right", keep=80),
        Column(
            "Misses",
            [[str(c.misses) for c in caches]],
            justify="right",
            keep=70,
            short_header="Miss",
        ),
        Column("Re-cache", [[usd(c.recache_usd) for c in caches]], justify="right", keep=75),
        Column("Top cause", [[_cause(c) for c in caches]], wraps=True, keep=50),
    ]


KeyCells = tuple[str, ...]
"""A row's own first cells (a date; a session, its project and last activity)."""


def _lines(
    options: TableOptions,
    buckets: Sequence[Bucket],
    keys: Sequence[KeyCells],
    heads: Sequence[str],
    title: str,
) -> list[RenderableType]:
    """Rows with, under ``--breakdown``, one row per model beneath each."""
    tokens: list[Tokens] = []
    caches: list[CacheTally] = []
    cells: list[KeyCells] = []
    models: list[str] = []
    unpriced: list[int] = []
    styles: list[str | None] = []
    agents: list[str] = []
    blank = ("",) * (len(heads) - 1)

    def add(key: KeyCells, t: Tokens, c: CacheTally, m: str, style: str | None, a: str) -> None:
        cells.append(key)
        tokens.append(t)
        caches.append(c)
        models.append(m)
        unpriced.append(t.unpriced)
        styles.append(style)
        agents.append(a)

    total, cache = Tokens(), CacheTally()
    for key, b in zip(keys, buckets, strict=True):
        add(key, b.tokens, b.cache, _models(b), None, ", ".join(agent_order(b.agents)))
        _sum(total, cache, b)
        if options.breakdown:
            for model, t in b.models.items():
                c = b.model_cache.get(model, CacheTally())
                add(("  └ " + _short_model(model), *blank), t, c, "", "dim", "")
    add(("Total", *blank), total, cache, "", "bold", "")
    first = [
        Column(heads[0], [[c[0] for c in cells]], keep=100),
        *(
            Column(head, path_variants([c[i] for c in cells]), keep=60 - i)
            for i, head in enumerate(heads[1:], start=1)
        ),
    ]
    several = len(agents_of(buckets)) > 1
    cols = columns(first, tokens, caches, models, unpriced, agents if several else None)
    out: list[RenderableType] = [fitted_table(cols, options.width, title=title, row_styles=styles)]
    if total.unpriced:
        out.append(Text(f"* {total.unpriced} request(s) of a model without a price: not in Cost"))
    return out


def _sum(total: Tokens, cache: CacheTally, b: Bucket) -> None:
    total.merge(b.tokens)
    cache.merge(b.cache)


def agent_order(agents: Iterable[str]) -> list[str]:
    """Agents in the order of ``ingest.agents.AGENTS`` (Claude Code first)."""
    return sorted(agents, key=lambda a: (_ORDER.index(a) if a in _ORDER else len(_ORDER), a))


def agents_of(buckets: Iterable[Bucket]) -> list[str]:
    return agent_order({a for b in buckets for a in b.agents})


def whose(buckets: Sequence[Bucket]) -> str | None:
    """The one agent of a table's rows (Claude Code for none); ``None`` for several."""
    found = agents_of(buckets)
    if len(found) > 1:
        return None
    return NAMES.get(found[0], found[0]) if found else NAMES["claude"]


def _title(buckets: Sequence[Bucket], what: str) -> str:
    subject = whose(buckets)
    return f"{subject} usage{what}" if subject else f"Every agent's usage{what}"


def period_tables(
    options: TableOptions, lines: Sequence[Bucket], project: str | None
) -> list[RenderableType]:
    header = TITLES[options.report]
    title = _title(lines, f", {options.report}") + (f" · {project}" if project else "")
    if not lines:
        return [Text(f"No usage found{' for ' + project if project else ''}.")]
    return _lines(options, lines, [(b.key,) for b in lines], [header], title)


def session_tables(options: TableOptions, lines: Sequence[Bucket]) -> list[RenderableType]:
    if not lines:
        return [Text("No sessions found.")]
    zone = options.display_zone()
    keys = [(short_id(_session(b), 9), b.project, _day(b.last_at, zone)) for b in lines]
    heads = ["Session", "Project", "Last"]
    return _lines(options, lines, keys, heads, _title(lines, " by session"))


def _session(b: Bucket) -> str:
    """Claude Code's session by its file's name (ccusage's), another agent's by its own
    id (a Codex rollout's name starts with its date: its thread id tells them apart)."""
    return b.session if "claude" in b.agents else b.session_id


def _day(at: float, zone: tzinfo) -> str:
    return datetime.fromtimestamp(at, zone).strftime("%m-%d %H:%M")


def block_tables(
    options: TableOptions, blocks: Sequence[Block], now: float, limit: int | None
) -> list[RenderableType]:
    if not blocks:
        return [Text("No active block." if options.active else "No usage blocks found.")]
    zone = options.display_zone()
    shown = [b for b in blocks if not b.is_gap]
    keys = [(_block_key(b, zone),) for b in shown]
    buckets = [b.bucket for b in shown]
    subject = whose(buckets)
    title = "5-hour blocks" + {NAMES["claude"]: "", None: ", every agent"}.get(
        subject, f" · {subject}"
    )
    out = _lines(options, buckets, keys, ["Block start"], title)
    for b in shown:
        if b.is_active:
            out.extend(_active_lines(b, now, limit))
    return out


def _block_key(b: Block, zone: tzinfo) -> str:
    start = datetime.fromtimestamp(b.start_ms / 1000, UTC).astimezone(zone)
    mark = " ACTIVE" if b.is_active else ""
    return f"{start:%Y-%m-%d %H:%M}{mark}"


def _active_lines(b: Block, now: float, limit: int | None) -> list[RenderableType]:
    lines: list[RenderableType] = []
    rate = burn_rate(b)
    if rate is not None:
        lines.append(
            Text(
                f"Burn rate: {rate.tokens_per_minute:,.0f} tokens/min · "
                f"{usd(rate.cost_per_hour)}/hour"
            )
        )
    proj = projection(b, now)
    if proj is not None:
        left = proj.remaining_minutes
        lines.append(
            Text(
                f"Projected by the block's end ({left // 60}h {left % 60:02d}m left): "
                f"{proj.total_tokens:,} tokens · {usd(proj.total_cost_usd)}"
            )
        )
    status = limit_status(limit, proj)
    if limit is not None:
        used = b.bucket.tokens.total / limit * 100
        text = f"Token limit {limit:,}: {used:.1f}% used"
        if status is not None:
            text += f", {status.percent_used:.1f}% projected ({status.status})"
        style = "bold red" if status is not None and status.status == "exceeds" else ""
        if used > 100:
            text += " — past the limit"
            style = "bold red"
        lines.append(Text(text, style=style))
    return lines
