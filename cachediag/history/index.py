"""Rows of every transcript, each file read once: what changed since the last run is all
that is read again.

Per file the index keeps its identity and what was read of it (a ``follow.files``
cursor: device, inode, size, mtime and ctime, the offset past the last complete line, a
hash of the bytes before it and of blocks sampled over the whole: the checks the status
line uses to tell an append from a rewrite at the same size), the rows of its complete
lines, and those of an unfinished last line apart (read again once the line grows).

For each file asked for:

- unchanged (same identity, size, mtime and ctime): its rows come from the index;
- grown, with every byte read before still in place: only the new bytes are parsed, from
  the offset where the last read stopped, and their rows appended;
- replaced, truncated, rewritten or new: the whole file is parsed again;
- gone: it contributes nothing, and its entry is dropped.

``parse(path, data, start, end)`` turns complete lines (``data[:end]``, which starts at
byte ``start`` of the file) into rows, and says how many newlines they hold (the
cursor's ``lines``, counted in the parse's own pass); ``data`` is the reader's buffer,
reused: a row must not keep a view of it. It must give, for a file cut at line
boundaries, the rows of the whole file in the same order (a reader of independent JSON
lines does), so a report gives the same bytes with or without the index. A file that
cannot be opened is left to the caller (the ``OSError`` is raised), as a read without
the index would be.
"""

from __future__ import annotations

import os
import time

from cachediag.follow.files import change_of, cursor, open_regular_fd, unchanged_since
from cachediag.history import store

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and dataclasses cost the status line's warm path milliseconds
    from collections.abc import Callable, Sequence
    from typing import Any

    Row = Any
    Parse = Callable[[str, bytearray, int, int], tuple[list[Any], int]]


class RowCodec:
    """How rows go to JSON and back: ``schema`` names the row type and its fields (an
    index of another schema is rebuilt), ``encode`` gives a JSON list, ``decode`` the row
    again, equal to the one encoded."""

    __slots__ = ("decode", "encode", "schema")

    def __init__(
        self,
        schema: str,
        encode: Callable[[Any], list[Any]],
        decode: Callable[[list[Any]], Any],
    ) -> None:
        self.schema = schema
        self.encode = encode
        self.decode = decode


class Stats:
    """What one call did: files answered from the index, grown (only their new bytes
    read), read whole, and gone; bytes parsed; ``incomplete`` when the deadline passed
    before every file was brought up to date (the rows of those left are what the index
    held, none for a new file; the next call goes on)."""

    __slots__ = ("appended", "gone", "incomplete", "parsed_bytes", "read", "unchanged")

    def __init__(self) -> None:
        self.unchanged = 0
        self.appended = 0
        self.read = 0
        self.gone = 0
        self.parsed_bytes = 0
        self.incomplete = False

    def __repr__(self) -> str:
        return "Stats(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


def rows_by_file(
    paths: Sequence[str],
    parse: Parse,
    codec: RowCodec,
    *,
    kind: str,
    root: str | None = None,
    stats: Stats | None = None,
    deadline: float | None = None,
) -> list[list[Row]]:
    """The rows of each of ``paths``, in order, kept in the index ``kind``. Past
    ``deadline`` (``time.monotonic``) no more file is read: what was read is saved and
    ``stats.incomplete`` says the answer is not whole (the status line's budget)."""
    stats = stats if stats is not None else Stats()
    where = store.index_path(kind, root)
    files = load_or_empty(where, codec.schema)["files"]
    if all(p in files and unchanged_since(files[p].get("cursor"), p) for p in paths):
        stats.unchanged += len(paths)
        return [_decode(files[p], codec) for p in paths]
    with store.locked(where):
        index = load_or_empty(where, codec.schema)  # again: another process may have written it
        files = index["files"]
        out: list[list[Row]] = []
        for path in paths:
            if deadline is not None and not stats.incomplete and time.monotonic() > deadline:
                stats.incomplete = True
            if stats.incomplete:
                kept = files.get(path)
                out.append([] if kept is None else _decode(kept, codec))
                continue
            entry, fresh = _refresh(path, files.get(path), parse, codec, stats, deadline)
            if entry is None:
                files.pop(path, None)
                out.append([])
                continue
            files[path] = entry
            # A file read only in part: its rows so far are kept, not handed out (an
            # answer that is not whole is not used; decoding it would cost the budget).
            out.append([] if stats.incomplete else fresh)
        for path in [p for p in files if not os.path.lexists(p)]:
            del files[path]  # transcripts deleted since: their rows go with them
        store.save(where, index)
    return out


