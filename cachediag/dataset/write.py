"""Writing rows into the dataset: new requests only, whole files only.

Safe for cron on many laptops writing into one shared folder: every part file has a
unique name (time and a random id), is written under a hidden temporary name beside its
final place and renamed into it, so that a reader never sees half a file; a host's
exports take turns through a lock file; a request already in the dataset (same
``request_key`` among this host's files) is never written again.
"""

from __future__ import annotations

import contextlib
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
from cachediag.dataset import arrow_table, require
from cachediag.dataset.rows import ROW_COLUMNS, Row
from cachediag.dataset.schema import (
    NAMES,
    SCHEMA_FILE,
    SCHEMA_VERSION,
    arrow_schema,
    schema_document,
)
from cachediag.errors import CachediagError

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
    files: list[Path] = field(default_factory=list)
    assumed_ttl_rows: int = 0


def _check_schema(root: Path) -> None:
    path = root / SCHEMA_FILE
    if path.is_file():
        try:
            found = json.loads(path.read_text()).get("schema_version")
        except (OSError, ValueError, AttributeError) as exc:
            raise CachediagError(f"{path}: not a cachediag dataset schema ({exc})") from exc
        if found != SCHEMA_VERSION:
            raise CachediagError(
                f"{path}: dataset schema version {found}; this cachediag writes version "
                f"{SCHEMA_VERSION} (export into another folder)"
            )
        return
    _write_atomic(path, (json.dumps(schema_document(), indent=2) + "\n").encode())


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
    with open(lock, "a") as fp:
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
        for day, part in self._new_rows_by_day(table):
            folder = self.root / f"day={day}" / f"host={self.host}"
            folder.mkdir(parents=True, exist_ok=True)
            name = f"part-{self._exported_at:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:16]}.parquet"
            tmp = folder / f".{name}.tmp"
            try:
                self._pq.write_table(part, tmp, compression="zstd")
                os.replace(tmp, folder / name)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
            self.stats.written += part.num_rows
            self.stats.files.append(folder / name)

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

    def _new_rows_by_day(self, table: Any) -> list[tuple[str, Any]]:
        """Rows whose key is not yet among this host's files (nor earlier in ``table``)."""
        con = self._duckdb.connect()
        try:
            con.register("incoming", table)
            existing = sorted(self.root.glob(f"day=*/host={self.host}/*.parquet"))
            known = (
                "SELECT request_key FROM read_parquet(?, hive_partitioning = false)"
                if existing
                else "SELECT NULL::VARCHAR AS request_key WHERE false"
            )
            query = f"""
                SELECT * FROM incoming
                WHERE request_key NOT IN ({known})
                QUALIFY row_number() OVER (PARTITION BY request_key ORDER BY at_s) = 1
            """
            params = [[str(p) for p in existing]] if existing else []
            fresh: Any = arrow_table(con.sql(query, params=params))
        finally:
            con.close()
        fresh = fresh.cast(self._schema.append(self._pa.field("day", self._pa.string())))
        days = sorted(set(fresh.column("day").to_pylist()))
        pc = require("pyarrow.compute")
        out = []
        for day in days:
            part = fresh.filter(pc.equal(fresh.column("day"), day)).drop_columns(["day"])
            out.append((day, part.sort_by([("session_id", "ascending"), ("at_s", "ascending")])))
        return out
