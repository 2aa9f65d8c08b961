"""Rows computed per session (a group of files read together), kept in the index while
none of the session's files changed.

Some rows cannot be had line by line: a request's cache outcome depends on the request
before it, so the usage reports' rows come from the whole session's ledger. Such a
session is the unit here: its rows are answered from the index while its files are the
same files, each with the identity, size, mtime and ctime the index saw (an append, a
rewrite even at the same size, a truncation or a replacement all change one of them);
otherwise the whole session is computed again, and only that session. A session whose
files are all gone is dropped.

The files' signatures are taken before the session is computed: bytes written while it
is read make the next call compute it again rather than keep rows that miss them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cachediag.follow.files import file_signature, unchanged_since
from cachediag.history import store
from cachediag.history.index import RowCodec, Stats, load_or_empty

Row = TypeVar("Row")
Compute = Callable[[str, Sequence[str]], list[Row]]


def rows_by_session(
    sessions: Sequence[tuple[str, Sequence[str]]],
    compute: Compute[Row],
    codec: RowCodec,
    *,
    kind: str,
    root: str | None = None,
    stats: Stats | None = None,
) -> list[list[Row]]:
    """The rows of each ``(key, files)`` session, in order: ``compute(key, files)`` when
    the index holds none for those files as they are now."""
    stats = stats if stats is not None else Stats()
    where = store.index_path(kind, root)
    groups = load_or_empty(where, codec.schema)["files"]
    if all(unchanged_group(groups.get(key), files) for key, files in sessions):
        stats.unchanged += len(sessions)
        return [_decode(groups[key], codec) for key, _ in sessions]
    with store.locked(where):
        index = load_or_empty(where, codec.schema)
        groups = index["files"]
        out: list[list[Row]] = []
        for key, files in sessions:
            entry = groups.get(key)
            if unchanged_group(entry, files):
                stats.unchanged += 1
                out.append(_decode(entry, codec))
                continue
            signatures = {path: file_signature(path) for path in files}
            rows = compute(key, files)
            stats.read += 1
            groups[key] = {"sigs": signatures, "rows": [codec.encode(r) for r in rows]}
            out.append(_decode(groups[key], codec))
        asked = {key for key, _ in sessions}
        for key in [k for k, e in groups.items() if k not in asked and all_gone(e)]:
            del groups[key]
        store.save(where, index)
    return out


def unchanged_group(entry: Any, files: Sequence[str]) -> bool:
    if not isinstance(entry, dict):
        return False
    sigs = entry.get("sigs")
    if not isinstance(sigs, dict) or set(sigs) != set(files):
        return False
    return all(sigs[p] is not None and unchanged_since(sigs[p], p) for p in files)


def all_gone(entry: Any) -> bool:
    sigs = entry.get("sigs") if isinstance(entry, dict) else None
    return not isinstance(sigs, dict) or all(file_signature(p) is None for p in sigs)


def _decode(entry: dict[str, Any], codec: RowCodec) -> list[Row]:
    decode = codec.decode
    return [decode(r) for r in entry["rows"]]


def dataclass_codec(cls: Callable[..., Row], salt: str) -> RowCodec:
    """The codec of a dataclass of plain fields (numbers, strings, ``None``): a row as the
    list of its fields. ``salt`` names what else the rows depend on (the version, the
    price data): an index of another salt is rebuilt."""
    import dataclasses

    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    schema = f"{cls.__module__}.{cls.__qualname__}({','.join(names)}):{salt}"

    def encode(row: Row) -> list[Any]:
        return [getattr(row, name) for name in names]

    def decode(values: list[Any]) -> Row:
        return cls(*values)

    return RowCodec(schema, encode, decode)