def load_or_empty(where: str, schema: str) -> store.Index:
    """The index at ``where``; an empty one in place of one that cannot be used."""
    try:
        return store.load(where, schema)
    except store.BadIndex:
        return {"schema": schema, "files": {}}


def _decode(entry: dict[str, Any], codec: RowCodec) -> list[Row]:
    decode = codec.decode
    return [decode(r) for r in entry["rows"]] + [decode(r) for r in entry["tail"]]


CHUNK_BYTES = 4 << 20
MAX_LINE_BYTES = 16 << 20
"""A line longer than this is skipped (no usage line is near it: such a line is a tool
result or a pasted file), so memory stays bounded whatever a file holds. A parser must
skip such lines too for a read without the index to give the same rows."""


def _refresh(
    path: str,
    entry: dict[str, Any] | None,
    parse: Parse,
    codec: RowCodec,
    stats: Stats,
    deadline: float | None = None,
) -> tuple[dict[str, Any] | None, list[Row]]:
    """The entry of ``path`` brought up to date, and its rows (those just parsed as the
    parse gave them, not encoded and decoded again; none when the read is not whole);
    ``None`` when the file is gone.
    Past ``deadline`` it stops between chunks, with what it read (``stats.incomplete``)."""
    saved = None if entry is None else entry.get("cursor")
    if entry is not None and unchanged_since(saved, path):
        stats.unchanged += 1
        return entry, _decode(entry, codec)
    grown = entry is not None and change_of(path, saved) is None
    try:
        fd = open_regular_fd(path)
    except FileNotFoundError:
        stats.gone += 1
        return None, []
    try:
        st = os.fstat(fd)
        if grown and isinstance(saved, dict) and entry is not None:
            start, lines, rows = saved["offset"], saved["lines"], list(entry["rows"])
            stats.appended += 1
        else:
            start, lines, rows = 0, 0, []
            stats.read += 1
        prior, made = len(rows), []
        done, pos, held, skipping = start, start, 0, False
        # One buffer for the whole read, bytes read straight into it after the unfinished
        # line carried over (``buf[:held]``, from byte ``done``): no chunk is copied, and
        # the parse is handed the buffer and where its complete lines end.
        buf = bytearray(CHUNK_BYTES)
        encode = codec.encode
        with open(fd, "rb", buffering=0, closefd=False) as reader:
            reader.seek(start)
            while True:
                if deadline is not None and time.monotonic() > deadline:
                    stats.incomplete = True
                    break
                if len(buf) < held + CHUNK_BYTES:  # a line longer than a chunk, carried
                    buf.extend(bytes(held + CHUNK_BYTES - len(buf)))
                with memoryview(buf) as view, view[held : held + CHUNK_BYTES] as room:
                    got = reader.readinto(room)
                if not got:
                    break
                pos += got
                stats.parsed_bytes += got
                filled = held + got
                if skipping:  # inside an overlong line: nothing kept until its end
                    cut = buf.find(b"\n", 0, filled)
                    if cut < 0:
                        continue
                    skipping, lines, done = False, lines + 1, pos - got + cut + 1
                    filled -= cut + 1
                    buf[:filled] = buf[cut + 1 : cut + 1 + filled]
                end = buf.rfind(b"\n", 0, filled) + 1
                held = filled
                if end:
                    found, count = parse(path, buf, done, end)
                    made += found
                    rows.extend(encode(r) for r in found)
                    lines += count
                    done += end
                    held = filled - end
                    buf[:held] = buf[end:filled]  # the unfinished line to the front
                if held > MAX_LINE_BYTES:
                    skipping, held = True, 0
        last = []
        if not stats.incomplete and not skipping and buf[:held].strip():
            last = parse(path, buf, done, held)[0]
        tail = [encode(r) for r in last]
        read = (done if stats.incomplete else pos) - start
        return {
            "cursor": cursor(fd, st, start, read, done - start, lines),
            "rows": rows,
            "tail": tail,
        }, [] if stats.incomplete else [codec.decode(r) for r in rows[:prior]] + made + last
    finally:
        os.close(fd)
