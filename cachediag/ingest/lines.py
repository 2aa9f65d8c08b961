"""The scan stage (``ingest.stages``): the lines that can matter, found by byte search.

The JSON-line primitives this module once held live in ``ingest.jsonl`` (a leaf every
reader shares); they are still found here for modules outside ``ingest``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import IO

from cachediag.ingest.jsonl import OVERLONG as OVERLONG
from cachediag.ingest.jsonl import BadLine as BadLine
from cachediag.ingest.jsonl import JsonObject as JsonObject
from cachediag.ingest.jsonl import LineFilter as LineFilter
from cachediag.ingest.jsonl import iter_objects as iter_objects
from cachediag.ingest.jsonl import parse_line as parse_line
from cachediag.ingest.jsonl import parse_numbered as parse_numbered
from cachediag.ingest.jsonl import parsed_lines as parsed_lines
from cachediag.ingest.native import SCANNER
from cachediag.ingest.needles import MAX_LINE_BYTES, py_wanted_lines
from cachediag.ingest.stages import Detected, ScannedLines


def scan(found: Detected) -> ScannedLines:
    """Numbered lines of a detected input holding one of its needles (or not shaped like
    an object), in order: a file held whole in one scan, a stream from its peeked head
    on."""
    sniffed = found.sniffed
    if sniffed.data is None:
        return matching_lines(sniffed.head, sniffed.fp, found.needles)
    return _lines_holding(sniffed.data, found.needles)


def _lines_holding(data: bytes, needles: tuple[bytes, ...]) -> ScannedLines:
    """``matching_lines`` over a file read whole: one scan (no line of a file held whole
    can be longer than ``MAX_LINE_BYTES``), a piece at a time (``pieces``)."""
    line = 1
    for first, last in pieces(data, 0, len(data)):
        found, newlines = scan_chunk(data, first, last, needles)
        for index, start, stop in found:
            yield line + index, data[start:stop]
        line += newlines


def matching_lines(head: list[bytes], rest: IO[bytes], needles: tuple[bytes, ...]) -> ScannedLines:
    """Numbered lines holding a needle: the peeked head, then the rest of the stream.

    The head is scanned as one block, as the rest is (a small session file is mostly
    head); with an overlong line in it, line by line."""
    if OVERLONG in head:
        for number, raw in enumerate(head, start=1):
            text = raw.strip()
            odd = text and not (text.startswith(b"{") and text.endswith(b"}"))
            if odd or any(needle in raw for needle in needles):
                yield number, raw
    elif head:
        block = b"".join(head)
        found, _ = scan_chunk(block, 0, len(block), needles)
        for index, start, stop in found:
            yield index + 1, block[start:stop]
    yield from scan_lines(rest, needles, first_line=len(head) + 1)


CHUNK_BYTES = 4 << 20
"""Fewer, larger reads: of the sizes measured on a page-cached tree, 4 MiB cost least
(docs/benchmarks.md)."""
_OPEN, _CLOSE, _CR = ord("{"), ord("}"), ord("\r")


_BUFFERS: list[bytearray] = []
"""Read buffers no scan is using. A fresh 4 MiB ``bytes`` per read costs page faults on
every chunk (sys time growing with the input); a scan takes one of these and gives it
back."""


def scan_lines(
    stream: IO[bytes], needles: tuple[bytes, ...], first_line: int = 1
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, raw_line)`` for the lines holding any of ``needles``, and for
    every line not shaped like a JSON object, so that its parse fails and it is counted.

    Lines that cannot matter (tool output, progress: most of a transcript) are skipped
    by a C-level search over 4 MiB chunks instead of parsing each line; memory stays
    bounded by the chunk and the longest line, not by the file. Chunks are scanned where
    they were read, into a buffer reused from file to file: only a line cut by a chunk
    boundary is copied to be joined.
    """
    fits = _BUFFERS and len(_BUFFERS[-1]) == CHUNK_BYTES  # tests read in tiny chunks
    buffer = _BUFFERS.pop() if fits else bytearray(CHUNK_BYTES)
    try:
        yield from _scan_chunks(stream, needles, first_line, buffer)
    finally:
        if len(buffer) == CHUNK_BYTES and len(_BUFFERS) < 4:
            _BUFFERS.append(buffer)


def _chunks(stream: IO[bytes], buffer: bytearray) -> Iterator[tuple[bytes | bytearray, int]]:
    """``(chunk, size)``: the stream's next bytes are ``chunk[:size]``, up to ``len(buffer)``
    at a time; ``chunk`` is ``buffer`` itself when read into (valid until the next chunk is
    asked for), never a copy: a file shorter than the buffer (most session files) is
    scanned where it was read. Size 0 ends."""
    readinto = getattr(stream, "readinto", None)
    if readinto is None:  # a stream without readinto: a fresh chunk per read
        while block := stream.read(len(buffer)):
            yield block, len(block)
        yield b"", 0
        return
    while n := readinto(buffer):
        yield buffer, n
    yield b"", 0


