"""The sniff stage (``ingest.stages``): an input opened and its first lines read.

Most session files are a few kB, and a history of 10,000 of them spent more on reading
line by line (peeking, chaining, chunking) than on the lines themselves: a file the walk
saw at ``SMALL_FILE_BYTES`` or less is read in one call and scanned where it lies, its
first lines found as one block. A larger one, or stdin, streams in chunks, its first
lines peeked. Both give the same lines, numbers and answers (tests/test_whole_files.py).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO

from cachediag.ingest.files import open_found, open_found_raw
from cachediag.ingest.jsonl import OVERLONG
from cachediag.ingest.native import SCANNER
from cachediag.ingest.needles import MAX_LINE_BYTES, VERSION_KEY, major_from_v2
from cachediag.ingest.stages import SNIFF_LINES, SSE_STARTS, Detected, Sniffed

SMALL_FILE_BYTES = 1 << 20
"""A file no larger is read whole (holding it costs less than the 4 MiB read buffer)."""


def sniff_file(path: Path, size: int | None) -> Sniffed:
    """``path`` opened and its first lines read; ``size``: what the walk saw (``None``:
    not known, so streamed). A file that grew past ``size`` since is streamed from its
    start. Raises ``OSError`` (``UnsafeFile`` for anything but a regular file:
    ``open_found``); the caller closes ``fp``."""
    source = str(path)
    if size is None or size > SMALL_FILE_BYTES:
        return _sniffed_stream(open_found(path), source)
    raw = open_found_raw(path)
    try:
        data = _read_up_to(raw, size + 1)
        if len(data) > size:
            raw.seek(0)
            return _sniffed_stream(io.BufferedReader(raw), source)
        end, plain, v2 = scan_head(data, SNIFF_LINES)
        return Sniffed(source, raw, [], data, data[:end], plain, v2)
    except BaseException:
        raw.close()
        raise


def sniff_stream(stream: IO[bytes], source: str) -> Sniffed:
    """The first lines of a stream (stdin), peeked; the stream stays open."""
    return Sniffed(source, stream, peek(stream))


def open_file(path: Path, size: int | None) -> Detected:
    """Sniffed and detected, for callers outside the reader that want only the verdict
    (is it a log, which format: ``warm``, ``statusline --check``). The reader runs the
    two stages itself; the caller closes ``fp``."""
    from cachediag.ingest.detect import detect  # the one step forward, for these callers

    sniffed = sniff_file(path, size)
    try:
        return detect(sniffed)
    except BaseException:
        sniffed.fp.close()
        raise


def _read_up_to(raw: IO[bytes], limit: int) -> bytes:
    """Up to ``limit`` bytes of an unbuffered file: one read in the usual case (a file of
    the size the walk saw, one byte less than ``limit``). One that comes back shorter (the
    file shrank, a filesystem that answers in pieces, a disk error part-way, which the
    next read then raises) is followed by more, as a buffered reader's would be."""
    data = raw.read(limit)
    if len(data) >= limit - 1:
        return data
    parts = [data]
    got = len(data)
    while got < limit and (more := raw.read(limit - got)):
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _sniffed_stream(fp: IO[bytes], source: str) -> Sniffed:
    try:
        return Sniffed(source, fp, peek(fp))
    except BaseException:
        fp.close()
        raise


def py_scan_head(data: bytes, lines: int) -> tuple[int, bool, bool]:
    """One pass over the first ``lines`` lines of a file held whole: where they end,
    whether they are plain (no NUL byte, no line starting as an event stream's do:
    ``detect`` may then stop at the first line) and whether the first version each line
    names is 2 or later (``needles._written_by_v2_or_later``).

    Line by line, never the whole block per question: a search over every byte of a
    few kB of JSON costs more than the twenty lines' starts and keys. ``_scan.scan_head``
    is its compiled twin (tests/test_scan_ext.py holds them to the same answers)."""
    find = data.find
    starts = data.startswith
    size = len(data)
    pos = 0
    plain = True
    named = False
    v2 = True
    for _ in range(lines):
        if pos >= size:
            break
        newline = find(b"\n", pos)
        stop = size if newline < 0 else newline + 1
        if starts(SSE_STARTS, pos):
            plain = False
        at = find(VERSION_KEY, pos, stop) + 11
        if at > 10:
            named = True
            v2 = v2 and major_from_v2(data[at : at + 1])
        pos = stop
    if b"\x00" in data[:pos]:
        plain = False
    return pos, plain, named and v2


scan_head = SCANNER[2] if SCANNER is not None else py_scan_head


def peek(stream: IO[bytes]) -> list[bytes]:
    """The first lines, each held to ``MAX_LINE_BYTES``: a longer one (a 1 GB line, a
    file of zero bytes) is read past in chunks and stands as ``OVERLONG``, a bad line."""
    head: list[bytes] = []
    while len(head) < SNIFF_LINES:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            break
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            del raw  # never hold two of them
            while (chunk := stream.readline(1 << 20)) and not chunk.endswith(b"\n"):
                pass
            head.append(OVERLONG)
            continue
        head.append(raw)
    return head
