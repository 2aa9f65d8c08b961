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
from cachediag.follow.files import cursor
from cachediag.ingest.lines import BadLine, parse_line
from cachediag.ingest.needles import WANTED, WANTED_WITH_CHAINS, wanted_lines
from cachediag.ingest.transcript import FORMAT, TranscriptReader, agent_kind
from cachediag.model import MAIN_STREAM, SessionLog, StreamItem, StreamKind

CHUNK_BYTES = 1 << 20
"""Bytes read at a time: a first read of a long transcript stays small in memory."""

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

    def read(self, path: str, until: int | None = None) -> None:
        """Feed the complete lines appended to ``path`` since its cursor, up to byte
        ``until`` when given. Raises ``OSError`` when the file cannot be read."""
        reader = self.reader(path)
        saved = self.files.get(path, {})
        offset, number = int(saved.get("offset", 0)), int(saved.get("lines", 0))
        needles = WANTED if reader.file_stream is not None else WANTED_WITH_CHAINS
        with open(path, "rb") as fp:
            st = os.fstat(fp.fileno())
            fp.seek(offset)
            limit = None if until is None else max(0, until - offset)
            carry = b""
            read = consumed = 0
            while limit is None or read < limit:
                block = fp.read(CHUNK_BYTES if limit is None else min(CHUNK_BYTES, limit - read))
                if not block:
                    break
                read += len(block)
                data = carry + block if carry else block
                # A half-written last line waits for its newline (formats.md §1).
                end = data.rfind(b"\n") + 1
                counted = 0
                for start in wanted_lines(data, end, needles):
                    number += data.count(b"\n", counted, start) + 1
                    counted = data.find(b"\n", start, end) + 1
                    self._feed(reader, data[start:counted], number)
                number += data.count(b"\n", counted, end)
                consumed += end
                carry = data[end:]
            self.files[path] = cursor(fp.fileno(), st, offset, read, consumed, number)

    def _feed(self, reader: TranscriptReader, raw: bytes, number: int) -> None:
        try:
            item = reader.feed(parse_line(raw), number)
        except BadLine as exc:
            self.skipped += 1
            if self.on_bad_line is not None:
                self.on_bad_line(reader.source, number, str(exc))
            return
        if item is None:
            return
        entry = self.ledgers.setdefault(item.stream, Ledger()).feed(item)
        # The items themselves are not kept: the ledger has what the summaries need.
        self.log.streams[item.stream].items.clear()
        self.landed(item, entry)

    def landed(self, item: StreamItem, entry: LedgerEntry | None) -> None:
        """A new item went through its stream's ledger (subclasses keep more)."""
        if self.on_item is not None:
            self.on_item(item, entry)
