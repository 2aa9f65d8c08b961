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
from cachediag.history.index import MAX_LINE_BYTES, RowCodec, Stats, rows_by_file
from cachediag.ingest.native import PICKER as _pick
from cachediag.ingest.native import SCANNER
from cachediag.ingest.needles import py_wanted_lines
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


def parse(path: str, data: bytes | bytearray, start: int, end: int | None = None) -> list[UsageRow]:
    """The rows of complete lines ``data[:end]`` (all of ``data`` by default), the first
    at byte ``start`` of ``path``.

    Only the lines holding ``"usage"`` are looked at (found by the ingest scanner, not
    a split into every line), and each through the line picker of the transcript reader
    rather than a whole parse; a line the picker leaves, or one whose row it cannot
    tell alone, is parsed whole, so the rows are those of ``row_of(loads(line))``."""
    return parse_counted(path, data, start, len(data) if end is None else end)[0]


def parse_counted(
    path: str, data: bytes | bytearray, start: int, end: int
) -> tuple[list[UsageRow], int]:
    """``parse``'s rows of ``data[:end]`` and how many newlines that range holds, both
    from one pass of the scanner: the index's reader hands its own reused buffer and
    counts lines without a pass of its own."""
    rows = []
    days: dict[tuple[str, int], DayPrices] = {}  # prices looked up once per model and day
    spans, newlines = _usage_lines(data, end)
    with memoryview(data) as view:  # each line copied alone: the picker takes bytes only
        for first, stop in spans:
            if stop - first > MAX_LINE_BYTES:
                continue  # the index's rule
            line = bytes(view[first:stop])
            row = _picked_row(line, days)
            if row is _WHOLE:
                row = _parsed_row(line)
                if row is not None and row.cost_usd is None:
                    row = UsageRow._make((*row[:11], priced(row, days)))
            if row is not None:
                rows.append(row)
    return rows, newlines


def _usage_lines(data: bytes | bytearray, end: int) -> tuple[list[tuple[int, int]], int]:
    """Where each line of ``data[:end]`` holding ``"usage"`` starts and stops (its
    newline left out), and how many newlines the range holds."""
    if _SCANNER is None:
        stops = [(a, data.find(b"\n", a, end)) for a in py_wanted_lines(data, end, _NEEDLES)]
        return [(a, end if b < 0 else b) for a, b in stops], data.count(b"\n", 0, end)
    taken, newlines = _SCANNER(data, 0, end, _NEEDLES)
    spans = []
    for _, first, stop in taken:
        if data[stop - 1] == _NL:
            stop -= 1
        # The scanner also gives lines that are not ``{...}`` (for the transcript
        # reader's bad-line count): one of those is kept only if it holds the needle.
        if (data[first] != _OPEN or data[stop - 1] != _CLOSE) and data.find(
            _NEEDLES[0], first, stop
        ) < 0:
            continue
        spans.append((first, stop))
    return spans, newlines


_HOURS: dict[str, float | None] = {}
"""``clock.epoch`` of the start of each hour seen (``2026-01-01T00:``), by that text."""


def epoch_of(stamp: str) -> float | None:
    """``clock.epoch(stamp)``, with the hour's start looked up once for Claude Code's own
    form (``2026-01-01T00:05:00.210Z``): parsing each time by hand is most of the cost of
    a row. The hour's text is checked by ``clock.epoch`` itself; what it takes from the
    rest (the minute and second as ``int`` reads them, digits it skips, the ``Z``) is
    checked here the same way, anything else goes to ``clock.epoch`` whole."""
    if (
        len(stamp) != 24
        or stamp[19] != "."
        or stamp[23] != "Z"
        or stamp[0].isspace()
        or not (stamp[20:23].isascii() and stamp[20:23].isdigit())
        or not stamp[14:16].isdecimal()
        or not stamp[17:19].isdecimal()
    ):
        return epoch(stamp)
    hour = stamp[:14]
    if hour in _HOURS:
        base = _HOURS[hour]
    else:
        base = _HOURS[hour] = epoch(hour + "00:00Z")
    minute, second = int(stamp[14:16]), int(stamp[17:19])
    if base is None or minute >= 60 or second >= 61:
        return None
    return base + minute * 60 + second


