"""One session's readers and ledgers, fed only the lines appended since the last read.

The status line (``statusline.track``) restores this from its state file on each run;
``watch`` keeps it alive and asks for every ledger entry as it lands. Both read the same
way: from a file's cursor (``follow.files``) to its last complete line, through the one
transcript reader and the one ledger. Items are not kept once the ledger has them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from cachediag.analysis.ledger import Ledger, LedgerEntry
from cachediag.follow.files import cursor, open_regular_fd
from cachediag.follow.needles import file_needles, needles_of, saved_needles
from cachediag.ingest.jsonl import BadLine
from cachediag.ingest.lines import scan_chunk
from cachediag.ingest.needles import MAX_LINE_BYTES
from cachediag.ingest.transcript import FORMAT, TranscriptReader, agent_kind
from cachediag.model import MAIN_STREAM, RebuildAnnounced, SessionLog, StreamItem, StreamKind

CHUNK_BYTES = 1 << 20
"""Bytes read at a time: a first read of a long transcript stays small in memory."""

OVERLONG = f"line longer than {MAX_LINE_BYTES >> 20} MiB, skipped"

Landed = Callable[[StreamItem, "LedgerEntry | None"], None]
"""Called with every new item (a request or an announced rebuild) once the ledger has
it, and the request's ledger entry (``None`` for a rebuild)."""
BadLineFn = Callable[[str, int, str], None]
"""Called with (file, line number, reason) for each line that was skipped."""


