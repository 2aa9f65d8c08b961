"""The parse stage (``ingest.stages``): Claude Code transcript lines (formats.md §1) ->
request records and rebuild events.

The reader is fed one line's fields at a time and keeps only what deduplication needs,
so the same code serves a whole-file analysis and the status line's incremental reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cachediag.ingest.anthropic import (
    MAX_TOKENS,
    count_of,
    counts_of,
    parse_timestamp,
    reason_of,
    ttl_of,
)
from cachediag.ingest.fields import read_fields
from cachediag.ingest.jsonl import BadLine
from cachediag.ingest.needles import WANTED, WANTED_WITH_CHAINS
from cachediag.ingest.stages import (
    AGENT,
    AT,
    CWD,
    PARENT,
    SIDECHAIN,
    TIMESTAMP,
    TYPE,
    UUID,
    LineFields,
    PickedLines,
    Sink,
)
from cachediag.model import (
    MAIN_STREAM,
    LineIssue,
    RebuildAnnounced,
    RebuildKind,
    RequestRecord,
    SessionLog,
    StreamItem,
    StreamKind,
    StreamLog,
)

FORMAT = "claude-code"

_BOUNDARIES = {
    "compact_boundary": RebuildKind.COMPACTION,
    "microcompact_boundary": RebuildKind.MICROCOMPACTION,
}


def _rebuild_of(f: LineFields) -> RebuildKind | None:
    """The rebuild a transcript line announces, if any (formats.md §1): a
    ``compact_boundary`` / ``microcompact_boundary`` system line, or Claude Code 1.0.x's
    compaction, which wrote no boundary: the ``isCompactSummary`` user line that starts a
    new chain (``parentUuid`` null). Later versions point that line at their boundary."""
    kind, _, parent, _, _, _, _, _, _, subtype, compact_summary, *_ = f
    if kind == "system":
        return _BOUNDARIES.get(subtype) if subtype is not None else None
    if kind == "user" and compact_summary and parent is None:
        return RebuildKind.COMPACTION
    return None


def _epoch(f: LineFields) -> float:
    """The line's time: read by the picker when written as Claude Code writes it."""
    at = f[AT]
    return at if at is not None else parse_timestamp(f[TIMESTAMP])


def wanted_line(raw: bytes) -> bool:
    return any(needle in raw for needle in WANTED)


def wanted_line_with_chains(raw: bytes) -> bool:
    return any(needle in raw for needle in WANTED_WITH_CHAINS)


def agent_kind(agent_id: str) -> StreamKind:
    return StreamKind.COMPACTION if agent_id.startswith("acompact") else StreamKind.SUBAGENT


def parse(picked: PickedLines, source: str, sink: Sink) -> None:
    """Feed each picked line of ``source`` to ``sink`` (a file's reader, or stdin's
    sessions); a line it finds wrong becomes an issue of that line's session."""
    take = sink.take
    for number, fields in picked:
        try:
            take(fields, number)
        except BadLine as exc:
            sink.issues_of(fields).append(LineIssue(source, number, str(exc)))


