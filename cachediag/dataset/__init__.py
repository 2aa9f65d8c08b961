"""The request ledger as a Parquet dataset, and the DuckDB queries over it (one room).

``export`` writes what ``cachediag audit`` reads: one row per API request, no text, under
a documented, versioned schema (``schema``), Hive-partitioned by day and host so that
many laptops can add to one shared folder. ``query`` turns an audit into SQL that DuckDB
runs over the files (and that Spark, Trino or BigQuery can run over the same data).

DuckDB and pyarrow are the optional extra ``cachediag[fleet]``; they are imported only in
this room, through ``require``, which names the extra when they are missing. ``rows`` and
``schema`` import neither: worker processes build rows without them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from cachediag.errors import CachediagError

EXTRA = ".[fleet]"
"""The extra, as pip takes it in cachediag's checkout (the project is installed from one)."""


class MissingExtraError(CachediagError):
    """DuckDB or pyarrow is not installed."""


def require(module: str) -> ModuleType:
    """Import ``duckdb`` or ``pyarrow`` (or a submodule), or say which extra to install."""
    from importlib import import_module

    try:
        return import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"datasets need DuckDB and pyarrow: pip install '{EXTRA}' in cachediag's "
            f"checkout (the fleet extra) ({exc})"
        ) from exc


def no_glob(path: str) -> str:
    """``path`` as DuckDB's ``read_parquet`` takes it literally: it globs every name it
    is given, even in a list (``ds[1]`` would read ``ds1``), so each glob character goes
    in a class of its own (``[[]``, ``[*]``)."""
    return _GLOB.sub(r"[\1]", path)


_GLOB = re.compile(r"([\[*?{])")


def query_error(exc: Exception, files: Iterable[str | Path]) -> CachediagError:
    """A DuckDB error over ``files`` as one line: the first of them that is not a
    Parquet file named (a disk or a sync tool broke it), else the error's first line
    (DuckDB goes on with the query's text)."""
    pq = require("pyarrow.parquet")
    for path in files:
        try:
            pq.read_metadata(path)
        except Exception as bad:  # pyarrow raises several kinds for a bad file
            first = str(bad).strip().splitlines()[0] if str(bad).strip() else type(bad).__name__
            return CachediagError(f"{path}: not a readable Parquet file ({first})")
    lines = str(exc).strip().splitlines()
    return CachediagError(f"dataset query failed: {lines[0] if lines else type(exc).__name__}")


def arrow_table(result: object) -> object:
    """A DuckDB result as a ``pyarrow.Table`` (the method's name changed in DuckDB 2)."""
    for name in ("to_arrow_table", "fetch_arrow_table"):
        method = getattr(result, name, None)
        if method is not None:
            return method()
    raise MissingExtraError(
        f"this DuckDB cannot hand results to pyarrow; pip install '{EXTRA}' (the fleet extra)"
    )