class LiveSession:
    """The streams of one session: its main transcript and the agent files beside it.

    ``transcript`` is the main file (which may not exist yet); any other path read is an
    agent file whose every line belongs to that agent's stream.
    """

    def __init__(
        self,
        transcript: str,
        on_item: Landed | None = None,
        on_bad_line: BadLineFn | None = None,
    ) -> None:
        self.transcript = transcript
        self.log = SessionLog(os.path.basename(transcript), transcript, FORMAT)
        self.log.stream(MAIN_STREAM, StreamKind.MAIN, source=transcript)
        self.ledgers: dict[str, Ledger] = {}
        self.files: dict[str, dict[str, Any]] = {}
        """One cursor per file read (``follow.files``)."""
        self.readers: dict[str, TranscriptReader] = {}
        self.skipped = 0
        self.on_item = on_item
        self.on_bad_line = on_bad_line
        self.enrich: Callable[[StreamItem], StreamItem] | None = None
        """Applied to each new item before its ledger sees it: the capture proxy's join
        (``proxy.index.LiveJoin``) gives requests the fingerprints of their bodies."""

    def reader(self, path: str) -> TranscriptReader:
        found = self.readers.get(path)
        if found is None:
            pinned = None
            if path != self.transcript:
                agent_id = os.path.basename(path)[: -len(".jsonl")].removeprefix("agent-")
                pinned = (f"agent-{agent_id}", agent_kind(agent_id))
                self.log.stream(pinned[0], pinned[1], source=path)
            found = self.readers[path] = TranscriptReader(self.log, path, file_stream=pinned)
        return found

    def read(
        self, path: str, until: int | None = None, stop: Callable[[], bool] | None = None
    ) -> bool:
        """Feed the complete lines appended to ``path`` since its cursor, up to byte
        ``until`` when given; ``stop`` is asked after every block, and a read it ends
        keeps its place for the next one. True when the read got to the end (or to
        ``until``). Raises ``OSError`` when the file cannot be read (or is not a
        regular file). A line longer than ``MAX_LINE_BYTES`` is skipped as a bad line."""
        fd = open_regular_fd(path)  # first: a file that cannot be read starts no stream
        reader = self.reader(path)
        saved = self.files.get(path, {})
        offset, number = int(saved.get("offset", 0)), int(saved.get("lines", 0))
        skipping = bool(saved.get("skip"))
        needles = saved_needles(saved, chains=reader.file_stream is None)
        # One buffer read into again and again: a fresh ``bytes`` per block costs page
        # faults on every megabyte (as the ingest reader found).
        buffer = bytearray(CHUNK_BYTES)
        with os.fdopen(fd, "rb", buffering=0) as fp, memoryview(buffer) as into:
            st = os.fstat(fd)
            fp.seek(offset)
            limit = None if until is None else max(0, until - offset)
            carry: list[bytes] = []
            carried = read = consumed = 0
            done = False
            while True:
                if limit is not None and read >= limit:
                    done = True
                    break
                if stop is not None and read and stop():
                    break
                n = fp.readinto(
                    into[: CHUNK_BYTES if limit is None else min(CHUNK_BYTES, limit - read)]
                )
                if not n:
                    done = True
                    break
                # The buffer is valid until the next read: what is kept is copied.
                block = buffer if n == CHUNK_BYTES else buffer[:n]
                if offset == 0 and not read and "needles" not in saved:
                    # As analyze: the needles this file needs, from its first lines.
                    needles = file_needles(bytes(block), chains=reader.file_stream is None)
                read += len(block)
                start = 0
                if skipping:
                    nl = block.find(b"\n")
                    if nl < 0:
                        consumed += len(block)
                        continue
                    number += 1
                    self._bad(reader, number, OVERLONG)
                    skipping = False
                    consumed += nl + 1
                    start = nl + 1
                # A half-written last line waits for its newline (formats.md §1).
                end = block.rfind(b"\n", start) + 1
                if end == 0:
                    if start < len(block):
                        carry.append(bytes(block[start:]))
                        carried += len(block) - start
                    if carried > MAX_LINE_BYTES:
                        # Never held whole: dropped, and skipped up to its newline.
                        consumed += carried
                        carry, carried, skipping = [], 0, True
                    continue
                if carry:
                    first = block.find(b"\n", start) + 1
                    line = b"".join([*carry, block[start:first]])
                    carry, carried = [], 0
                    number = self._feed_lines(reader, line, len(line), needles, number)
                    consumed += len(line)
                    start = first
                number = self._feed_lines(reader, block, end, needles, number, start)
                consumed += end - start
                if end < len(block):
                    carry.append(bytes(block[end:]))
                    carried = len(block) - end
            self.files[path] = cursor(
                fd, st, offset, read, consumed, number, skip=skipping, needles=needles_of(needles)
            )
        return done

    def _feed_lines(
        self,
        reader: TranscriptReader,
        data: bytes | bytearray,
        end: int,
        needles: tuple[bytes, ...],
        number: int,
        first: int = 0,
    ) -> int:
        """Feed the lines of ``data[first:end]`` (whole lines) that the ingest scanner picks,
        as ``analyze`` does: those holding a needle, and any not shaped like a JSON object
        (a bad line, counted); returns the line count."""
        if end - first > MAX_LINE_BYTES and data.count(b"\n", first, end) == 1:
            self._bad(reader, number + 1, OVERLONG)
            return number + 1
        # The scanner reads any buffer (the read buffer is a bytearray); lines leave as
        # bytes of their own, as the ingest reader's do.
        found, newlines = scan_chunk(data, first, end, needles)  # type: ignore[arg-type,unused-ignore]
        with memoryview(data) as view:
            for index, start, stop in found:
                self._feed(reader, view[start:stop].tobytes(), number + index + 1)
        return number + newlines

    def _bad(self, reader: TranscriptReader, number: int, reason: str) -> None:
        self.skipped += 1
        if self.on_bad_line is not None:
            self.on_bad_line(reader.source, number, reason)

    def _feed(self, reader: TranscriptReader, raw: bytes, number: int) -> None:
        try:
            item = reader.feed_line(raw, number)
        except BadLine as exc:
            self._bad(reader, number, str(exc))
            return
        if item is None:
            return
        if self.enrich is not None:
            item = self.enrich(item)
        entry = self.ledgers.setdefault(item.stream, Ledger()).feed(item)
        # The items themselves are not kept: the ledger has what the summaries need.
        self.log.streams[item.stream].items.clear()
        self.landed(item, entry)
        if entry is None and self.enrich is not None and isinstance(item, RebuildAnnounced):
            self._captured_compaction(item)

    def _captured_compaction(self, boundary: RebuildAnnounced) -> None:
        """Claude Code 2.1.332 writes no transcript for its compaction call: with the
        capture proxy's records the call lands in a compaction stream of its own, with
        its tokens and cost (as ``analyze --captures`` counts it)."""
        from cachediag.proxy.missing import captured_compaction

        ledger = self.ledgers.get(boundary.stream)
        prev = None if ledger is None else ledger.prev
        record = captured_compaction(self.enrich, self.log, prev, boundary)
        if record is not None:
            self.landed(record, self.ledgers.setdefault(record.stream, Ledger()).feed(record))

    def landed(self, item: StreamItem, entry: LedgerEntry | None) -> None:
        """A new item went through its stream's ledger (subclasses keep more)."""
        if self.on_item is not None:
            self.on_item(item, entry)
