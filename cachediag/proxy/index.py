"""Joining capture records to the transcripts they belong to.

A Claude Code transcript names each response by ``message.id`` and ``requestId``; the
proxy's record of the same call carries both, with the request's fingerprint. Joined, a
transcript request gets the fingerprint (marked ``joined``, so the causes named from it
say ``cause_source: capture``), and the server's diagnostics when the transcript lacks
them; times, TTLs and the order of the stream stay the transcript's. A miss whose request
and predecessor both found their records gets every cause exactly; one with only one of
them keeps the transcript's inference.

The index (``analyze``, ``explain``) is built from a cheap scan (``bytes.find`` of the id
keys, no JSON parsing) and parses only the lines a lookup asks for; ``refresh`` scans
only what the day files gained. Live readers (the status line, ``watch``) use no index:
``LiveJoin`` finds each record by its time. Standard library only.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cachediag.ingest.jsonl import BadLine, parse_line
from cachediag.model import BlockPrint, Fingerprint, RequestRecord, ServerReason, SessionLog
from cachediag.proxy.logfiles import day_files, default_log_dir
from cachediag.safefiles import open_regular

_AT = re.compile(rb'"at"\s*:\s*(-?[0-9][0-9.eE+-]*)')
_AT_WITHIN = 64
"""Bytes of a line's start where the proxy's ``"at"`` is looked for."""
_ID_KEYS = (b'"message_id":"', b'"request_id":"')
"""As the proxy writes them (compact JSON): found with ``bytes.find``, several times faster
than a regular expression over a month of records."""
_TUPLE_FIELDS = frozenset(
    {"system_hashes", "system_cache_control", "betas", "message_hashes", "message_roles"}
)
_FIELDS = {f.name for f in dataclasses.fields(Fingerprint)} - {"joined"}


@dataclass(slots=True, frozen=True)
class Captured:
    """What a capture record adds to a transcript request."""

    fingerprint: Fingerprint
    server_reason: ServerReason | None
    applied_edits: int


def default_captures_dir() -> Path | None:
    """The proxy's log folder when it exists (the default of ``--captures``)."""
    folder = default_log_dir()
    return folder if folder.is_dir() else None


def fingerprint_from_json(obj: Any) -> Fingerprint | None:
    """A record's ``fingerprint`` object, read without pydantic (the warm path calls this);
    ``None`` when it is not one."""
    if not isinstance(obj, dict) or not obj.keys() <= _FIELDS:
        return None
    values: dict[str, Any] = {}
    try:
        for key, value in obj.items():
            if key == "tools" and isinstance(value, list):
                value = tuple((str(name), str(digest)) for name, digest in value)
            elif key in ("tool_blocks", "system_blocks") and isinstance(value, list):
                value = tuple(BlockPrint(*row) for row in value)
            elif key == "message_blocks" and isinstance(value, list):
                value = tuple(tuple(BlockPrint(*row) for row in msg) for msg in value)
            elif key in _TUPLE_FIELDS and isinstance(value, list):
                value = tuple(sorted(map(str, value)) if key == "betas" else map(str, value))
            values[key] = value
    except (TypeError, ValueError):
        return None
    return Fingerprint(**values, joined=True)


def captured_from_line(raw: bytes) -> Captured | None:
    try:
        obj = parse_line(raw)
    except BadLine:
        return None
    if "failure" in obj or "input_tokens" not in obj:
        return None  # a request without an answer is not the transcript's response
    fp = fingerprint_from_json(obj.get("fingerprint"))
    if fp is None:
        return None
    reason = obj.get("server_reason")
    server = None
    if isinstance(reason, dict) and (reason.get("type") is None or isinstance(reason["type"], str)):
        missed = reason.get("missed_tokens")
        server = ServerReason(reason.get("type"), missed if isinstance(missed, int) else None)
    edits = obj.get("applied_edits")
    return Captured(fp, server, edits if isinstance(edits, int) else 0)


