"""Claude Code session transcripts (formats.md §1) -> request records and rebuild events.

The reader is fed one parsed line at a time and keeps only what deduplication needs,
so the same code serves a whole-file analysis and the status line's incremental reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cachediag.ingest.anthropic import (
    applied_edits,
    parse_timestamp,
    server_reason,
    token_count,
    usage_record,
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


def wanted_line(raw: bytes) -> bool:
    return any(needle in raw for needle in WANTED)


def wanted_line_with_chains(raw: bytes) -> bool:
    return any(needle in raw for needle in WANTED_WITH_CHAINS)


def agent_kind(agent_id: str) -> StreamKind:
    return StreamKind.COMPACTION if agent_id.startswith("acompact") else StreamKind.SUBAGENT


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

    def feed(self, obj: JsonObject, line: int) -> StreamItem | None:
        """Read one line; returns a new item, or ``None`` for a line that adds none."""
        kind = obj.get("type")
        if kind == "assistant":
            return self._assistant(obj, line)
        if kind == "system" and obj.get("subtype") in _BOUNDARIES:
            stream = self._stream_of(obj)
            event = RebuildAnnounced(
                at=parse_timestamp(obj.get("timestamp")),
                kind=_BOUNDARIES[obj["subtype"]],
                stream=stream.id,
                line=line,
            )
            stream.items.append(event)
            return event
        self.note_line(obj)
        return None

    def _assistant(self, obj: JsonObject, line: int) -> RequestRecord | None:
        message = obj.get("message")
        if not isinstance(message, dict):
            raise BadLine("assistant line without a message object")
        if message.get("model") == "<synthetic>" or obj.get("isApiErrorMessage") is True:
            self.session.api_errors += 1
            return None
        usage = message.get("usage")
        if not isinstance(usage, dict):
            raise BadLine("assistant message without usage")
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        request_id = obj.get("requestId") if isinstance(obj.get("requestId"), str) else None
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
        if known is None and self.claimed is not None:
            me = f"{self.session.session_id}\0{self.source}"
            if self.claimed.setdefault(key, me) != me:
                if key not in self.replayed:  # one response, however many lines
                    self.replayed.add(key)
                    self.session.replayed_responses += 1
                self.note_line(obj)
                return None
        if known is not None:
            # A later copy of the same response (one line per content block, or a
            # sidechain replay of a parent message): only its output count can grow.
            self._merge_copy(known, obj, token_count(usage, "output_tokens") or 0)
            self.note_line(obj)
            return None
        stream_id, kind = self._stream_key(obj)
        model = message.get("model")
        record = usage_record(
            usage,
            parse_timestamp(obj.get("timestamp")),
            stream=stream_id,
            line=line,
            model=model if isinstance(model, str) else None,
            request_id=request_id,
            message_id=message_id,
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
            stream.items[index] = replace(
                current,
                output_tokens=max(output_tokens, current.output_tokens),
                at=min(at, current.at),
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
        if obj.get("isSidechain") is True and self.file_stream is None:
            self._sidechain_root(obj)
