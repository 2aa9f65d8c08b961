"""Reading only what a transcript gained since the last run, with the one reader and ledger.

Loaded by ``fast`` only when some file changed: this is where the reader, the ledger and
the summary come in. A file that was truncated, replaced (new inode) or rewritten before
the saved offset restarts the whole session from byte 0 (a full recompute).
"""

from __future__ import annotations

import os
from typing import Any

from cachediag.analysis.ledger import Ledger, LedgerEntry, Outcome
from cachediag.analysis.summary import build_prompt_cache
from cachediag.ingest.lines import BadLine, parse_line
from cachediag.ingest.transcript import FORMAT, TranscriptReader, agent_kind
from cachediag.model import MAIN_STREAM, SessionLog, StreamKind
from cachediag.report.serialize import prompt_cache_dict
from cachediag.statusline import codec
from cachediag.statusline.state import (
    STATE_VERSION,
    WANTED,
    WANTED_WITH_CHAINS,
    file_signature,
    resumable,
    tail_hash,
    wanted_lines,
)

try:  # the reader already loaded orjson when it is installed; json is the fallback
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None  # type: ignore[assignment]


def _dumps(obj: Any) -> bytes:
    if _orjson is not None:
        return _orjson.dumps(obj)
    import json

    return json.dumps(obj, separators=(",", ":")).encode()


def _loads(raw: bytes) -> Any:
    if _orjson is not None:
        return _orjson.loads(raw)
    import json

    return json.loads(raw)


State = dict[str, Any]


def encode_state(header: State, readers: dict[str, Any]) -> tuple[bytes, bytes]:
    return _dumps({**header, "version": STATE_VERSION}), _dumps(readers)


def load_readers(rest: bytes) -> dict[str, Any]:
    try:
        readers = _loads(rest) if rest.strip() else {}
    except (ValueError, RecursionError):
        return {}
    return readers if isinstance(readers, dict) else {}


