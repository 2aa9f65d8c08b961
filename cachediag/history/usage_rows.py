"""Per-request usage rows of Claude Code transcripts, as ccusage counts them, read through
the history index.

A row is one transcript line with ``message.usage`` (input and output token counts that
are numbers) and a ``timestamp`` string: its time, session, model, message and request
ids (the pair ccusage deduplicates on), the four token counts, the line's own
``costUSD`` when it has one, and the 1-hour share of the cache writes. Each line is read
on its own, so a file cut at line boundaries gives, part by part, the rows of the whole
file: the index's rule.

``usage_rows(paths)`` is the seam: the rows of each file, from the index unless
``index=False`` (``--no-index``: every file read again, the same bytes out).
"""

from __future__ import annotations

import math
from collections import namedtuple

from cachediag.history.clock import epoch
from cachediag.history.index import RowCodec, Stats, overlong, rows_by_file
from cachediag.safefiles import open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the status line's warm path milliseconds: not at run time
    from collections.abc import Sequence
    from typing import Any, NamedTuple

    from cachediag.pricing.slots import DayPrices


_FIELDS = [
    *("timestamp", "session_id", "model", "message_id", "request_id", "input_tokens"),
    *("output_tokens", "cache_creation_tokens", "cache_read_tokens", "cost_usd"),
    *("cache_creation_1h_tokens", "priced_usd"),
]

if TYPE_CHECKING:

    class UsageRow(NamedTuple):
        timestamp: str
        session_id: str | None
        model: str | None
        message_id: str | None
        request_id: str | None
        input_tokens: int
        output_tokens: int
        cache_creation_tokens: int
        cache_read_tokens: int
        cost_usd: float | None
        cache_creation_1h_tokens: int = 0
        priced_usd: float | None = None

else:
    # ``collections.namedtuple`` at run time: ``typing.NamedTuple`` would import typing.
    UsageRow = namedtuple("UsageRow", _FIELDS, defaults=(0, None))
    UsageRow.__doc__ = """One usage line. ``cache_creation_1h_tokens``: of the cache
    writes, those at the 1-hour TTL (ccusage prices every write at the 5-minute rate);
    ``priced_usd``: the tokens at the model's list prices of that day, worked out when the
    line is read (reading rows back from the index needs no price data), ``None`` when
    the model has no price."""


def row_cost(row: UsageRow) -> float | None:
    """The line's ``costUSD`` when it has one, else its priced cost; ``None``: not known
    (never $0)."""
    return row.cost_usd if row.cost_usd is not None else row.priced_usd


def dedup_key(row: UsageRow) -> str | None:
    """``message.id:requestId``, ccusage's key for one response written twice (a resumed
    session, a copied file); ``None`` when either is missing."""
    if row.message_id is None or row.request_id is None:
        return None
    return f"{row.message_id}:{row.request_id}"


SCHEMA = "usage-row-3:" + ",".join(UsageRow._fields)
CODEC = RowCodec(SCHEMA, list, lambda values: UsageRow(*values))
KIND = "usage"


def _tokens(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return int(value)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def row_of(obj: Any) -> UsageRow | None:
    """The row of one parsed line, or ``None`` when it is not a usage line."""
    if not isinstance(obj, dict):
        return None
    message = obj.get("message")
    timestamp = obj.get("timestamp")
    if not isinstance(message, dict) or not isinstance(timestamp, str):
        return None
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    given, made = _tokens(usage.get("input_tokens")), _tokens(usage.get("output_tokens"))
    if given is None or made is None:
        return None
    cost = obj.get("costUSD")
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost):
        cost = None
    return UsageRow(
        timestamp,
        _text(obj.get("sessionId")),
        _text(message.get("model")),
        _text(message.get("id")),
        _text(obj.get("requestId")),
        given,
        made,
        _tokens(usage.get("cache_creation_input_tokens")) or 0,
        _tokens(usage.get("cache_read_input_tokens")) or 0,
        None if cost is None else float(cost),
        _one_hour(usage),
    )


def _one_hour(usage: dict[str, Any]) -> int:
    split = usage.get("cache_creation")
    return (_tokens(split.get("ephemeral_1h_input_tokens")) or 0) if isinstance(split, dict) else 0


def parse(path: str, data: bytes, start: int) -> list[UsageRow]:
    """The rows of complete lines ``data`` (from byte ``start`` of ``path``)."""
    try:  # here, not at import: reading rows back from the index needs no parser
        from orjson import loads
    except ImportError:  # pragma: no cover - orjson is a dependency; json the fallback
        from json import loads  # type: ignore[assignment]
    rows = []
    days: dict[tuple[str, int], DayPrices] = {}  # prices looked up once per model and day
    for line in data.split(b"\n"):
        if b'"usage"' not in line or overlong(line):
            continue  # most lines: no parse at all; an overlong one is the index's rule
        try:
            row = row_of(loads(line))
        except ValueError:
            continue
        if row is not None:
            rows.append(
                row if row.cost_usd is not None else row._replace(priced_usd=priced(row, days))
            )
    return rows


def _day_prices(model: str, day: int) -> DayPrices:
    # The status line's one door to price data (it never raises: unknown is no price).
    from cachediag.statusline.prices import day_prices

    return day_prices(model, day)


def priced(row: UsageRow, days: dict[tuple[str, int], DayPrices]) -> float | None:
    """``row``'s tokens at its model's prices at its time (1-hour writes at their rate)."""
    tokens = row.input_tokens + row.cache_creation_tokens + row.cache_read_tokens
    if not tokens and not row.output_tokens:
        return 0.0  # Claude Code's own "<synthetic>" messages: nothing was billed
    at = epoch(row.timestamp)
    if row.model is None or at is None:
        return None
    day = int(at // 86400)
    found = days.get((row.model, day))
    if found is None:
        found = days[(row.model, day)] = _day_prices(row.model, day)
    prices = found.at(at - day * 86400)
    if prices is None:
        return None
    p = prices.tier_for(tokens)
    hour = min(row.cache_creation_1h_tokens, row.cache_creation_tokens)
    return 1e-6 * (
        row.input_tokens * p.input_mtok
        + (row.cache_creation_tokens - hour) * p.cache_write_5m_mtok
        + hour * p.cache_write_1h_mtok
        + row.cache_read_tokens * p.cache_read_mtok
        + row.output_tokens * p.output_mtok
    )


def usage_rows(
    paths: Sequence[str],
    *,
    index: bool = True,
    root: str | None = None,
    stats: Stats | None = None,
    deadline: float | None = None,
    kind: str = KIND,
) -> list[list[UsageRow]]:
    """The usage rows of each of ``paths``, in order; a file that is gone has none.
    ``kind`` names the index (the whole history's by default)."""
    if index:
        return rows_by_file(
            paths, parse, CODEC, kind=kind, root=root, stats=stats, deadline=deadline
        )
    out: list[list[UsageRow]] = []
    for path in paths:
        try:
            with open_regular(path) as fp:  # a FIFO is refused, never waited on
                out.append(parse(path, fp.read(), 0))
        except FileNotFoundError:
            out.append([])
    return out
