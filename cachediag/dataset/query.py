"""DuckDB running an audit's SQL (``sql``) over the Parquet files of datasets.

DuckDB streams the files through one pass into ``audit_parts`` (a few rows per
session), so nothing is loaded whole into Python and memory is bounded by DuckDB's own
limit (``CACHEDIAG_DUCKDB_MEMORY``, default 512MB; past it, DuckDB spills to a private
temporary folder). Only the rows of the answer come back, as tuples, where they fill the
same ``Audit`` the transcript path builds, so the tables, JSON and CSV are the same code.
The session lines (one per session: 100,000 in a team's month) are fetched only when the
output lists them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from cachediag.analysis.group_keys import GroupBy
from cachediag.analysis.rollup import Audit, MissRow, SessionLine, SessionSpan
from cachediag.analysis.totals import Totals
from cachediag.analysis.whatif import Policy, PolicyResult, WhatIf
from cachediag.dataset import no_glob, query_error
from cachediag.dataset.dialect import Dialect, Window, zone_offsets
from cachediag.dataset.schema import PARTITIONS, POLICIES
from cachediag.dataset.sql import (
    FILE,
    SESSION_KEYS,
    TABLE,
    TOTALS,
    AuditQueries,
    audit_queries,
    candidate_files_sql,
    miss_floor_sql,
    top_misses_sql,
)
from cachediag.errors import CachediagError, InputError
from cachediag.ingest.agents import agent_of

MEMORY_ENV = "CACHEDIAG_DUCKDB_MEMORY"
DEFAULT_MEMORY = "512MB"
_POLICY_OF = {p.value: p for p in Policy}
_STORED = tuple((_POLICY_OF[p], 3 * n) for n, p in enumerate(POLICIES))
"""Each stored policy and where its three columns begin in a session's ``WHATIF``."""
_CANDIDATES = "candidate_files"
_FETCH = 10_000
"""Session rows fetched at a time: tuples of a few dozen numbers each."""


@dataclass(slots=True, frozen=True)
class PartFile:
    """A Parquet file of a dataset and its partition values (``day``, ``host``), read
    from the folders between the dataset named and the file, never from above it."""

    path: str
    day: str | None
    host: str | None


