"""A session file opened once: read whole when small, else streamed; its format decided.

Most session files are a few kB, and a history of 10,000 of them spent more on reading
line by line (peeking, chaining, chunking) than on the lines themselves: a file the walk
saw at ``SMALL_FILE_BYTES`` or less is read in one call and scanned where it lies, its
format decided from its first lines as one block. A larger one streams in chunks, its
first lines peeked. Both give the same lines, numbers and answers
(tests/test_whole_files.py).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from cachediag.errors import NotALogError
from cachediag.ingest.detect import (
    CLAUDE_CODE,
    SNIFF_LINES,
    SSE_STARTS,
    detect_format,
    looks_like_transcript,
)
from cachediag.ingest.fields import SESSION, TYPE, UUID
from cachediag.ingest.files import open_found, open_found_raw
from cachediag.ingest.lines import OVERLONG, BadLine, parse_line, pieces, scan_chunk, scan_lines
from cachediag.ingest.native import PICKER, SCANNER
from cachediag.ingest.needles import (
    MAX_LINE_BYTES,
    SPACED_SIDECHAIN,
    VERSION_KEY,
    WANTED,
    chain_needles,
    major_from_v2,
    needles_for,
)

SMALL_FILE_BYTES = 1 << 20
"""A file no larger is read whole (holding it costs less than the 4 MiB read buffer)."""


@dataclass(slots=True)
class Opened:
    """A file opened and its format decided (``fmt``), or why it is not a log (``error``).

    Either ``data`` holds the whole file and ``block`` its first lines (``v2``: they
    name Claude Code 2 or later), or ``fp`` is streamed and ``head`` holds its first
    lines, already read from it."""

    fp: IO[bytes]
    fmt: str | None
    error: NotALogError | None
    head: list[bytes]
    data: bytes | None = None
    block: bytes = b""
    v2: bool = False

    def needles(self, follow_chains: bool) -> tuple[bytes, ...]:
        """``needles.needles_for`` of the file's first lines."""
        if self.data is None:
            return needles_for(self.head, follow_chains)
        if not follow_chains or self.v2:
            return WANTED
        return chain_needles(SPACED_SIDECHAIN in self.block)

    def matching(self, needles: tuple[bytes, ...]) -> Iterator[tuple[int, bytes]]:
        """Numbered lines holding a needle (or not shaped like an object), in order."""
        if self.data is None:
            return matching_lines(self.head, self.fp, needles)
        return _lines_holding(self.data, needles)

    def lines(self) -> Iterable[bytes]:
        """Every line, for the readers of the other formats."""
        if self.data is None:
            return itertools.chain(self.head, self.fp)
        return io.BytesIO(self.data)


def open_file(path: Path, size: int | None) -> Opened:
    """``path`` opened and sniffed; ``size``: what the walk saw (``None``: not known, so
    streamed). A file that grew past ``size`` since is streamed from its start.
    Raises ``OSError`` (``UnsafeFile`` for anything but a regular file: ``open_found``);
    the caller closes ``fp``."""
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
        block = data[:end]
        fmt = CLAUDE_CODE if plain and _transcript_first(block) else None
        try:
            if fmt is None:  # anything unusual is looked at line by line, as a stream is
                fmt = detect_format(_lines_of(block), source)
            return Opened(raw, fmt, None, [], data, block, v2)
        except NotALogError as exc:
            return Opened(raw, None, exc, [], data, block, v2)
    except BaseException:
        raw.close()
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


def _sniffed_stream(fp: IO[bytes], source: str) -> Opened:
    try:
        head, _ = peek(fp)
        try:
            return Opened(fp, detect_format(head, source), None, head)
        except NotALogError as exc:
            return Opened(fp, None, exc, head)
    except BaseException:
        fp.close()
        raise


def py_scan_head(data: bytes, lines: int) -> tuple[int, bool, bool]:
    """One pass over the first ``lines`` lines of a file held whole: where they end,
    whether they are plain (no NUL byte, no line starting as an event stream's do:
    ``detect_format`` may then stop at the first line) and whether the first version
    each line names is 2 or later (``needles._written_by_v2_or_later``).

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


def _transcript_first(block: bytes) -> bool:
    """True when the block's first line is a transcript line (it decides the format)."""
    first = block[: block.find(b"\n") + 1 or len(block)]
    if not first or first.isspace():
        return False
    if PICKER is not None:  # picks a few fields where orjson would build every one
        # A JSON object whose type is a string, with a uuid or session id (strings), is
        # a transcript line; a line with neither needs the whole object to tell.
        fields = PICKER(first)
        if fields is not None and fields[TYPE] is not None and (fields[UUID] or fields[SESSION]):
            return True
    try:
        return looks_like_transcript(parse_line(first))
    except BadLine:
        return False


def _lines_of(block: bytes) -> list[bytes]:
    """The lines of ``block``, each with its newline, as ``peek`` reads them."""
    lines = block.split(b"\n")
    last = lines.pop()
    return [line + b"\n" for line in lines] + ([last] if last else [])


def _lines_holding(data: bytes, needles: tuple[bytes, ...]) -> Iterator[tuple[int, bytes]]:
    """``matching_lines`` over a file read whole: one scan (no line of a file held whole
    can be longer than ``MAX_LINE_BYTES``), a piece at a time (``lines.pieces``)."""
    line = 1
    for first, last in pieces(data, 0, len(data)):
        found, newlines = scan_chunk(data, first, last, needles)
        for index, start, stop in found:
            yield line + index, data[start:stop]
        line += newlines


def peek(stream: IO[bytes]) -> tuple[list[bytes], Iterator[bytes]]:
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
    return head, itertools.chain(head, stream)


def matching_lines(
    head: list[bytes], rest: IO[bytes], needles: tuple[bytes, ...]
) -> Iterator[tuple[int, bytes]]:
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