@dataclass(slots=True)
class CaptureIndex:
    """Where each message id and request id sits in a capture folder."""

    folder: Path
    where: dict[str, tuple[str, int]] = field(default_factory=dict)
    """id -> (day file name, offset of its line)."""
    scanned: dict[str, tuple[int, int]] = field(default_factory=dict)
    """day file name -> (inode, bytes scanned: always the end of a whole line)."""
    times: list[tuple[float, str, int, int]] = field(default_factory=list)
    """(answered at, day file name, offset, line number) of every record with a time, for
    the records answered around a session that its transcripts lack (``proxy.missing``)."""
    lines: dict[str, int] = field(default_factory=dict)
    """day file name -> whole lines scanned."""
    _sorted: bool = True

    def refresh(self) -> int:
        """Scan what the day files gained since the last call; the lines indexed."""
        added = 0
        for path in day_files(self.folder):
            try:
                info = path.stat()
            except OSError:
                continue
            inode, done = self.scanned.get(path.name, (info.st_ino, 0))
            if inode != info.st_ino or info.st_size < done:
                inode, done = info.st_ino, 0  # replaced or cut: read it again
            if done == 0:
                self.lines[path.name] = 0
                self.times = [t for t in self.times if t[1] != path.name]
            if info.st_size > done:
                done, n = self._scan(path, done)
                added += n
                self.lines[path.name] = self.lines.get(path.name, 0) + n
            self.scanned[path.name] = (inode, done)
        return added

    def _scan(self, path: Path, start: int) -> tuple[int, int]:
        try:
            with open_regular(str(path), follow=False) as fp:
                fp.seek(start)
                data = fp.read()
        except OSError:
            return start, 0
        end = data.rfind(b"\n") + 1  # a half-written last line waits for its newline
        pos = count = 0
        while pos < end:
            nl = data.index(b"\n", pos)
            # The proxy writes "at" first: a look at the line's start, not a search of it.
            when = _AT.match(data, pos + 1, min(nl, pos + _AT_WITHIN))
            if data.startswith(b"{", pos) and when is not None:
                at = float(when.group(1))
                if self.times and at < self.times[-1][0]:
                    self._sorted = False
                line = self.lines.get(path.name, 0) + count + 1
                self.times.append((at, path.name, start + pos, line))
            for key in _ID_KEYS:
                at = data.find(key, pos, nl)
                if at >= 0:
                    value_end = data.find(b'"', at + len(key), nl)
                    if value_end > 0:
                        value = data[at + len(key) : value_end].decode("utf-8", "replace")
                        self.where.setdefault(value, (path.name, start + pos))
            count += 1
            pos = nl + 1
        return start + end, count

    def between(
        self, since: float, until: float, skip: frozenset[tuple[str, int]] = frozenset()
    ) -> list[tuple[Path, RequestRecord]]:
        """The requests answered from ``since`` to ``until``, each with its day file;
        lines at ``skip`` (day file name, offset) are not read."""
        from cachediag.proxy.missing import record_from_line

        if not self._sorted:
            self.times.sort()
            self._sorted = True
        lo = bisect.bisect_left(self.times, (since, "", -1, -1))
        out = []
        for at, name, offset, line in self.times[lo:]:
            if at > until:
                break
            if (name, offset) in skip:
                continue
            raw = _read_line(self.folder / name, offset)
            record = None if raw is None else record_from_line(raw, line)
            if record is not None:
                out.append((self.folder / name, record))
        return out

    def lookup(self, *ids: str | None) -> Captured | None:
        """The record of the first id found (``message.id``, then ``requestId``)."""
        for key in ids:
            if key is None or key not in self.where:
                continue
            name, offset = self.where[key]
            line = _read_line(self.folder / name, offset)
            if line is not None:
                return captured_from_line(line)
        return None


def _read_line(path: Path, offset: int) -> bytes | None:
    try:
        fp = open_regular(str(path), follow=False)
    except OSError:
        return None
    with fp:
        fd = fp.fileno()
        chunks = []
        pos = offset
        while True:
            block = os.pread(fd, 1 << 16, pos)
            if not block:
                break
            nl = block.find(b"\n")
            if nl >= 0:
                chunks.append(block[:nl])
                break
            chunks.append(block)
            pos += len(block)
        return b"".join(chunks)


def join_record(record: RequestRecord, index: CaptureIndex) -> RequestRecord:
    if record.fingerprint is not None:
        return record  # the log saw the body itself
    return with_capture(record, index.lookup(record.message_id, record.request_id))


def with_capture(record: RequestRecord, found: Captured | None) -> RequestRecord:
    """``record`` with what its capture adds; the transcript's own diagnostics win."""
    if found is None:
        return record
    return dataclasses.replace(
        record,
        fingerprint=found.fingerprint,
        server_reason=record.server_reason or found.server_reason,
        applied_edits=record.applied_edits or found.applied_edits,
    )