def _partitions(parts: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if sep and key in PARTITIONS:
            found[key] = value
    return found


def _part_file(path: str, below: Sequence[str]) -> PartFile:
    found = _partitions(below)
    return PartFile(path, found.get("day"), found.get("host"))


def _files(paths: Sequence[Path]) -> list[PartFile]:
    """Every Parquet file of the datasets at ``paths``, as named (no name is a pattern).

    A folder gives the ``*.parquet`` files below it (links to folders not followed,
    hidden names skipped: an export's files before they are whole); a file named
    alone keeps the partition of its place in the export's layout
    (``day=D/host=H/part.parquet``)."""
    found: list[PartFile] = []
    # A file is read once however often it is named (``audit ds ds``, a folder and one of
    # its files, a link to it): each file met again would count its rows again, squared
    # by the join on the file's name in ``_view``. Keyed by device and inode.
    seen: set[tuple[int, int]] = set()

    def add(full: str, below: Sequence[str]) -> None:
        try:
            st = os.stat(full)
        except OSError:
            return
        if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            found.append(_part_file(full, below))

    for path in paths:
        if path.is_file():
            day, host = path.parent.parent.name, path.parent.name
            layout = day.startswith("day=") and host.startswith("host=")
            add(str(path), [day, host] if layout else [])
            continue
        root = str(path)
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            below = Path(os.path.relpath(folder, root)).parts
            for name in sorted(names):
                if name.endswith(".parquet") and not name.startswith("."):
                    add(os.path.join(folder, name), below)
    if not found:
        raise InputError(
            ", ".join(str(p) for p in paths) + ": no Parquet files (nothing exported yet?)"
        )
    return found


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _totals(row: Sequence[Any]) -> Totals:
    """``Totals`` from the ``TOTALS`` columns of a row, in their order."""
    return Totals(*row)


def _session_whatif(row: Sequence[Any], t: Totals) -> WhatIf:
    """The what-if of a session from its ``WHATIF`` columns (three per policy, then the
    keep-alive requests), what happened from its totals."""
    pings = row[-1]
    results = {
        Policy.AS_HAPPENED: PolicyResult(
            Policy.AS_HAPPENED, t.cost_usd, t.misses, 0, t.unpriced_requests
        )
    }
    for policy, at in _STORED:
        results[policy] = PolicyResult(
            policy, row[at], row[at + 1], pings if policy is Policy.KEEP_ALIVE else 0, row[at + 2]
        )
    return WhatIf(results)


_SUMS_AT = len(SESSION_KEYS) + 4
"""Where a session row's sums begin: after its keys, format, first and last instants
and skipped lines (``sql.sessions_sql``)."""


def _session_line(row: Sequence[Any]) -> SessionLine:
    session_id, project, source, source_format, first_at, last_at = row[:6]
    totals_end = _SUMS_AT + len(TOTALS)
    t = _totals(row[_SUMS_AT:totals_end])
    whatif = _session_whatif(row[totals_end:], t)
    agent = agent_of(source_format)
    return SessionLine(session_id, project, source, first_at, last_at, t, whatif, agent)


def _miss(row: Sequence[Any]) -> MissRow:
    session_id, project, agent, stream, kind, index, at, model, causes, gap_s, tokens, cost = row
    return MissRow(
        session_id,
        project,
        stream,
        kind,
        int(index),
        float(at),
        model,
        tuple(causes.split("+")),
        gap_s,
        int(tokens),
        cost,
        agent,
    )


@dataclass(slots=True, frozen=True)
class DatasetAudit:
    audit: Audit
    pricing_source: str
    sessions: int


def _connect(duckdb: Any, spill: str, memory_limit: str | None) -> Any:
    limit = memory_limit or os.environ.get(MEMORY_ENV) or DEFAULT_MEMORY
    config = {
        "memory_limit": limit,
        # Spilled data holds the ledger: a private folder, not DuckDB's default ./.tmp.
        "temp_directory": spill,
        # No query here needs the files' row order; keeping it costs memory.
        "preserve_insertion_order": False,
        # Every query reads the same files: their footers are parsed once.
        "enable_object_cache": True,
    }
    try:
        con = duckdb.connect(config=config)
    except duckdb.Error as exc:
        raise CachediagError(f"DuckDB refused memory_limit {limit!r} ({exc})") from exc
    # DuckDB would draw its own bar on stdout, among the JSON.
    con.execute("SET enable_progress_bar = false")
    return con


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """The cyclic garbage collector paused: the session lines are a million small
    objects without cycles, and Python's collector walks all of them again and again
    while they are made (a large share of the loop's time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _view(name: str, files: Sequence[PartFile]) -> str:
    """The requests of ``files`` with their partition columns. DuckDB's own Hive
    partitioning would read every ``key=value`` folder of a path, above the dataset
    too, and override the rows' columns with it: the partition of each file is joined
    instead, from what ``_files`` read below the dataset."""
    # A view cannot take parameters: the paths go in as escaped string literals. A path
    # listed twice would be read twice and join twice: each is listed once.
    once: dict[str, PartFile] = {}
    for f in files:
        once.setdefault(f.path, f)
    files = list(once.values())
    listed = ", ".join(_literal(no_glob(f.path)) for f in files)
    rows = ", ".join(f"({_literal(f.path)}, {_maybe(f.day)}, {_maybe(f.host)})" for f in files)
    utc_day = "strftime(timezone('UTC', r.at), '%Y-%m-%d')"
    return (
        f"CREATE OR REPLACE VIEW {name} AS SELECT r.*, "
        f"COALESCE(p.day, {utc_day}) AS day, p.host AS host "
        f"FROM read_parquet([{listed}], hive_partitioning = false, filename = true) AS r "
        f"JOIN (VALUES {rows}) AS p(part_file, day, host) ON r.{FILE} = p.part_file"
    )


def _maybe(text: str | None) -> str:
    return "NULL::VARCHAR" if text is None else _literal(text)


def _top_misses(
    con: Any, top: int, window: Window, all_files: Sequence[PartFile]
) -> list[tuple[Any, ...]]:
    """The dearest misses, read from the files that hold the dearest miss of a part: a
    pass over every file costs a second of CPU at 3,000 files, most of it per file."""
    if top <= 0:
        return []
    floor = next(iter(_fetch_all(con, miss_floor_sql(top))), (None,))[0]
    wanted = {f for (f,) in _fetch_all(con, candidate_files_sql(floor))}
    files = [f for f in all_files if f.path in wanted]
    if not files:
        return []
    con.execute(_view(_CANDIDATES, files))
    return _fetch_all(
        con, top_misses_sql(top, window, Dialect.DUCKDB, source=_CANDIDATES, floor=floor)
    )


def _fetch_all(con: Any, sql: str) -> list[tuple[Any, ...]]:
    return list(con.execute(sql).fetchall())


def _fill(audit: Audit, con: Any, qs: AuditQueries, by: GroupBy, session_lines: bool) -> None:
    """Sessions, totals, groups and what-if of ``audit``, read from ``audit_parts``."""
    if session_lines or by is GroupBy.SESSION:
        cur = con.execute(qs.sessions)
        with _collection_paused():
            while batch := cur.fetchmany(_FETCH):
                for row in batch:
                    audit.sessions.append(_session_line(row))
                    audit.skipped_lines += int(row[_SUMS_AT - 1] or 0)
    else:
        [(count, first_at, last_at, skipped)] = _fetch_all(con, qs.session_count)
        audit.span = SessionSpan(int(count), first_at, last_at)
        audit.skipped_lines = int(skipped)
    # Each row: the key, the TOTALS, the recache share (computed again from Totals).
    [total] = _fetch_all(con, qs.totals)
    audit.totals = _totals(total[1 : 1 + len(TOTALS)])
    if by is not GroupBy.SESSION:
        groups = _fetch_all(con, qs.groups)
        audit.groups[by] = {str(g[0]): _totals(g[1 : 1 + len(TOTALS)]) for g in groups}
    for name, cost, misses, pings, unpriced in _fetch_all(con, qs.whatif):
        policy = _POLICY_OF[name]
        audit.whatif.results[policy] = PolicyResult(
            policy, float(cost), int(misses), int(pings), int(unpriced)
        )


def _with_offsets(con: Any, by: GroupBy, window: Window) -> Window:
    """``window`` with its zone's offsets over the data when days, weeks or months are
    keys in another zone than UTC (``sql.Window``)."""
    if by not in (GroupBy.DAY, GroupBy.WEEK, GroupBy.MONTH):
        return window
    if window.zone is UTC or getattr(window.zone, "key", None) in ("UTC", "Etc/UTC"):
        return window
    [(first, last)] = _fetch_all(con, f"SELECT min(at_s), max(at_s) FROM {TABLE}")
    if first is None:
        return window
    return dataclasses.replace(window, offsets=zone_offsets(window.zone, first, last))


def run_audit(
    paths: Sequence[Path],
    by: GroupBy,
    window: Window,
    *,
    top: int = 10,
    session_lines: bool = True,
    memory_limit: str | None = None,
) -> DatasetAudit:
    """The audit of the datasets at ``paths``, computed by DuckDB over their files.

    Without ``session_lines`` the audit keeps only how many sessions there are and when
    (``Audit.span``): what tables and CSV show of them (``--by session`` lists them).
    """
    from cachediag.dataset import require

    duckdb = require("duckdb")
    files = _files(paths)
    spill = tempfile.mkdtemp(prefix="cachediag-duckdb-")
    con = _connect(duckdb, spill, memory_limit)
    try:
        con.execute(_view(TABLE, files))
        window = _with_offsets(con, by, window)
        qs = audit_queries(by, window, Dialect.DUCKDB, top, by_file=True)
        for statement in qs.parts:
            con.execute(statement)
        audit = Audit(top=top)
        _fill(audit, con, qs, by, session_lines)
        audit.top_misses = [_miss(m) for m in _top_misses(con, top, window, files)]
        if audit.totals.unpriced_requests:
            audit.unpriced_models = {m for (m,) in _fetch_all(con, qs.unpriced_models)}
        sources = [s for (s,) in _fetch_all(con, qs.pricing_sources)]
        audit.agents = {a for (a,) in _fetch_all(con, qs.agents)}
    except duckdb.Error as exc:
        raise query_error(exc, [f.path for f in files]) from exc
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    count = audit.session_span().sessions
    return DatasetAudit(audit, ", ".join(sources) or "(no requests)", count)
