"""An audit as SQL over the dataset: the text of every query, for DuckDB and for Spark.

Every figure ``cachediag audit`` shows is a sum over requests, so an audit is one pass
over a table (or view) named ``requests`` holding the dataset: the requests are summed
once per session and group key into ``audit_parts`` (a few rows per session), and every
other query reads only that, except the top misses, which need the requests themselves.
The result columns are named like the fields of the JSON report (``key``, ``requests``,
..., ``cost_usd``). ``audit_sql`` prints the queries for Spark, Trino or BigQuery; the
``query`` module hands the same text to DuckDB over the Parquet files, with one
difference: there the parts are also kept per file, so that the top misses are read
from the few files that hold them (``by_file``), not from every file a second time.
What differs by engine and zone (quoting, the SQL of a ``--by`` key) is in ``dialect``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

from cachediag.analysis.group_keys import GAP_BUCKETS, GroupBy
from cachediag.analysis.totals import Totals
from cachediag.analysis.whatif import Policy
from cachediag.dataset.dialect import Dialect, Window, agent_sql, group_key, quoter, zone_name
from cachediag.dataset.schema import POLICIES

TABLE = "requests"
PARTS = "audit_parts"
TOTALS = tuple(f.name for f in fields(Totals))
"""The sums of a group row: the fields of ``Totals``, in its order (``Totals(*row)``)."""
WHATIF = (
    *(f"whatif_{p}_{part}" for p in POLICIES for part in ("cost_usd", "misses", "unpriced")),
    "whatif_keep_alive_requests",
)
"""The per-request what-if columns, summed per session as they are stored."""
SESSION_KEYS = ("session_id", "project", "source")
FORMAT = "source_format"
"""A session's format, which names its agent: one per session (a file is of one
format), so kept beside the keys as an aggregate, not hashed as one more key."""
FILE = "filename"
"""The file a row was read from (DuckDB's ``read_parquet(..., filename = true)``)."""
_DOLLARS = frozenset(n for n in (*TOTALS, *WHATIF) if n.endswith("_usd"))


def _request_sums(d: Dialect) -> list[str]:
    """Each sum of ``TOTALS`` and ``WHATIF`` over requests (the pass into the parts)."""
    q = quoter(d)
    outcome, cost = q("outcome"), q("cost_usd")

    def total(value: str) -> str:
        return f"COALESCE(SUM({value}), 0)"

    def count(condition: str) -> str:
        return total(f"CASE WHEN {condition} THEN 1 ELSE 0 END")

    sums = {
        "requests": "COUNT(*)",
        **{n: total(q(n)) for n in TOTALS[1:6]},
        "unpriced_requests": count(f"{cost} IS NULL"),
        "misses": count(f"{outcome} = 'miss'"),
        "expected_rebuilds": count(f"{outcome} = 'expected'"),
        "reprocessed_tokens": total(
            f"CASE WHEN {outcome} IN ('miss', 'expected') THEN {q('reprocessed_tokens')} ELSE 0 END"
        ),
        "miss_cost_usd": total(f"CASE WHEN {outcome} = 'miss' THEN {q('miss_cost_usd')} END"),
        "rebuild_cost_usd": total(
            f"CASE WHEN {outcome} = 'expected' THEN {q('miss_cost_usd')} END"
        ),
        **{n: total(q(n)) for n in WHATIF},
    }
    return [f"{_typed(name, sql)} AS {q(name)}" for name, sql in sums.items()]


def _typed(name: str, sql: str) -> str:
    """Counts as BIGINT: DuckDB sums integers into 128 bits, slow to hand to Python."""
    return sql if name in _DOLLARS or sql == "COUNT(*)" else f"CAST({sql} AS BIGINT)"


def _part_sums(names: tuple[str, ...], d: Dialect) -> list[str]:
    q = quoter(d)
    return [f"{_typed(n, f'COALESCE(SUM({q(n)}), 0)')} AS {q(n)}" for n in names]


def _where(w: Window, d: Dialect, *more: str) -> str:
    q = quoter(d)
    parts = list(more)
    if w.since is not None:
        parts.append(f"{q('at_s')} >= {w.since!r}")
    if w.until is not None:
        parts.append(f"{q('at_s')} < {w.until!r}")
    return f"\nWHERE {' AND '.join(parts)}" if parts else ""


def parts_sql(by: GroupBy, w: Window, d: Dialect, *, by_file: bool = False) -> list[str]:
    """The one pass over the requests: their sums per session, price source and group
    key, kept as ``audit_parts`` (a temporary table in DuckDB, a cached view in Spark).

    ``by_file`` (DuckDB, running the audit itself over a view with a ``filename``
    column): the parts are kept per file too, with the cost of each part's dearest miss
    (``top_miss_cost``), so that the top misses read only the files that hold one
    (``candidate_files_sql``) instead of passing over every file a second time."""
    q = quoter(d)
    keys = [*map(q, SESSION_KEYS), q("pricing_source"), *([q(FILE)] if by_file else [])]
    key = group_key(by, d, w.zone, w.offsets)
    dearest = (
        [f"MAX(CASE WHEN {_is_miss(q)} THEN {_miss_rank(q)} END) AS {q('top_miss_cost')}"]
        if by_file
        else []
    )
    cols = [
        *keys,
        f"{key} AS {q('key')}",
        f"MIN({q(FORMAT)}) AS {q(FORMAT)}",
        f"MIN({q('at_s')}) AS {q('first_at')}",
        f"MAX({q('at_s')}) AS {q('last_at')}",
        f"MAX({q('session_skipped_lines')}) AS {q('skipped_lines')}",
        *_request_sums(d),
        *dearest,
    ]
    body = ",\n  ".join(cols)
    select = f"SELECT\n  {body}\nFROM {TABLE}{_where(w, d)}\nGROUP BY {', '.join(keys)}, {key}"
    if d is Dialect.SPARK:
        return [f"CREATE OR REPLACE TEMPORARY VIEW {PARTS} AS\n{select}", f"CACHE TABLE {PARTS}"]
    return [f"CREATE OR REPLACE TEMPORARY TABLE {PARTS} AS\n{select}"]


def miss_floor_sql(top: int) -> str:
    """The ``top``-th dearest of the parts' dearest misses (DuckDB, ``by_file``): the
    ``top`` misses all cost at least that much, since those parts hold ``top`` misses."""
    return (
        f'SELECT "top_miss_cost" FROM {PARTS} WHERE "top_miss_cost" IS NOT NULL\n'
        f"ORDER BY 1 DESC LIMIT 1 OFFSET {int(top) - 1}"
    )


def candidate_files_sql(floor: float | None) -> str:
    """The files holding a miss that costs at least ``floor`` (any miss when ``None``)."""
    at_least = "IS NOT NULL" if floor is None else f">= {floor!r}"
    return f'SELECT DISTINCT "{FILE}" FROM {PARTS} WHERE "top_miss_cost" {at_least} ORDER BY 1'


def _is_miss(q: Callable[[str], str]) -> str:
    return f"{q('outcome')} = 'miss'"


def _miss_rank(q: Callable[[str], str]) -> str:
    """How misses rank, dearest first (then by re-processed tokens, the earliest first);
    unpriced ones as if they had cost -1."""
    return f"COALESCE({q('miss_cost_usd')}, -1)"


def _with_share(columns: list[str], d: Dialect, tail: str = "") -> str:
    q = quoter(d)
    cost, miss, rebuild = (q(n) for n in ("cost_usd", "miss_cost_usd", "rebuild_cost_usd"))
    share = f"CASE WHEN {cost} > 0 THEN ({miss} + {rebuild}) / {cost} END AS {q('recache_share')}"
    inner = ",\n    ".join(columns)
    return f"SELECT *, {share}\nFROM (\n  SELECT\n    {inner}\n  FROM {PARTS}{tail}\n) AS g"


def _gap_order(k: str) -> str:
    """Buckets shortest first, each before its 1h variant (``Audit.rows``' order)."""
    ranks = " ".join(
        f"WHEN {k} = '{name}' OR {k} LIKE '{name} @%' THEN {rank}"
        for rank, (_, name) in enumerate(GAP_BUCKETS)
    )
    return f"CASE {ranks} ELSE -1 END, CASE WHEN {k} LIKE '% @%' THEN 1 ELSE 0 END, {k}"


def groups_sql(by: GroupBy, d: Dialect) -> str:
    k = quoter(d)("key")
    if by in (GroupBy.DAY, GroupBy.WEEK, GroupBy.MONTH):
        order = k
    elif by is GroupBy.GAP:
        order = _gap_order(k)
    else:
        order = f"{quoter(d)('cost_usd')} DESC, {k}"
    sql = _with_share([k, *_part_sums(TOTALS, d)], d, f"\n  GROUP BY {k}")
    return f"{sql}\nORDER BY {order}"


def totals_sql(d: Dialect) -> str:
    return _with_share(["'total' AS " + quoter(d)("key"), *_part_sums(TOTALS, d)], d)


def whatif_sql(d: Dialect) -> str:
    """One row per policy (each part counted once per policy through a table of them)."""
    q = quoter(d)
    happened = Policy.AS_HAPPENED.value
    policies = [happened, *POLICIES]
    table = " UNION ALL ".join(
        f"SELECT '{p}' AS {q('policy')}, {n} AS {q('n')}" for n, p in enumerate(policies)
    )

    def pick(column: Callable[[str], str | None]) -> str:
        cases = " ".join(f"WHEN '{p}' THEN {column(p)}" for p in policies if column(p) is not None)
        return f"COALESCE(SUM(CASE p.{q('policy')} {cases} ELSE 0 END), 0)"

    def stored(part: str, own: str) -> Callable[[str], str]:
        return lambda p: q(own) if p == happened else q(f"whatif_{p}_{part}")

    pings = pick(
        lambda p: q("whatif_keep_alive_requests") if p == Policy.KEEP_ALIVE.value else None
    )
    return (
        f"SELECT p.{q('policy')}, {pick(stored('cost_usd', 'cost_usd'))} AS {q('cost_usd')},\n"
        f"  {pick(stored('misses', 'misses'))} AS {q('misses')},\n"
        f"  {pings} AS {q('keep_alive_requests')},\n"
        f"  {pick(stored('unpriced', 'unpriced_requests'))} AS {q('unpriced_requests')}\n"
        f"FROM {PARTS} CROSS JOIN ({table}) AS p\n"
        f"GROUP BY p.{q('policy')}, p.{q('n')}\nORDER BY p.{q('n')}"
    )


def top_misses_sql(
    top: int, w: Window, d: Dialect, *, source: str = TABLE, floor: float | None = None
) -> str:
    """The ``top`` dearest misses; DuckDB, knowing their ``floor`` (``miss_floor_sql``),
    reads them from a view of the files that hold them (``source``)."""
    q = quoter(d)
    cols = [
        q("session_id"),
        q("project"),
        f"{agent_sql(d)} AS {q('agent')}",
        f"{q('stream_id')} AS {q('stream')}",
        q("stream_kind"),
        f"{q('request_index')} AS {q('index')}",
        f"{q('at_s')} AS {q('at')}",
        q("model"),
        f"{q('cause_key')} AS {q('causes')}",
        q("gap_s"),
        q("reprocessed_tokens"),
        f"{q('miss_cost_usd')} AS {q('cost_usd')}",
    ]
    # A floor above -1 leaves out the unpriced misses, which rank as -1.
    cheap = [f"{q('miss_cost_usd')} >= {floor!r}"] if floor is not None and floor > -1 else []
    return (
        f"SELECT {', '.join(cols)}\nFROM {source}{_where(w, d, _is_miss(q), *cheap)}\n"
        f"ORDER BY {_miss_rank(q)} DESC, {q('reprocessed_tokens')} DESC, "
        f"{q('at_s')}\nLIMIT {int(top)}"
    )


def _sessions(d: Dialect, sums: list[str], *, formats: bool = True) -> str:
    q = quoter(d)
    keys = [q(k) for k in SESSION_KEYS]
    cols = [
        *keys,
        *([f"MIN({q(FORMAT)}) AS {q(FORMAT)}"] if formats else []),
        f"MIN({q('first_at')}) AS {q('first_at')}",
        f"MAX({q('last_at')}) AS {q('last_at')}",
        f"MAX({q('skipped_lines')}) AS {q('skipped_lines')}",
        *sums,
    ]
    body = ",\n  ".join(cols)
    return f"SELECT\n  {body}\nFROM {PARTS}\nGROUP BY {', '.join(keys)}"


def sessions_sql(d: Dialect) -> str:
    q = quoter(d)
    body = _sessions(d, _part_sums((*TOTALS, *WHATIF), d))
    return f"{body}\nORDER BY {q('first_at')}, {q('session_id')}"


def session_count_sql(d: Dialect) -> str:
    """How many sessions and when (what the tables show of them without listing them)."""
    q = quoter(d)
    return (
        f"SELECT COUNT(*) AS {q('sessions')}, MIN({q('first_at')}) AS {q('first_at')}, "
        f"MAX({q('last_at')}) AS {q('last_at')},\n"
        f"  COALESCE(SUM({q('skipped_lines')}), 0) AS {q('skipped_lines')}\n"
        f"FROM (\n{_sessions(d, [], formats=False)}\n) AS s"
    )


def unpriced_models_sql(w: Window, d: Dialect) -> str:
    q = quoter(d)
    unpriced = f"{q('cost_usd')} IS NULL"
    return (
        f"SELECT DISTINCT COALESCE({q('model')}, '(no model)') AS {q('model')}\n"
        f"FROM {TABLE}{_where(w, d, unpriced)}\nORDER BY 1"
    )


def agents_sql(d: Dialect) -> str:
    """The agents whose sessions are in the audit (``agents``)."""
    return f"SELECT DISTINCT {agent_sql(d)} AS {quoter(d)('agent')} FROM {PARTS} ORDER BY 1"


def pricing_sources_sql(d: Dialect) -> str:
    q = quoter(d)
    return f"SELECT DISTINCT {q('pricing_source')} FROM {PARTS} ORDER BY 1"


@dataclass(slots=True, frozen=True)
class AuditQueries:
    """The statements of one audit, in the order they run."""

    parts: list[str]
    groups: str
    totals: str
    whatif: str
    top_misses: str
    sessions: str
    session_count: str
    unpriced_models: str
    pricing_sources: str
    agents: str


def audit_queries(
    by: GroupBy, w: Window, d: Dialect, top: int = 10, *, by_file: bool = False
) -> AuditQueries:
    return AuditQueries(
        parts=parts_sql(by, w, d, by_file=by_file),
        groups=groups_sql(by, d),
        totals=totals_sql(d),
        whatif=whatif_sql(d),
        top_misses=top_misses_sql(top, w, d),
        sessions=sessions_sql(d),
        session_count=session_count_sql(d),
        unpriced_models=unpriced_models_sql(w, d),
        pricing_sources=pricing_sources_sql(d),
        agents=agents_sql(d),
    )


def audit_sql(by: GroupBy, window: Window, dialect: Dialect, top: int = 10) -> str:
    """The queries of an audit, for any engine that has the dataset as ``requests``."""
    qs = audit_queries(by, window, dialect, top)
    titled = [
        (f"one pass over the requests: sums per session and --by {by.value} key", qs.parts[0]),
        *(("", more) for more in qs.parts[1:]),
        (f"groups (--by {by.value})", qs.groups),
        ("totals", qs.totals),
        ("what-if, one row per policy", qs.whatif),
        (f"the {top} most expensive misses", qs.top_misses),
        ("sessions (whatif_by_session)", qs.sessions),
        ("sessions in all (what the tables show)", qs.session_count),
        ("models without a price (unpriced_models)", qs.unpriced_models),
        ("price sources (pricing_source)", qs.pricing_sources),
        ("agents (agents)", qs.agents),
    ]
    text = "\n\n".join(f"-- {t}\n{sql};" if t else f"{sql};" for t, sql in titled) + "\n"
    calendar = by in (GroupBy.DAY, GroupBy.WEEK, GroupBy.MONTH)
    if dialect is Dialect.SPARK and calendar:
        zone = zone_name(window.zone)
        text = f"-- Days begin in {zone}: SET spark.sql.session.timeZone = {zone} first.\n" + text
    return text