def join_session(log: SessionLog, index: CaptureIndex) -> SessionLog:
    """``log`` with every request that has a capture record given its fingerprint, and
    the captured requests its transcripts lack added to it (``proxy.missing``)."""
    joined: list[float] = []
    known: set[tuple[str, int]] = set()
    for stream in log.streams.values():
        stream.items = [
            join_record(item, index) if isinstance(item, RequestRecord) else item
            for item in stream.items
        ]
        for item in stream.items:
            if isinstance(item, RequestRecord):
                known.update(
                    index.where[i] for i in (item.message_id, item.request_id) if i in index.where
                )
                if item.fingerprint is not None:
                    joined.append(item.at)
    if joined and index.times:
        from cachediag.proxy.missing import add_missing

        since, until = min(joined) - WINDOW_BEFORE_S, max(joined) + WINDOW_AFTER_S
        add_missing(log, index.between(since, until, frozenset(known)))
    return log


@dataclass(slots=True)
class CaptureJoin:
    """The join as a picklable callable for the pipeline; the index is built once per
    process, on first use (or by ``load`` before workers fork)."""

    folder: Path
    _index: CaptureIndex | None = None

    def load(self) -> CaptureIndex:
        if self._index is None:
            self._index = CaptureIndex(self.folder)
            self._index.refresh()
        return self._index

    def __call__(self, log: SessionLog) -> SessionLog:
        return join_session(log, self.load())


WINDOW_BEFORE_S = 10.0
WINDOW_AFTER_S = 900.0
"""A capture record is stamped when the answer's last byte arrives; Claude Code stamps the
transcript lines of the same answer as its blocks complete, so no later than that (a
long stream: minutes earlier). Records outside this window around the transcript's time
are not looked at; the scan starts at its beginning and stops at the record."""
_BLOCK = 1 << 16


class LiveJoin:
    """The join for readers that see one request at a time (status line, live view).

    No index to build or keep: day files are in the order answers completed, so the
    record of a request is found by a binary search for its time and a scan of the few
    minutes around it: a handful of reads, however long the day's file.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __call__(self, item: Any) -> Any:
        if not isinstance(item, RequestRecord) or item.fingerprint is not None:
            return item
        if item.message_id is None:
            return item
        return with_capture(item, find_captured(self.folder, item.message_id, item.at))


def live_join() -> LiveJoin | None:
    """The join from the proxy's default folder, or ``None`` when there is none."""
    folder = default_captures_dir()
    return LiveJoin(folder) if folder is not None else None


def find_captured(folder: Path, message_id: str, at: float) -> Captured | None:
    """The capture record of ``message_id`` answered around ``at``, or ``None``."""
    from cachediag.proxy.logfiles import day_file_name

    needle = b'"message_id":"' + message_id.encode() + b'"'
    names = dict.fromkeys((day_file_name(at - WINDOW_BEFORE_S), day_file_name(at + WINDOW_AFTER_S)))
    for name in names:
        try:
            fp = open_regular(str(folder / name), follow=False)
        except OSError:
            continue
        with fp:
            line = _scan_window(fp.fileno(), needle, at - WINDOW_BEFORE_S, at + WINDOW_AFTER_S)
        if line is not None:
            return captured_from_line(line)
    return None


def _line_at(fd: int, offset: int) -> tuple[int, float | None]:
    """The start of the first whole line at or after ``offset`` and its record's time."""
    block = os.pread(fd, _BLOCK, offset)
    start = 0
    if offset > 0:
        nl = block.find(b"\n")
        if nl < 0:
            return offset + len(block), None
        start = nl + 1
    end = block.find(b"\n", start)
    match = _AT.search(block, start, end if end >= 0 else len(block))
    return offset + start, float(match.group(1)) if match else None


def _scan_window(fd: int, needle: bytes, since: float, until: float) -> bytes | None:
    size = os.fstat(fd).st_size
    lo, hi = 0, size
    while hi - lo > _BLOCK:  # the last line starting before ``since``, roughly
        mid = (lo + hi) // 2
        _, when = _line_at(fd, mid)
        if when is not None and when < since:
            lo = mid
        else:
            hi = mid
    pos, carry = lo, b""
    while pos < size:
        block = os.pread(fd, _BLOCK * 4, pos)
        if not block:
            break
        data = carry + block
        found = data.find(needle)
        if found >= 0:
            start = data.rfind(b"\n", 0, found) + 1
            end = data.find(b"\n", found)
            if end < 0:  # the line goes on past this block
                rest = os.pread(fd, 1 << 24, pos + len(block))
                cut = rest.find(b"\n")
                return data[start:] + (rest[:cut] if cut >= 0 else b"")
            return data[start:end]
        last_nl = data.rfind(b"\n")
        tail_start = data.rfind(b"\n", 0, last_nl) + 1 if last_nl > 0 else 0
        match = _AT.search(data, tail_start)
        if match is not None and float(match.group(1)) > until:
            break
        carry = data[last_nl + 1 :] if last_nl >= 0 else data
        pos += len(block)
    return None
