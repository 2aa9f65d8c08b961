"""Claude Code session transcripts (formats.md §1) -> request records and rebuild events.

The reader is fed one parsed line at a time and keeps only what deduplication needs,
so the same code serves a whole-file analysis and the status line's incremental reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cachediag.ingest.anthropic import (
    MAX_TOKENS,
    applied_edits,
    parse_timestamp,
    server_reason,
    token_count,
    ttl_of,
    usage_counts,
)
from cachediag.ingest.lines import BadLine, JsonObject
from cachediag.ingest.needles import WANTED, WANTED_WITH_CHAINS
from cachediag.model import (
    MAIN_STREAM,
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


def rebuild_announced(obj: JsonObject) -> RebuildKind | None:
    """The rebuild a transcript line announces, if any (formats.md §1): a
    ``compact_boundary`` / ``microcompact_boundary`` system line, or Claude Code 1.0.x's
    compaction, which wrote no boundary: the ``isCompactSummary`` user line that starts a
    new chain (``parentUuid`` null). Later versions point that line at their boundary.

    Every reader of transcripts (analyze, audit, status line, watch) asks this."""
    kind = obj.get("type")
    if kind == "system":
        subtype = obj.get("subtype")
        return _BOUNDARIES.get(subtype) if isinstance(subtype, str) else None
    if kind == "user" and obj.get("isCompactSummary") is True and obj.get("parentUuid") is None:
        return RebuildKind.COMPACTION
    return None


def wanted_line(raw: bytes) -> bool:
    return any(needle in raw for needle in WANTED)


def wanted_line_with_chains(raw: bytes) -> bool:
    return any(needle in raw for needle in WANTED_WITH_CHAINS)


def agent_kind(agent_id: str) -> StreamKind:
    return StreamKind.COMPACTION if agent_id.startswith("acompact") else StreamKind.SUBAGENT


def merged_copy(record: RequestRecord, output_tokens: int, at: float) -> RequestRecord:
    """``record`` with a later copy's counts merged in: ``dataclasses.replace`` costs twice
    as much, and a transcript has thousands of copies (a test holds this to every field)."""
    return RequestRecord(
        at=at,
        input_tokens=record.input_tokens,
        cache_read_tokens=record.cache_read_tokens,
        cache_creation_tokens=record.cache_creation_tokens,
        output_tokens=output_tokens,
        ttl=record.ttl,
        cache_creation_5m_tokens=record.cache_creation_5m_tokens,
        cache_creation_1h_tokens=record.cache_creation_1h_tokens,
        model=record.model,
        request_id=record.request_id,
        message_id=record.message_id,
        stream=record.stream,
        line=record.line,
        server_reason=record.server_reason,
        fingerprint=record.fingerprint,
        applied_edits=record.applied_edits,
        provider=record.provider,
        reported_cost_usd=record.reported_cost_usd,
    )


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

    def feed(self, obj: JsonObject, line: int) -> StreamItem | None:
        """Read one line; returns a new item, or ``None`` for a line that adds none."""
        if self.session.cwd is None:
            # Where Claude Code started (later lines follow the shell's cd): the first.
            cwd = obj.get("cwd")
            if isinstance(cwd, str) and cwd:
                self.session.cwd = cwd
        kind = obj.get("type")
        if kind == "assistant":
            return self._assistant(obj, line)
        rebuild = rebuild_announced(obj)
        if rebuild is not None and self._first_time(obj, rebuild):
            stream = self._stream_of(obj)
            event = RebuildAnnounced(
                at=parse_timestamp(obj.get("timestamp")),
                kind=rebuild,
                stream=stream.id,
                line=line,
            )
            stream.items.append(event)
            return event
        self.note_line(obj)
        return None

    def _first_time(self, obj: JsonObject, kind: RebuildKind) -> bool:
        """False for a line already read from another copy of this file."""
        uuid = obj.get("uuid")
        key = uuid if isinstance(uuid, str) else f"{obj.get('timestamp')}\0{kind.value}"
        if key in self.announced:
            return False
        self.announced.add(key)
        return True

    def _assistant(self, obj: JsonObject, line: int) -> RequestRecord | None:
        message = obj.get("message")
        if not isinstance(message, dict):
            raise BadLine("assistant line without a message object")
        model = message.get("model")
        if model == "<synthetic>" or obj.get("isApiErrorMessage") is True:
            uuid = obj.get("uuid")
            if not isinstance(uuid, str) or uuid not in self.errors_seen:
                self.session.api_errors += 1
                if isinstance(uuid, str):
                    self.errors_seen.add(uuid)
            return None
        usage = message.get("usage")
        if not isinstance(usage, dict):
            raise BadLine("assistant message without usage")
        message_id = message.get("id")
        if not isinstance(message_id, str):
            message_id = None
        request_id = obj.get("requestId")
        if not isinstance(request_id, str):
            request_id = None
        # The API message id is unique on its own; a sidechain replay of a parent
        # message may carry another request id, so it must not be part of the key.
        if message_id:
            key: tuple[str, str | None] = ("message", message_id)
        elif request_id:
            key = ("request", request_id)
        else:
            uuid = obj.get("uuid")
            key = ("line", uuid if isinstance(uuid, str) else str(line))
        known = self.seen.get(key)
        if known is not None:
            # A later copy of the same response (one line per content block, or a
            # sidechain replay of a parent message): only its output count can grow.
            output = usage.get("output_tokens")
            if type(output) is not int or not 0 <= output <= MAX_TOKENS:
                output = token_count(usage, "output_tokens") or 0
            self._merge_copy(known, obj, output)
            self.note_line(obj)
            return None
        if self.claimed is not None and self.claimed.setdefault(key, self.owner) != self.owner:
            if key not in self.replayed:  # one response, however many lines
                self.replayed.add(key)
                self.session.replayed_responses += 1
            self.note_line(obj)
            return None
        stream_id, kind = self._stream_key(obj)
        # Timestamp before counts: a line with both wrong is blamed on its timestamp.
        at = parse_timestamp(obj.get("timestamp"))
        inp, read, creation, output, c5m, c1h = usage_counts(usage)
        record = RequestRecord(
            at=at,
            input_tokens=inp,
            cache_read_tokens=read,
            cache_creation_tokens=creation,
            output_tokens=output,
            ttl=ttl_of(c1h),
            cache_creation_5m_tokens=c5m,
            cache_creation_1h_tokens=c1h,
            model=model if isinstance(model, str) else None,
            request_id=request_id,
            message_id=message_id,
            stream=stream_id,
            line=line,
            server_reason=server_reason(message),
            applied_edits=applied_edits(message),
        )
        # The stream exists only once a valid request (or event) of it was read.
        stream = self.session.stream(stream_id, kind, source=self.source)
        self.seen[key] = (stream_id, len(stream.items))
        stream.items.append(record)
        return record

    def _merge_copy(self, known: tuple[str, int], obj: JsonObject, output_tokens: int) -> None:
        stream_id, index = known
        stream = self.session.streams.get(stream_id)
        if stream is None or index >= len(stream.items):
            return  # The status line keeps only the keys, not the items.
        current = stream.items[index]
        if not isinstance(current, RequestRecord):
            return
        # The response started arriving at its earliest copy (copies are written in
        # order in practice; a merged or re-sorted log may not be).
        at = parse_timestamp(obj.get("timestamp"))
        if output_tokens > current.output_tokens or at < current.at:
            stream.items[index] = merged_copy(
                current, max(output_tokens, current.output_tokens), min(at, current.at)
            )

    def _stream_of(self, obj: JsonObject) -> StreamLog:
        stream_id, kind = self._stream_key(obj)
        return self.session.stream(stream_id, kind, source=self.source)

    def _stream_key(self, obj: JsonObject) -> tuple[str, StreamKind]:
        if self.file_stream is not None:
            stream_id, kind = self.file_stream
        elif obj.get("isSidechain") is not True:
            stream_id, kind = MAIN_STREAM, StreamKind.MAIN
        elif isinstance(obj.get("agentId"), str) and obj["agentId"]:
            stream_id, kind = f"agent-{obj['agentId']}", agent_kind(obj["agentId"])
        else:
            stream_id, kind = f"sidechain-{self._sidechain_root(obj)[:8]}", StreamKind.SIDECHAIN
        return stream_id, kind

    def _sidechain_root(self, obj: JsonObject) -> str:
        # Old versions wrote Task subagents inline; each chain starts at a line whose
        # parent is null, and parallel chains interleave, so follow the parent links.
        value = obj.get("uuid")
        uuid = value if isinstance(value, str) else ""
        parent = obj.get("parentUuid")
        root = self.sidechain_roots.get(parent, uuid) if isinstance(parent, str) else uuid
        if uuid:
            self.sidechain_roots[uuid] = root
        return root or "unknown"

    def note_line(self, obj: JsonObject) -> None:
        """Lines that carry no request still link sidechain chains together."""
        if self.file_stream is None and obj.get("isSidechain") is True:
            self._sidechain_root(obj)