class Session:
    """One session's readers and ledgers, restored from state or started empty."""

    def __init__(self, transcript: str, header: State | None, rest: bytes) -> None:
        self.transcript = transcript
        self.log = SessionLog(os.path.basename(transcript), transcript, FORMAT)
        self.log.stream(MAIN_STREAM, StreamKind.MAIN, source=transcript)
        self.ledgers: dict[str, Ledger] = {}
        self.streams: dict[str, dict[str, Any]] = {}
        self.files: dict[str, dict[str, Any]] = {}
        self.readers: dict[str, TranscriptReader] = {}
        self.prices: dict[str, Any] = {}
        self.skipped = self.api_errors = 0
        if header is None:
            return
        self.skipped = int(header.get("skipped_lines", 0))
        self.api_errors = int(header.get("api_errors", 0))
        self.prices = dict(header.get("prices", {}))
        self.files = {k: dict(v) for k, v in header["files"].items()}
        for sid, s in header["streams"].items():
            self.streams[sid] = dict(s)
            self.ledgers[sid] = codec.ledger_from_state(s["ledger"])
            self.log.stream(sid, StreamKind(s["kind"]), source=s.get("source"))
        for path, data in load_readers(rest).items():
            codec.restore_reader(self._reader(path), data)

    def _reader(self, path: str) -> TranscriptReader:
        reader = self.readers.get(path)
        if reader is None:
            pinned = None
            if path != self.transcript:
                agent_id = os.path.basename(path)[: -len(".jsonl")].removeprefix("agent-")
                pinned = (f"agent-{agent_id}", agent_kind(agent_id))
                self.log.stream(pinned[0], pinned[1], source=path)
            reader = self.readers[path] = TranscriptReader(self.log, path, file_stream=pinned)
        return reader

    def read(self, path: str) -> None:
        """Feed the complete lines appended to ``path`` since its saved offset."""
        reader = self._reader(path)
        saved = self.files.get(path, {})
        offset, number = int(saved.get("offset", 0)), int(saved.get("lines", 0))
        needles = WANTED if reader.file_stream is not None else WANTED_WITH_CHAINS
        with open(path, "rb") as fp:
            st = os.fstat(fp.fileno())
            fp.seek(offset)
            data = fp.read()
            # A half-written last line waits for its newline (formats.md §1).
            end = data.rfind(b"\n") + 1
            counted = 0
            for start in wanted_lines(data, end, needles):
                number += data.count(b"\n", counted, start) + 1
                counted = data.find(b"\n", start, end) + 1
                self._feed(reader, data[start:counted], number)
            number += data.count(b"\n", counted, end)
            new_offset = offset + end
            self.files[path] = {
                "ino": st.st_ino,
                "dev": st.st_dev,
                "size": offset + len(data),
                "mtime_ns": st.st_mtime_ns,
                "offset": new_offset,
                "lines": number,
                "tail": tail_hash(fp.fileno(), new_offset),
            }

    def _feed(self, reader: TranscriptReader, raw: bytes, number: int) -> None:
        try:
            item = reader.feed(parse_line(raw), number)
        except BadLine:
            self.skipped += 1
            return
        if item is None:
            return
        stream = self.streams.setdefault(item.stream, {"misses": [], "first_at": None})
        ledger = self.ledgers.setdefault(item.stream, Ledger())
        entry = ledger.feed(item)
        # The items themselves are not kept: the ledger has what the summary needs.
        self.log.streams[item.stream].items.clear()
        if entry is None:
            return
        if stream["first_at"] is None:
            stream["first_at"] = entry.record.at
        if entry.outcome is Outcome.MISS:
            miss = codec.record_to_state(entry.record)
            miss["fingerprint"] = None
            stream["misses"].append([miss, entry.reprocessed_tokens, entry.ttl])

    def _miss_cost(self, misses: list[Any]) -> tuple[float | None, list[str]]:
        if not misses:
            return 0.0, []
        from cachediag.analysis.costs import miss_cost_usd
        from cachediag.statusline import prices

        total = 0.0
        unpriced: set[str] = set()
        for miss, reprocessed, ttl in misses:
            record = codec.record_from_state(miss)
            model = record.model or "?"
            if model not in self.prices and record.model is not None:
                self.prices[model] = codec.prices_to_state(
                    prices.lookup_prices(record.model, record.at)
                )
            found = codec.prices_from_state(self.prices.get(model))
            if found is None:
                unpriced.add(model)
                continue
            entry = LedgerEntry(0, record, Outcome.MISS, ttl, None, reprocessed)
            total += miss_cost_usd(entry, found)
        return (None if unpriced else total), sorted(unpriced)

    def header(self, now: float) -> State:
        streams: dict[str, Any] = {}
        for sid, ledger in self.ledgers.items():
            s = self.streams.setdefault(sid, {"misses": [], "first_at": None})
            log = self.log.streams[sid]
            cost, unpriced = self._miss_cost(s["misses"])
            streams[sid] = {
                **s,
                "kind": log.kind.value,
                "source": log.source,
                "ledger": codec.ledger_to_state(ledger),
                "prompt_cache": prompt_cache_dict(build_prompt_cache(ledger, now)),
                "miss_cost_usd": cost,
                "unpriced_models": unpriced,
            }
        return {
            "transcript": self.transcript,
            "files": self.files,
            "streams": streams,
            "prices": self.prices,
            "skipped_lines": self.skipped,
            "api_errors": self.api_errors + self.log.api_errors,
            "saved_at": now,
        }

    def readers_state(self) -> dict[str, Any]:
        return {path: codec.reader_to_state(r) for path, r in self.readers.items()}


def refresh(
    transcript: str, agents: list[str], header: State | None, rest: bytes, now: float
) -> tuple[State, dict[str, Any]]:
    """Bring the state up to date with the files; returns the new header and readers."""
    files = [transcript, *agents]
    if header is not None and (
        header.get("transcript") != transcript
        or not isinstance(header.get("files"), dict)
        or not set(header["files"]) <= set(files)
        or not all(resumable(p, header["files"][p]) for p in header["files"])
    ):
        header = None  # truncated, replaced, rewritten or vanished: start again
    try:
        session = Session(transcript, header, rest)
    except (KeyError, TypeError, ValueError, AttributeError):
        session = Session(transcript, None, b"")  # a state we cannot use: recompute
    for path in files:
        sig = file_signature(path)
        saved = session.files.get(path)
        if sig is not None and saved is not None and all(saved.get(k) == v for k, v in sig.items()):
            continue
        session.read(path)
    # Every stream of the session has a ledger, even one that has no request yet.
    for sid in session.log.streams:
        session.ledgers.setdefault(sid, Ledger())
    return session.header(now), session.readers_state()
