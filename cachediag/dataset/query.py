"""An audit as SQL over the dataset, and DuckDB running it over the files.

Every figure ``cachediag audit`` shows is a sum over requests, so it is one SQL query
over a table (or view) named ``requests`` holding the dataset; the queries' result
columns are named like the fields of the JSON report (``key``, ``requests``, ...,
``cost_usd``). ``audit_sql`` prints them for Spark, Trino or BigQuery; ``run_audit``
hands the same text to DuckDB over the Parquet files, which streams them (no full load
into Python; memory bounded by DuckDB's own limit). Only the rows of the answer (a few
per group, one per session) come back to Python, where they fill the same ``Audit``
the transcript path builds, so the tables, JSON and CSV are the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo
from enum import StrEnum
from pathlib import Path
from typing import Any

from cachediag.analysis.audit import GAP_BUCKETS, Audit, GroupBy, MissRow, SessionLine, Totals
from cachediag.analysis.whatif import Policy, PolicyResult, WhatIf
from cachediag.dataset.schema import POLICIES, SCHEMA_FILE
from cachediag.errors import CachediagError, InputError

TABLE = "requests"


class Dialect(StrEnum):
    DUCKDB = "duckdb"
    SPARK = "spark"


@dataclass(slots=True, frozen=True)
class Window:
    since: float | None = None
    until: float | None = None
    zone: tzinfo = UTC
    """Where days, weeks and months begin."""


_STRING = {Dialect.DUCKDB: "VARCHAR", Dialect.SPARK: "STRING"}
_POLICY_OF = {p.value: p for p in Policy}


def _q(name: str, d: Dialect) -> str:
    return f"`{name}`" if d is Dialect.SPARK else f'"{name}"'


def zone_name(zone: tzinfo) -> str:
    """The IANA name of ``zone`` (what SQL engines take), or a clear error."""
    if zone is UTC or getattr(zone, "key", None) in ("UTC", "Etc/UTC"):
        return "UTC"
    name = getattr(zone, "key", None)
    if not isinstance(name, str) or name == "localtime":
        raise CachediagError(
            "this machine's time zone has no name a query engine knows: pass --timezone "
            "with a name such as Europe/Paris or UTC"
        )
    return name


def _local(d: Dialect, zone: str) -> str:
    """``at`` as a wall-clock time in ``zone``. Spark formats a timestamp in its session
    time zone, which ``audit_sql`` says to set; DuckDB converts explicitly."""
    if d is Dialect.SPARK:
        return _q("at", d)
    return f"timezone('{zone}', {_q('at', d)})"


def _calendar(by: GroupBy, d: Dialect, zone: str) -> str:
    local = _local(d, zone)
    if d is Dialect.DUCKDB:
        pattern = {GroupBy.DAY: "%Y-%m-%d", GroupBy.WEEK: "%G-W%V", GroupBy.MONTH: "%Y-%m"}
        return f"strftime({local}, '{pattern[by]}')"
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


def group_key(by: GroupBy, d: Dialect, zone: tzinfo = UTC) -> str:
    """The SQL of one ``--by`` key, with the transcript audit's names for missing values."""
    s = _STRING[d]
    keys = {
        GroupBy.SESSION: _q("session_id", d),
        GroupBy.PROJECT: f"COALESCE({_q('project', d)}, '(none)')",
        GroupBy.MODEL: f"COALESCE({_q('model', d)}, '(no model)')",
        GroupBy.CAUSE: _q("cause_key", d),
        GroupBy.GAP: _q("gap_key", d),
        GroupBy.STREAM_KIND: _q("stream_kind", d),
        GroupBy.HOST: f"CAST({_q('host', d)} AS {s})",
        GroupBy.USER: f"COALESCE({_q('user', d)}, '(none)')",
    }
    if by in keys:
        return keys[by]
    if by in (GroupBy.DAY, GroupBy.WEEK, GroupBy.MONTH):
        name = zone_name(zone)
        if by is GroupBy.DAY and name == "UTC":
            # The partition itself; its value comes back typed (a date): the key is text.
            return f"CAST({_q('day', d)} AS {s})"
        return _calendar(by, d, name)
    raise CachediagError(f"--by {by.value} is not available on a dataset")


