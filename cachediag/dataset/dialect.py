"""What the engines and zones change in an audit's SQL: quoting, a zone's name and UTC
offsets, and the SQL of each ``--by`` key (``sql`` builds the queries around them).

DuckDB running the audit itself is handed the zone's offsets over the data
(``zone_offsets``), so local days come from Python's zone rules as over the logs; printed
SQL names the zone and leaves the rules to the engine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from enum import StrEnum

from cachediag.analysis.group_keys import GroupBy
from cachediag.errors import CachediagError
from cachediag.ingest.agents import FORMAT_AGENT


class Dialect(StrEnum):
    DUCKDB = "duckdb"
    SPARK = "spark"


@dataclass(slots=True, frozen=True)
class Window:
    since: float | None = None
    until: float | None = None
    zone: tzinfo = UTC
    """Where days, weeks and months begin."""
    offsets: tuple[tuple[float, float], ...] | None = None
    """The zone's UTC offsets over the data (``zone_offsets``), for DuckDB running the
    audit: local times are then made from Python's zone rules, as over the logs, so any
    zone ``--timezone`` takes works (``posix/...``, ``localtime``) and gives the same
    days; ``None``: the engine's own zone of that name (printed SQL)."""


_MAX_STEPS = 1_000_000


def zone_offsets(zone: tzinfo, start: float, end: float) -> tuple[tuple[float, float], ...]:
    """``(from_s, offset_s)`` of each stretch of ``[start, end]`` over which ``zone``
    keeps one UTC offset (the first stretch from ``start``): the offset is looked at
    hour by hour (no zone has changed twice within one), each change found to the
    second by bisection."""

    def offset(at: float) -> float:
        delta = datetime.fromtimestamp(at, zone).utcoffset()
        return 0.0 if delta is None else delta.total_seconds()

    start, end = math.floor(start), math.ceil(end)
    step = max(3600, (end - start) // _MAX_STEPS + 1)
    found = [(float(start), offset(start))]
    at = start
    while at < end:
        nxt = min(at + step, end)
        now = offset(nxt)
        if now != found[-1][1]:
            lo, hi = at, nxt  # offset(lo) is the last one, offset(hi) the new one
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if offset(mid) == now:
                    hi = mid
                else:
                    lo = mid
            found.append((float(hi), now))
        at = nxt
    return tuple(found)


def _local_seconds(offsets: tuple[tuple[float, float], ...], at: str) -> str:
    """SQL of ``at`` (epoch seconds) plus the UTC offset in force then."""
    if len(offsets) == 1:
        return f"({at} + {offsets[0][1]!r})"
    cases = " ".join(
        f"WHEN {at} < {start!r} THEN {off!r}"
        for (start, _), (_, off) in zip(offsets[1:], offsets, strict=False)
    )
    return f"({at} + CASE {cases} ELSE {offsets[-1][1]!r} END)"


_STRING = {Dialect.DUCKDB: "VARCHAR", Dialect.SPARK: "STRING"}


def quoter(d: Dialect) -> Callable[[str], str]:
    if d is Dialect.SPARK:
        return lambda name: f"`{name}`"
    return lambda name: f'"{name}"'


def zone_name(zone: tzinfo) -> str:
    """The IANA name of ``zone`` (what SQL engines take), or a clear error."""
    if zone is UTC or getattr(zone, "key", None) in ("UTC", "Etc/UTC"):
        return "UTC"
    name = getattr(zone, "key", None)
    if isinstance(name, str) and name.startswith("posix/"):
        name = name.removeprefix("posix/")  # the same rules, under the name engines know
    if not isinstance(name, str) or name == "localtime":
        raise CachediagError(
            "this machine's time zone has no name a query engine knows: pass --timezone "
            "with a name such as Europe/Paris or UTC"
        )
    return name


def agent_sql(d: Dialect) -> str:
    """The SQL of a row's agent, from its ``source_format`` by the table ``agent_of``
    reads: every row of every dataset holds its format, where the ``agent`` column is
    only in files written since it was added. Reading that column would need every
    file's footer read first to tell old files from new (``union_by_name``: 15 s over
    3,000 files), and Spark without ``mergeSchema`` would not see it at all."""
    q = quoter(d)
    cases = " ".join(f"WHEN '{fmt}' THEN '{agent}'" for fmt, agent in sorted(FORMAT_AGENT.items()))
    return f"CASE {q('source_format')} {cases} ELSE 'claude' END"


_PATTERN = {GroupBy.DAY: "%Y-%m-%d", GroupBy.WEEK: "%G-W%V", GroupBy.MONTH: "%Y-%m"}


def _calendar(by: GroupBy, d: Dialect, zone: str) -> str:
    q = quoter(d)
    if d is Dialect.DUCKDB:
        return f"strftime(timezone('{zone}', {q('at')}), '{_PATTERN[by]}')"
    # Spark formats a timestamp in its session time zone, which ``audit_sql`` says to set.
    local = q("at")
    if by is GroupBy.DAY:
        return f"date_format({local}, 'yyyy-MM-dd')"
    if by is GroupBy.MONTH:
        return f"date_format({local}, 'yyyy-MM')"
    # The ISO week's year is the year of its Thursday (Spark has no pattern for it).
    day = f"to_date({local})"
    thursday = f"date_add({day}, 3 - ((dayofweek({day}) + 5) % 7))"
    return (
        f"concat(CAST(year({thursday}) AS STRING), '-W', "
        f"lpad(CAST(weekofyear({day}) AS STRING), 2, '0'))"
    )


def group_key(
    by: GroupBy,
    d: Dialect,
    zone: tzinfo = UTC,
    offsets: tuple[tuple[float, float], ...] | None = None,
) -> str:
    """The SQL of one ``--by`` key, with the transcript audit's names for missing values
    (``offsets``: see ``Window``)."""
    q, s = quoter(d), _STRING[d]
    keys = {
        GroupBy.SESSION: q("session_id"),
        GroupBy.PROJECT: f"COALESCE({q('project')}, '(none)')",
        GroupBy.MODEL: f"COALESCE({q('model')}, '(no model)')",
        GroupBy.CAUSE: q("cause_key"),
        GroupBy.GAP: q("gap_key"),
        GroupBy.STREAM_KIND: q("stream_kind"),
        GroupBy.AGENT: agent_sql(d),
        GroupBy.HOST: f"CAST({q('host')} AS {s})",
        GroupBy.USER: f"COALESCE({q('user')}, '(none)')",
    }
    if by in keys:
        return keys[by]
    if by in (GroupBy.DAY, GroupBy.WEEK, GroupBy.MONTH):
        if offsets is not None and d is Dialect.DUCKDB:
            local = _local_seconds(offsets, q("at_s"))
            micros = f"CAST(round({local} * 1000000) AS BIGINT)"
            return f"strftime(make_timestamp({micros}), '{_PATTERN[by]}')"
        name = zone_name(zone)
        if by is GroupBy.DAY and name == "UTC":
            # The partition itself; its value comes back typed (a date): the key is text.
            return f"CAST({q('day')} AS {s})"
        return _calendar(by, d, name)
    raise CachediagError(f"--by {by.value} is not available on a dataset")