_NEEDLES = (b'"usage"',)
_SCANNER = None if SCANNER is None else SCANNER[0]
_NL, _OPEN, _CLOSE = 10, 123, 125  # b"\n", b"{", b"}"
_WHOLE: Any = object()
"""``_picked_row``'s answer for a line that must be parsed whole."""


def _picked_row(line: bytes, days: dict[tuple[str, int], DayPrices]) -> Any:
    """``row_of`` of the line from the picker's fields, priced, ``None`` when it is no
    usage line, or ``_WHOLE`` when the picker cannot tell: it declined the line, the line
    has a ``costUSD`` (not a picked field; a key written with an escape makes it
    decline), or a ``sessionId`` the picker gives as ``None`` (an empty one is kept as
    ``""``)."""
    fields = _pick(line) if _pick is not None else None
    if fields is None or b'"costUSD"' in line:
        return _WHOLE
    message, timestamp = fields[13], fields[5]
    if message is None or not isinstance(timestamp, str) or message[2] is None:
        return None
    session = fields[12]
    if session is None and b'"sessionId"' in line:
        return _WHOLE
    given, read, written, made, split = message[2]
    # A plain count (nearly every one) is its own row value: ``_tokens`` only for others.
    given = given if type(given) is int and given >= 0 else _tokens(given)
    made = made if type(made) is int and made >= 0 else _tokens(made)
    if given is None or made is None:
        return None
    if not (type(read) is int and read >= 0):
        read = _tokens(read) or 0
    if not (type(written) is int and written >= 0):
        written = _tokens(written) or 0
    hour = 0
    if split is not None:
        hour = split[1] if type(split[1]) is int and split[1] >= 0 else (_tokens(split[1]) or 0)
    model = message[0]
    # The picker's epoch of Claude Code's own form counts the milliseconds, which
    # ``epoch_of`` (as ``clock.epoch``) leaves out; any other form it gives as None.
    at = fields[6]
    at = epoch_of(timestamp) if at is None else at // 1.0
    # The row is built once, with its price: not built, then rebuilt priced.
    cost = _priced(at, model, given, made, written, read, hour, days)
    return UsageRow(
        timestamp,
        session,
        model,
        message[1],
        fields[7],
        given,
        made,
        written,
        read,
        None,
        hour,
        cost,
    )


def _parsed_row(line: bytes) -> UsageRow | None:
    try:  # here, not at import: reading rows back from the index needs no parser
        from orjson import loads
    except ImportError:  # pragma: no cover - orjson is a dependency; json the fallback
        from json import loads  # type: ignore[assignment]
    try:
        return row_of(loads(line))
    except ValueError:
        return None


def _day_prices(model: str, day: int) -> DayPrices:
    # The status line's one door to price data (it never raises: unknown is no price).
    from cachediag.statusline.prices import day_prices

    return day_prices(model, day)


def priced(row: UsageRow, days: dict[tuple[str, int], DayPrices]) -> float | None:
    """``row``'s tokens at its model's prices at its time (1-hour writes at their rate)."""
    return _priced(
        epoch_of(row.timestamp),
        row.model,
        row.input_tokens,
        row.output_tokens,
        row.cache_creation_tokens,
        row.cache_read_tokens,
        row.cache_creation_1h_tokens,
        days,
    )


def _priced(
    at: float | None,
    model: str | None,
    given: int,
    made: int,
    written: int,
    read: int,
    hour: int,
    days: dict[tuple[str, int], DayPrices],
) -> float | None:
    tokens = given + written + read
    if not tokens and not made:
        return 0.0  # Claude Code's own "<synthetic>" messages: nothing was billed
    if model is None or at is None:
        return None
    day = int(at // 86400)
    found = days.get((model, day))
    if found is None:
        found = days[(model, day)] = _day_prices(model, day)
    prices = found.at(at - day * 86400)
    if prices is None:
        return None
    p = prices.tier_for(tokens)
    hour = min(hour, written)
    return 1e-6 * (
        given * p.input_mtok
        + (written - hour) * p.cache_write_5m_mtok
        + hour * p.cache_write_1h_mtok
        + read * p.cache_read_mtok
        + made * p.output_mtok
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
            paths, parse_counted, CODEC, kind=kind, root=root, stats=stats, deadline=deadline
        )
    out: list[list[UsageRow]] = []
    for path in paths:
        try:
            with open_regular(path) as fp:  # a FIFO is refused, never waited on
                out.append(parse(path, fp.read(), 0))
        except FileNotFoundError:
            out.append([])
    return out