def _totals_columns(d: Dialect) -> list[str]:
    def q(name: str) -> str:
        return _q(name, d)

    outcome = q("outcome")
    cost = q("cost_usd")
    cols = ["COUNT(*) AS " + q("requests")]
    for name in ("input_tokens", "cache_read_tokens", "cache_creation_tokens", "output_tokens"):
        cols.append(f"COALESCE(SUM({q(name)}), 0) AS {q(name)}")
    cols += [
        f"COALESCE(SUM({cost}), 0) AS {cost}",
        f"COALESCE(SUM(CASE WHEN {cost} IS NULL THEN 1 ELSE 0 END), 0) AS {q('unpriced_requests')}",
        f"COALESCE(SUM(CASE WHEN {outcome} = 'miss' THEN 1 ELSE 0 END), 0) AS {q('misses')}",
        f"COALESCE(SUM(CASE WHEN {outcome} = 'expected' THEN 1 ELSE 0 END), 0) "
        f"AS {q('expected_rebuilds')}",
        f"COALESCE(SUM(CASE WHEN {outcome} IN ('miss', 'expected') "
        f"THEN {q('reprocessed_tokens')} ELSE 0 END), 0) AS {q('reprocessed_tokens')}",
        f"COALESCE(SUM(CASE WHEN {outcome} = 'miss' THEN {q('miss_cost_usd')} END), 0) "
        f"AS {q('miss_cost_usd')}",
        f"COALESCE(SUM(CASE WHEN {outcome} = 'expected' THEN {q('miss_cost_usd')} END), 0) "
        f"AS {q('rebuild_cost_usd')}",
    ]
    return cols


def _share(d: Dialect) -> str:
    cost, miss, rebuild = (_q(n, d) for n in ("cost_usd", "miss_cost_usd", "rebuild_cost_usd"))
    return (
        f"CASE WHEN {cost} > 0 THEN ({miss} + {rebuild}) / {cost} END AS {_q('recache_share', d)}"
    )


def _where(w: Window, d: Dialect, *more: str) -> str:
    parts = list(more)
    if w.since is not None:
        parts.append(f"{_q('at_s', d)} >= {w.since!r}")
    if w.until is not None:
        parts.append(f"{_q('at_s', d)} < {w.until!r}")
    return f"WHERE {' AND '.join(parts)}" if parts else ""


def _with_share(columns: list[str], w: Window, d: Dialect, tail: str = "") -> str:
    inner = ",\n    ".join(columns)
    return (
        f"SELECT *, {_share(d)}\nFROM (\n  SELECT\n    {inner}\n  FROM {TABLE}\n"
        f"  {_where(w, d)}{tail}\n) AS g"
    )


def _gap_order(k: str) -> str:
    """Buckets shortest first, each before its 1h variant (``Audit.rows``' order)."""
    ranks = " ".join(
        f"WHEN {k} = '{name}' OR {k} LIKE '{name} @%' THEN {rank}"
        for rank, (_, name) in enumerate(GAP_BUCKETS)
    )
    return f"CASE {ranks} ELSE -1 END, CASE WHEN {k} LIKE '% @%' THEN 1 ELSE 0 END, {k}"


def groups_sql(by: GroupBy, w: Window, d: Dialect) -> str:
    key = group_key(by, d, w.zone)
    k = _q("key", d)
    if by in (GroupBy.DAY, GroupBy.WEEK, GroupBy.MONTH):
        order = k
    elif by is GroupBy.GAP:
        order = _gap_order(k)
    else:
        order = f"{_q('cost_usd', d)} DESC, {k}"
    sql = _with_share([f"{key} AS {k}", *_totals_columns(d)], w, d, f"\n  GROUP BY {key}")
    return f"{sql}\nORDER BY {order}"


def totals_sql(w: Window, d: Dialect) -> str:
    return _with_share(["'total' AS " + _q("key", d), *_totals_columns(d)], w, d)


def whatif_sql(w: Window, d: Dialect) -> str:
    """One row per policy, in one pass over the requests (each row counted once per
    policy through a five-row table of policies)."""

    def q(name: str) -> str:
        return _q(name, d)

    policies = [Policy.AS_HAPPENED.value, *POLICIES]
    table = " UNION ALL ".join(
        f"SELECT '{p}' AS {q('policy')}, {n} AS {q('n')}" for n, p in enumerate(policies)
    )

    def pick(column: Callable[[str], str | None]) -> str:
        cases = " ".join(f"WHEN '{p}' THEN {column(p)}" for p in policies if column(p) is not None)
        return f"COALESCE(SUM(CASE p.{q('policy')} {cases} ELSE 0 END), 0)"

    happened = Policy.AS_HAPPENED.value
    cost = pick(lambda p: q("cost_usd") if p == happened else q(f"whatif_{p}_cost_usd"))
    misses = pick(
        lambda p: (
            f"CASE WHEN {q('outcome')} = 'miss' THEN 1 ELSE 0 END"
            if p == happened
            else q(f"whatif_{p}_misses")
        )
    )
    pings = pick(
        lambda p: q("whatif_keep_alive_requests") if p == Policy.KEEP_ALIVE.value else None
    )
    unpriced = pick(
        lambda p: (
            f"CASE WHEN {q('cost_usd')} IS NULL THEN 1 ELSE 0 END"
            if p == happened
            else q(f"whatif_{p}_unpriced")
        )
    )
    return (
        f"SELECT p.{q('policy')}, {cost} AS {q('cost_usd')},\n  {misses} AS {q('misses')},\n"
        f"  {pings} AS {q('keep_alive_requests')},\n  {unpriced} AS {q('unpriced_requests')}\n"
        f"FROM {TABLE} CROSS JOIN ({table}) AS p\n{_where(w, d)}\n"
        f"GROUP BY p.{q('policy')}, p.{q('n')}\nORDER BY p.{q('n')}"
    )


