"""Writing rows into the dataset: new requests only, whole files only.

Safe for cron on many laptops writing into one shared folder: every part file has a
unique name (time and a random id), is written under a hidden temporary name beside its
final place and renamed into it, so that a reader never sees half a file; a host's
exports take turns through a lock file; a request already in the dataset (same
``request_key`` among this host's files) is never written again, unless it has grown:
Claude Code writes a response over several lines as it streams, its output count
growing, so an export made meanwhile holds a smaller copy; a later, larger copy
replaces it in its file (that file rewritten whole and renamed over itself, so a reader
sees the old row or the new one, never both).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cachediag import __version__
from cachediag.dataset import arrow_table, no_glob, query_error, require
from cachediag.dataset.rows import ROW_COLUMNS, Row
from cachediag.dataset.schema import (
    NAMES,
    SCHEMA_FILE,
    SCHEMA_VERSION,
    arrow_schema,
    schema_document,
)
from cachediag.errors import CachediagError
from cachediag.ingest.agents import agent_of
from cachediag.safefiles import UnsafeFile, open_private, read_private

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def partition_value(value: str) -> str:
    """A label as a folder name: no separators, no dots at the start, never empty."""
    cleaned = _UNSAFE.sub("-", value).strip("-.")[:64]
    return cleaned or "unknown"


@dataclass(slots=True)
class ExportStats:
    read: int = 0
    """Requests read from the logs."""
    written: int = 0
    """New requests written (the rest were in the dataset already)."""
    updated: int = 0
    """Requests the dataset held a smaller copy of (a response still being written
    when it was exported), replaced by the larger one."""
    files: list[Path] = field(default_factory=list)
    assumed_ttl_rows: int = 0


SCHEMA_MAX_BYTES = 1 << 20
"""The most of a ``_schema.json`` read (cachediag's own is under 10 kB)."""


def _check_schema(root: Path) -> None:
    """The dataset's schema version must be ours; a dataset without one gets ours, and
    one of our version whose columns are fewer (written before a column was added)
    gets our list of them. The folder may be shared: the file is read only if it is a
    regular file, not a link (a FIFO would block the export, a link to a large file
    fill memory), and at most ``SCHEMA_MAX_BYTES`` of it."""
    path = root / SCHEMA_FILE
    try:
        data = read_private(str(path), SCHEMA_MAX_BYTES)
    except FileNotFoundError:
        _write_atomic(path, (json.dumps(schema_document(), indent=2) + "\n").encode())
        return
    except OSError as exc:
        raise CachediagError(f"{path}: not a cachediag dataset schema ({_why(exc)})") from None
    try:
        document = json.loads(data)
        found = document.get("schema_version")
    except (ValueError, AttributeError) as exc:
        raise CachediagError(f"{path}: not a cachediag dataset schema ({exc})") from None
    if found != SCHEMA_VERSION:
        raise CachediagError(
            f"{path}: dataset schema version {found}; this cachediag writes version "
            f"{SCHEMA_VERSION} (export into another folder)"
        )
    ours = schema_document()
    listed = {c.get("name") for c in document.get("columns") or [] if isinstance(c, dict)}
    if not listed >= {c["name"] for c in ours["columns"]}:
        _write_atomic(path, (json.dumps(ours, indent=2) + "\n").encode())


def _why(exc: OSError) -> str:
    """What is wrong with one of the dataset's own files, without the path again."""
    if isinstance(exc, UnsafeFile):
        return str(exc).rpartition(": ")[2]
    if exc.errno == errno.ELOOP:
        return "a symbolic link; not used"
    return exc.strerror or type(exc).__name__


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "xb") as fp:
            fp.write(data)
            fp.flush()
            os.fsync(fp.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


@contextlib.contextmanager
def host_lock(root: Path, host: str) -> Iterator[None]:
    """One export per host at a time (two crons overlapping would both see a key as new)."""
    lock = root / f".export-{host}.lock"
    # Never through a planted link, never a FIFO (opening one for writing blocks for ever).
    try:
        fd = open_private(str(lock), os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise CachediagError(f"{lock}: cannot lock the export ({_why(exc)})") from None
    with os.fdopen(fd, "r+b") as fp:
        fcntl.flock(fp.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fp.fileno(), fcntl.LOCK_UN)


class DatasetWriter:
    """Collects rows and writes the new ones in batches (bounded memory)."""

    BATCH_ROWS = 200_000

    def __init__(self, root: Path, host: str, labels: dict[str, str]) -> None:
        self.root = root
        self.host = partition_value(host)
        self.labels = labels
        self.stats = ExportStats()
        self._pending: list[Row] = []
        self._exported_at = datetime.now(UTC)
        self._pa = require("pyarrow")
        self._pq = require("pyarrow.parquet")
        self._duckdb = require("duckdb")
        self._schema = arrow_schema()

    def open(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CachediagError(f"{self.root}: cannot create ({exc.strerror or exc})") from exc
        if not self.root.is_dir():
            raise CachediagError(f"{self.root}: not a directory")
        _check_schema(self.root)

    def add(self, rows: list[Row]) -> None:
        self.stats.read += len(rows)
        self._pending.extend(rows)
        if len(self._pending) >= self.BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        table = self._table(rows)
        fresh, grown = self._new_rows(table)
        for day, part in self._by_day(fresh):
            self._write_part(day, part)
            self.stats.written += part.num_rows
        if grown.num_rows:
            self._replace(grown)

    def _write_part(self, day: str, part: Any) -> None:
        folder = self.root / f"day={day}" / f"host={self.host}"
        folder.mkdir(parents=True, exist_ok=True)
        name = f"part-{self._exported_at:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:16]}.parquet"
        self._write_file(folder / name, part)
        self.stats.files.append(folder / name)

    def _write_file(self, path: Path, part: Any) -> None:
        """``part`` in ``path``, whole or not at all (written beside it, then renamed)."""
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            self._pq.write_table(part, tmp, compression="zstd")
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def _table(self, rows: list[Row]) -> Any:
        columns: dict[str, list[Any]] = {name: [] for name in ROW_COLUMNS}
        order = list(columns.values())
        for row in rows:
            for cells, value in zip(order, row, strict=True):
                cells.append(value)
        n = len(rows)
        self.stats.assumed_ttl_rows += sum(columns["ttl_assumed"])
        columns["at"] = [datetime.fromtimestamp(at, UTC) for at in columns["at"]]
        user = self.labels.get("user")
        data = {name: columns[name] for name in NAMES if name in columns}
        data["user"] = [user] * n
        data["labels"] = [list(self.labels.items())] * n
        data["exported_at"] = [self._exported_at] * n
        data["cachediag_version"] = [__version__] * n
        table = self._pa.table(data, schema=self._schema)
        return table.append_column("day", self._pa.array(columns["day"], self._pa.string()))

    def _own_files(self) -> list[Path]:
        return sorted(self.root.glob(f"day=*/host={self.host}/*.parquet"))

    def _query(self, sql: str, files: list[Path], **tables: Any) -> Any:
        """``sql`` over ``tables`` and the Parquet ``files`` (``?``), as an Arrow table;
        a file that is not Parquet is named in the error (nothing is written then)."""
        con = self._duckdb.connect()
        try:
            for name, table in tables.items():
                con.register(name, table)
            params = [[no_glob(str(p)) for p in files]] if files else []
            return arrow_table(con.sql(sql, params=params))
        except self._duckdb.Error as exc:
            error = query_error(exc, files)
            raise CachediagError(
                f"{error}; nothing was written: move it out of the dataset (or restore it) "
                "and export again"
                if "not a readable Parquet file" in str(error)
                else str(error)
            ) from exc
        finally:
            con.close()

    def _new_rows(self, table: Any) -> tuple[Any, Any]:
        """The rows whose key is not yet among this host's files, and those whose copy
        there is smaller (``_SIZE``): each key once, its largest copy."""
        existing = self._own_files()
        known = (
            f"SELECT request_key, max({_SIZE}) AS size "
            "FROM read_parquet(?, hive_partitioning = false) GROUP BY request_key"
            if existing
            else "SELECT NULL::VARCHAR AS request_key, NULL::BIGINT AS size WHERE false"
        )
        query = f"""
            SELECT i.*, k.size IS NOT NULL AS known FROM incoming AS i
            LEFT JOIN ({known}) AS k USING (request_key)
            WHERE k.size IS NULL OR {_SIZE} > k.size
            QUALIFY row_number() OVER (
                PARTITION BY request_key ORDER BY {_SIZE} DESC, at_s
            ) = 1
        """
        rows = self._query(query, existing, incoming=table)
        pc = require("pyarrow.compute")
        known_rows = rows.column("known")
        rows = rows.drop_columns(["known"])
        rows = rows.cast(self._schema.append(self._pa.field("day", self._pa.string())))
        return rows.filter(pc.invert(known_rows)), rows.filter(known_rows)

    def _by_day(self, fresh: Any) -> list[tuple[str, Any]]:
        days = sorted(set(fresh.column("day").to_pylist()))
        pc = require("pyarrow.compute")
        out = []
        for day in days:
            part = fresh.filter(pc.equal(fresh.column("day"), day)).drop_columns(["day"])
            out.append((day, part.sort_by([("session_id", "ascending"), ("at_s", "ascending")])))
        return out

    def _replace(self, grown: Any) -> None:
        """Each file holding a smaller copy of a ``grown`` row rewritten with the larger
        one in its place (a row whose day changed goes into a new part of its day)."""
        pc = require("pyarrow.compute")
        keys = self._pa.table({"request_key": grown.column("request_key")})
        holders = self._query(
            "SELECT DISTINCT f.filename FROM read_parquet(?, hive_partitioning = false, "
            "filename = true) AS f JOIN grown_keys USING (request_key) ORDER BY 1",
            self._own_files(),
            grown_keys=keys,
        )
        placed = set()
        for name in holders.column("filename").to_pylist():
            path = Path(name)
            day = path.parent.parent.name.removeprefix("day=")
            old = self._with_agent(self._pq.read_table(path, schema=self._schema))
            stale = pc.is_in(old.column("request_key"), value_set=grown.column("request_key"))
            mine = grown.filter(pc.equal(grown.column("day"), day))
            placed.update(mine.column("request_key").to_pylist())
            kept = old.filter(pc.invert(stale))
            new = self._pa.concat_tables([kept, mine.drop_columns(["day"])])
            self._write_file(
                path, new.sort_by([("session_id", "ascending"), ("at_s", "ascending")])
            )
            self.stats.updated += mine.num_rows
        moved = grown.filter(
            pc.invert(
                pc.is_in(
                    grown.column("request_key"),
                    value_set=self._pa.array(sorted(placed), self._pa.string()),
                )
            )
        )
        for day, part in self._by_day(moved):
            self._write_part(day, part)
            self.stats.updated += part.num_rows

    def _with_agent(self, table: Any) -> Any:
        """``table`` (a file read as this schema) with each row's agent: a file written
        before the column was added reads it as nulls; its rows' formats name it."""
        column = table.column("agent")
        if not column.null_count:
            return table
        formats = table.column("source_format").to_pylist()
        agents = self._pa.array([agent_of(f) for f in formats], self._pa.string())
        at = table.schema.get_field_index("agent")
        return table.set_column(at, self._schema.field("agent"), agents)


_SIZE = "(input_tokens + cache_read_tokens + cache_creation_tokens + output_tokens)"
"""How large a copy of a response is: a response being written only grows."""