@dataclass(slots=True)
class TranscriptReader:
    """Turns transcript lines of one session into stream items.

    ``file_stream`` pins every line of an agent file to that file's stream; ``None``
    (a main file, or stdin) assigns streams from each line's own fields.
    """

    session: SessionLog
    source: str
    file_stream: tuple[str, StreamKind] | None = None
    seen: dict[tuple[str, str | None], tuple[str, int]] = field(default_factory=dict)
    claimed: dict[tuple[str, str | None], str] | None = None
    """Responses already read from other files of this run (key -> file): shared by the
    readers of a project, so a session continued in a new file, which starts with copies
    of the old session's responses, does not count them a second time."""
    replayed: set[tuple[str, str | None]] = field(default_factory=set)
    sidechain_roots: dict[str, str] = field(default_factory=dict)
    announced: set[str] = field(default_factory=set)
    """Rebuild lines read (by uuid), so that a copy of the file does not announce twice."""
    errors_seen: set[str] = field(default_factory=set)
    """API error lines counted (by uuid), once however many copies hold them."""
    owner: str = field(init=False, repr=False, compare=False, default="")
    """This file's mark in ``claimed``: built once, not per line."""

    def __post_init__(self) -> None:
        self.owner = f"{self.session.session_id}\0{self.source}"

    def feed_line(self, raw: bytes, line: int) -> StreamItem | None:
        """Read one raw line (``BadLine`` when it is not a JSON object, as ``parse_line``)."""
        return self.take(read_fields(raw), line)

    def issues_of(self, f: LineFields) -> list[LineIssue]:
        """``stages.Sink``: every line of a file is of its one session."""
        return self.session.issues

    def take(self, f: LineFields, line: int) -> StreamItem | None:
        """Read one line's fields (``ingest.fields``)."""
        cwd = f[CWD]
        if cwd is not None and self.session.cwd is None:
            # Where Claude Code started (later lines follow the shell's cd): the first.
            self.session.cwd = cwd
        if f[TYPE] == "assistant":
            return self._assistant(f, line)
        rebuild = _rebuild_of(f)
        if rebuild is not None and self._first_time(f, rebuild):
            stream = self._stream_of(f)
            event = RebuildAnnounced(at=_epoch(f), kind=rebuild, stream=stream.id, line=line)
            stream.items.append(event)
            return event
        if self.file_stream is None and f[SIDECHAIN]:
            self._sidechain_root(f)
        return None

    def _first_time(self, f: LineFields, kind: RebuildKind) -> bool:
        """False for a line already read from another copy of this file."""
        uuid = f[UUID]
        key = uuid if uuid is not None else f"{f[TIMESTAMP]}\0{kind.value}"
        if key in self.announced:
            return False
        self.announced.add(key)
        return True

    def _assistant(self, f: LineFields, line: int) -> RequestRecord | None:
        _, uuid, _, sidechain, _, _, _, request_id, api_error, _, _, _, _, message = f
        if message is None:
            raise BadLine("assistant line without a message object")
        model, message_id, usage, reason, edits = message
        if model == "<synthetic>" or api_error:
            if uuid is None or uuid not in self.errors_seen:
                self.session.api_errors += 1
                if uuid is not None:
                    self.errors_seen.add(uuid)
            return None
        if usage is None:
            raise BadLine("assistant message without usage")
        # The API message id is unique on its own; a sidechain replay of a parent
        # message may carry another request id, so it must not be part of the key.
        if message_id:
            key: tuple[str, str | None] = ("message", message_id)
        elif request_id:
            key = ("request", request_id)
        else:
            key = ("line", uuid if uuid is not None else str(line))
        known = self.seen.get(key)
        if known is not None:
            # A later copy of the same response (one line per content block, or a
            # sidechain replay of a parent message): only its output count can grow.
            output = usage[3]
            if type(output) is not int or not 0 <= output <= MAX_TOKENS:
                output = count_of(output, "output_tokens") or 0
            self._merge_copy(known, f, output)
            if sidechain and self.file_stream is None:
                self._sidechain_root(f)
            return None
        if self.claimed is not None and self.claimed.setdefault(key, self.owner) != self.owner:
            if key not in self.replayed:  # one response, however many lines
                self.replayed.add(key)
                self.session.replayed_responses += 1
            if sidechain and self.file_stream is None:
                self._sidechain_root(f)
            return None
        stream_id, kind = self._stream_key(f)
        # Timestamp before counts: a line with both wrong is blamed on its timestamp.
        at = _epoch(f)
        inp, read, creation, output, c5m, c1h = counts_of(usage)
        # Positional: with keywords, building a record costs several times as much (a test
        # holds the order to the fields').
        record = RequestRecord(
            at,
            inp,
            read,
            creation,
            output,
            ttl_of(c1h),
            c5m,
            c1h,
            model,
            request_id,
            message_id,
            stream_id,
            line,
            reason_of(reason) if reason is not None else None,
            None,
            edits,
        )
        # The stream exists only once a valid request (or event) of it was read.
        stream = self.session.stream(stream_id, kind, source=self.source)
        self.seen[key] = (stream_id, len(stream.items))
        stream.items.append(record)
        return record

    def _merge_copy(self, known: tuple[str, int], f: LineFields, output_tokens: int) -> None:
        stream_id, index = known
        stream = self.session.streams.get(stream_id)
        if stream is None or index >= len(stream.items):
            return  # The status line keeps only the keys, not the items.
        current = stream.items[index]
        if not isinstance(current, RequestRecord):
            return
        # The response started arriving at its earliest copy (copies are written in
        # order in practice; a merged or re-sorted log may not be).
        at = _epoch(f)
        if output_tokens > current.output_tokens:
            current.output_tokens = output_tokens
            current.kept_at = at  # ccusage keeps the line with the final count
        elif current.kept_at is None and at < current.at:
            current.kept_at = current.at  # the first line stays kept: pin its time
        if at < current.at:
            current.at = at

    def _stream_of(self, f: LineFields) -> StreamLog:
        stream_id, kind = self._stream_key(f)
        return self.session.stream(stream_id, kind, source=self.source)

    def _stream_key(self, f: LineFields) -> tuple[str, StreamKind]:
        agent = f[AGENT]
        if self.file_stream is not None:
            stream_id, kind = self.file_stream
        elif not f[SIDECHAIN]:
            stream_id, kind = MAIN_STREAM, StreamKind.MAIN
        elif agent is not None:
            stream_id, kind = f"agent-{agent}", agent_kind(agent)
        else:
            stream_id, kind = f"sidechain-{self._sidechain_root(f)[:8]}", StreamKind.SIDECHAIN
        return stream_id, kind

    def _sidechain_root(self, f: LineFields) -> str:
        # Old versions wrote Task subagents inline; each chain starts at a line whose
        # parent is null, and parallel chains interleave, so follow the parent links.
        uuid = f[UUID] or ""
        parent = f[PARENT]
        root = self.sidechain_roots.get(parent, uuid) if isinstance(parent, str) else uuid
        if uuid:
            self.sidechain_roots[uuid] = root
        return root or "unknown"