def top_misses_sql(top: int, w: Window, d: Dialect) -> str:
    def q(name: str) -> str:
        return _q(name, d)

    cols = [
        q("session_id"),
        q("project"),
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
    miss = q("outcome") + " = 'miss'"
    return (
        f"SELECT {', '.join(cols)}\nFROM {TABLE}\n{_where(w, d, miss)}\n"
        f"ORDER BY COALESCE({q('miss_cost_usd')}, -1) DESC, {q('reprocessed_tokens')} DESC, "
        f"{q('at_s')}\nLIMIT {int(top)}"
    )


def sessions_sql(w: Window, d: Dialect) -> str:
    def q(name: str) -> str:
        return _q(name, d)

    keys = [q("session_id"), q("project"), q("source")]
    cols = [
        *keys,
        f"MIN({q('at_s')}) AS {q('first_at')}",
        f"MAX({q('at_s')}) AS {q('last_at')}",
        f"MAX({q('session_skipped_lines')}) AS {q('skipped_lines')}",
        *_totals_columns(d),
    ]
    for p in POLICIES:
        cols += [
            f"COALESCE(SUM({q(f'whatif_{p}_{part}')}), 0) AS {q(f'whatif_{p}_{part}')}"
            for part in ("cost_usd", "misses", "unpriced")
        ]
    cols.append(
        f"COALESCE(SUM({q('whatif_keep_alive_requests')}), 0) AS {q('whatif_keep_alive_requests')}"
    )
    body = ",\n  ".join(cols)
    return (
        f"SELECT\n  {body}\nFROM {TABLE}\n{_where(w, d)}\nGROUP BY {', '.join(keys)}\n"
        f"ORDER BY {q('first_at')}, {q('session_id')}"
    )


def audit_sql(by: GroupBy, window: Window, dialect: Dialect, top: int = 10) -> str:
    """The queries of an audit, for any engine that has the dataset as ``requests``."""
    parts = [
        (f"groups (--by {by.value})", groups_sql(by, window, dialect)),
        ("totals", totals_sql(window, dialect)),
        ("what-if, one row per policy", whatif_sql(window, dialect)),
        (f"the {top} most expensive misses", top_misses_sql(top, window, dialect)),
        ("sessions (whatif_by_session)", sessions_sql(window, dialect)),
    ]
    text = "\n\n".join(f"-- {title}\n{sql};" for title, sql in parts) + "\n"
    calendar = by in (GroupBy.DAY, GroupBy.WEEK, GroupBy.MONTH)
    if dialect is Dialect.SPARK and calendar:
        zone = zone_name(window.zone)
        text = f"-- Days begin in {zone}: SET spark.sql.session.timeZone = {zone} first.\n" + text
    return text


def is_dataset(path: Path) -> bool:
    """A folder ``cachediag export`` wrote (or any Parquet file or Hive-partitioned folder)."""
    if path.is_file():
        return path.suffix == ".parquet"
    return path.is_dir() and (
        (path / SCHEMA_FILE).is_file() or any(True for _ in path.glob("day=*"))
    )


def _files(paths: Sequence[Path]) -> list[str]:
    globs: list[str] = []
    for path in paths:
        if path.is_file():
            globs.append(str(path))
        elif any(path.glob("**/*.parquet")):
            globs.append(str(path / "**" / "*.parquet"))
    if not globs:
        raise InputError(
            ", ".join(str(p) for p in paths) + ": no Parquet files (nothing exported yet?)"
        )
    return globs


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _totals(row: dict[str, Any]) -> Totals:
    return Totals(
        requests=int(row["requests"]),
        input_tokens=int(row["input_tokens"]),
        cache_read_tokens=int(row["cache_read_tokens"]),
        cache_creation_tokens=int(row["cache_creation_tokens"]),
        output_tokens=int(row["output_tokens"]),
        cost_usd=float(row["cost_usd"]),
        unpriced_requests=int(row["unpriced_requests"]),
        misses=int(row["misses"]),
        expected_rebuilds=int(row["expected_rebuilds"]),
        reprocessed_tokens=int(row["reprocessed_tokens"]),
        miss_cost_usd=float(row["miss_cost_usd"]),
        rebuild_cost_usd=float(row["rebuild_cost_usd"]),
    )


def _session_whatif(row: dict[str, Any], t: Totals) -> WhatIf:
    w = WhatIf()
    w.results[Policy.AS_HAPPENED] = PolicyResult(
        Policy.AS_HAPPENED, t.cost_usd, t.misses, 0, t.unpriced_requests
    )
    for p in POLICIES:
        policy = _POLICY_OF[p]
        w.results[policy] = PolicyResult(
            policy,
            float(row[f"whatif_{p}_cost_usd"]),
            int(row[f"whatif_{p}_misses"]),
            int(row["whatif_keep_alive_requests"]) if policy is Policy.KEEP_ALIVE else 0,
            int(row[f"whatif_{p}_unpriced"]),
        )
    return w


@dataclass(slots=True, frozen=True)
class DatasetAudit:
    audit: Audit
    pricing_source: str
    sessions: int


def run_audit(
    paths: Sequence[Path],
    by: GroupBy,
    window: Window,
    *,
    top: int = 10,
    memory_limit: str | None = None,
) -> DatasetAudit:
    """The audit of the datasets at ``paths``, computed by DuckDB over their files."""
    from cachediag.dataset import require

    duckdb = require("duckdb")
    con = duckdb.connect()
    try:
        # Every query reads the same files: their footers are parsed once.
        con.execute("SET enable_object_cache = true")
        if memory_limit is not None:
            con.execute(f"SET memory_limit = '{memory_limit}'")
        files = _files(paths)
        listed = ", ".join(_literal(f) for f in files)
        # A view cannot take parameters: the paths go in as escaped string literals.
        con.execute(
            f"CREATE VIEW {TABLE} AS SELECT * FROM read_parquet([{listed}], "
            "hive_partitioning = true)"
        )
        d = Dialect.DUCKDB

        def rows(sql: str) -> list[dict[str, Any]]:
            cur = con.execute(sql)
            names = [c[0] for c in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

        audit = Audit(top=top)
        for s in rows(sessions_sql(window, d)):
            t = _totals(s)
            audit.sessions.append(
                SessionLine(
                    s["session_id"],
                    s["project"],
                    s["source"],
                    s["first_at"],
                    s["last_at"],
                    t,
                    _session_whatif(s, t),
                )
            )
            audit.skipped_lines += int(s["skipped_lines"] or 0)
        [total] = rows(totals_sql(window, d))
        audit.totals = _totals(total)
        if by is not GroupBy.SESSION:
            audit.groups[by] = {str(g["key"]): _totals(g) for g in rows(groups_sql(by, window, d))}
        for p in rows(whatif_sql(window, d)):
            policy = _POLICY_OF[p["policy"]]
            audit.whatif.results[policy] = PolicyResult(
                policy,
                float(p["cost_usd"]),
                int(p["misses"]),
                int(p["keep_alive_requests"]),
                int(p["unpriced_requests"]),
            )
        audit.top_misses = [
            MissRow(
                m["session_id"],
                m["project"],
                m["stream"],
                m["stream_kind"],
                int(m["index"]),
                float(m["at"]),
                m["model"],
                tuple(m["causes"].split("+")),
                m["gap_s"],
                int(m["reprocessed_tokens"]),
                m["cost_usd"],
            )
            for m in rows(top_misses_sql(top, window, d))
        ]
        where = _where(window, d, '"cost_usd" IS NULL')
        audit.unpriced_models = {
            r["m"]
            for r in rows(
                f"SELECT DISTINCT COALESCE(model, '(no model)') AS m FROM {TABLE} {where}"
            )
        }
        sources = rows(
            f"SELECT DISTINCT pricing_source AS s FROM {TABLE} {_where(window, d)} ORDER BY 1"
        )
    except duckdb.Error as exc:
        raise CachediagError(f"dataset query failed: {exc}") from exc
    finally:
        con.close()
    source = ", ".join(r["s"] for r in sources) or "(no requests)"
    return DatasetAudit(audit, source, len(audit.sessions))