def _scan_chunks(
    stream: IO[bytes], needles: tuple[bytes, ...], line: int, buffer: bytearray
) -> Iterator[tuple[int, bytes]]:
    carry: list[bytes] = []
    carried = 0
    skipping = False
    for block, size in _chunks(stream, buffer):
        cut = 0
        if skipping:  # inside a line longer than the cap: on to its newline, unread
            cut = block.find(b"\n", 0, size) + 1
            if size and cut == 0:
                continue
            yield line, OVERLONG
            line += 1
            skipping = False
        elif carry:
            cut = block.find(b"\n", 0, size) + 1 if size else 0
            if size and cut == 0:  # one line longer than a chunk: keep reading
                carry.append(bytes(block[:size]))
                carried += size
                if carried > MAX_LINE_BYTES:  # never held whole: skipped as a bad line
                    carry, carried, skipping = [], 0, True
                continue
            joined = b"".join([*carry, block[:cut]])
            carry, carried = [], 0
            if len(joined) > MAX_LINE_BYTES:
                yield line, OVERLONG
                line += 1
            else:
                found, newlines = scan_chunk(joined, 0, len(joined), needles)
                for index, start, stop in found:
                    yield line + index, joined[start:stop]
                line += newlines
        if not size:
            return
        end = block.rfind(b"\n", 0, size) + 1
        if end > cut:
            # Lines leave as bytes of their own: the buffer is read into again.
            view = memoryview(block)
            for first, last in pieces(block, cut, end):
                found, newlines = scan_chunk(block, first, last, needles)
                for index, start, stop in found:
                    yield line + index, view[start:stop].tobytes()
                line += newlines
            view.release()
        if end < size:
            carry.append(bytes(block[max(end, cut) : size]))
            carried = len(carry[0])


PIECE_BYTES = 1 << 16
"""What one ``scan_chunk`` call looks at. It answers with a tuple per line it takes, and
a chunk of lines that are all bad (``yes``: 2 bytes a line) made 2 million of them at
once, 500 MB; a piece of 64 KiB makes at most 32,768 (4 MB). The calls cost nothing
next to the scan."""


def pieces(buf: bytes | bytearray, first: int, end: int) -> Iterator[tuple[int, int]]:
    """``buf[first:end]`` as ranges of whole lines of about ``PIECE_BYTES`` (a longer
    line is a range of its own), in order; each but the last ends after a newline."""
    while end - first > PIECE_BYTES:
        stop = buf.rfind(b"\n", first, first + PIECE_BYTES) + 1
        if stop == 0:  # one line longer than a piece
            stop = buf.find(b"\n", first + PIECE_BYTES, end) + 1 or end
        yield first, stop
        first = stop
    if first < end:
        yield first, end


def py_scan_chunk(
    buf: bytes | bytearray, first: int, end: int, needles: tuple[bytes, ...]
) -> tuple[list[tuple[int, int, int]], int]:
    """The Python twin of ``_scan.scan_chunk``: for the lines of ``buf[first:end]``
    (``first`` begins a line), ``(index, start, stop)`` of each line holding a needle or
    not blank and not ``{...}`` once stripped, and how many newlines the range holds."""
    if not 0 <= first <= end <= len(buf):
        raise ValueError("start and end must satisfy 0 <= start <= end <= len(data)")
    data = buf[first:end] if first else buf
    span = end - first
    starts = set(py_wanted_lines(data, span, needles))
    line_starts, newlines, well_formed = _line_starts(data, span)
    if not well_formed:
        starts |= _odd_lines(data, span)
    found = []
    for start in sorted(starts):
        stop = data.find(b"\n", start, span)
        stop = span if stop < 0 else stop + 1
        found.append((bisect_left(line_starts, start), first + start, first + stop))
    return found, newlines


def _line_starts(buf: bytes | bytearray, end: int) -> tuple[list[int], int, bool]:
    """Where each line of ``buf[:end]`` starts, how many newlines it holds, and whether
    every line is blank or ``{...}`` (a cheap test; ``_odd_lines`` is the exact one).

    One ``find`` per line: cheaper than counting newlines and ``}\\n`` pairs in separate
    passes over the whole chunk.
    """
    starts = [0]
    ok = True
    pos = newlines = 0
    find = buf.find
    while (nl := find(b"\n", pos, end)) >= 0:
        newlines += 1
        if nl > pos:
            last = buf[nl - 1]
            if buf[pos] != _OPEN or (
                last != _CLOSE and not (last == _CR and nl - 1 > pos and buf[nl - 2] == _CLOSE)
            ):
                ok = False
        pos = nl + 1
        starts.append(pos)
    if pos < end and not _object_shaped(buf[pos:end].strip()):
        ok = False
    return starts, newlines, ok


def _object_shaped(text: bytes | bytearray) -> bool:
    return not text or (text.startswith(b"{") and text.endswith(b"}"))


def _odd_lines(buf: bytes | bytearray, end: int) -> set[int]:
    """Starts of the lines of ``buf[:end]`` that are not blank and not ``{...}``."""
    odd: set[int] = set()
    start = 0
    while start < end:
        stop = buf.find(b"\n", start, end)
        stop = end if stop < 0 else stop
        if not _object_shaped(buf[start:stop].strip()):
            odd.add(start)
        start = stop + 1
    return odd


scan_chunk = SCANNER[0] if SCANNER is not None else py_scan_chunk
