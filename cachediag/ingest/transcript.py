"""Claude Code session transcripts (formats.md §1) -> request records and rebuild events.

The reader is fed one parsed line at a time and keeps only what deduplication needs,
so the same code serves a whole-file analysis and the status line's incremental reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from cachediag.ingest.lines import BadLine, JsonObject
from cachediag.model import (
    MAIN_STREAM,
    RebuildAnnounced,
    RebuildKind,
    RequestRecord,
    ServerReason,
    SessionLog,
    StreamItem,
    StreamKind,
    StreamLog,
    Ttl,
)

FORMAT = "claude-code"

_BOUNDARIES = {
    "compact_boundary": RebuildKind.COMPACTION,
    "microcompact_boundary": RebuildKind.MICROCOMPACTION,
}


WANTED: tuple[bytes, ...] = (b'"assistant"', b"compact_boundary")
"""Only lines holding one of these can carry a request or a rebuild."""
WANTED_WITH_CHAINS: tuple[bytes, ...] = (*WANTED, b'"isSidechain":true')
"""As ``WANTED``, plus the sidechain lines that link inline subagent chains (Claude Code
writes compact JSON; each extra spelling would cost one more pass over every file)."""


def wanted_line(raw: bytes) -> bool:
    return any(needle in raw for needle in WANTED)


def wanted_line_with_chains(raw: bytes) -> bool:
    return any(needle in raw for needle in WANTED_WITH_CHAINS)


def parse_timestamp(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # Some producers write epoch milliseconds.
        return float(value) / 1000.0 if value > 1e11 else float(value)
    if not isinstance(value, str):
        raise BadLine("missing or non-string timestamp")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise BadLine("timestamp is not ISO 8601") from exc


def token_count(usage: JsonObject, key: str, default: int | None = 0) -> int | None:
    value = usage.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadLine(f"usage.{key} is not a number")
    if value < 0 or value != int(value):
        raise BadLine(f"usage.{key} is not a non-negative integer")
    return int(value)


def agent_kind(agent_id: str) -> StreamKind:
    return StreamKind.COMPACTION if agent_id.startswith("acompact") else StreamKind.SUBAGENT


def _server_reason(message: JsonObject) -> ServerReason | None:
    if "diagnostics" not in message:
        return None
    diagnostics = message.get("diagnostics")
    if diagnostics is None:
        return ServerReason(type=None)
    if not isinstance(diagnostics, dict):
        return None
    reason = diagnostics.get("cache_miss_reason")
    if reason is None:
        return ServerReason(type=None)
    if not isinstance(reason, dict) or not isinstance(reason.get("type"), str):
        return None
    missed = reason.get("cache_missed_input_tokens")
    return ServerReason(
        type=reason["type"], missed_tokens=missed if isinstance(missed, int) else None
    )


def usage_record(
    usage: JsonObject, at: float, *, stream: str, line: int | None = None, **extra: Any
) -> RequestRecord:
    """An Anthropic ``usage`` object -> a normalised record (shared by every Anthropic reader)."""
    creation = token_count(usage, "cache_creation_input_tokens") or 0
    split = usage.get("cache_creation")
    c5m = c1h = None
    if isinstance(split, dict):
        c5m = token_count(split, "ephemeral_5m_input_tokens")
        c1h = token_count(split, "ephemeral_1h_input_tokens")
    ttl: Ttl = "1h" if (c1h or 0) > 0 else "5m"
    return RequestRecord(
        at=at,
        input_tokens=token_count(usage, "input_tokens") or 0,
        cache_read_tokens=token_count(usage, "cache_read_input_tokens") or 0,
        cache_creation_tokens=creation,
        output_tokens=token_count(usage, "output_tokens") or 0,
        ttl=ttl,
        cache_creation_5m_tokens=c5m,
        cache_creation_1h_tokens=c1h,
        stream=stream,
        line=line,
        **extra,
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
        if known is not None:
            # A later copy of the same response (one line per content block, or a
            # sidechain replay of a parent message): only its output count can grow.
            self._raise_output(known, token_count(usage, "output_tokens") or 0)
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
            server_reason=_server_reason(message),
        )
        # The stream exists only once a valid request (or event) of it was read.
        stream = self.session.stream(stream_id, kind, source=self.source)
        self.seen[key] = (stream_id, len(stream.items))
        stream.items.append(record)
        return record

    def _raise_output(self, known: tuple[str, int], output_tokens: int) -> None:
        stream_id, index = known
        stream = self.session.streams.get(stream_id)
        if stream is None or index >= len(stream.items):
            return  # The status line keeps only the keys, not the items.
        current = stream.items[index]
        if isinstance(current, RequestRecord) and output_tokens > current.output_tokens:
            stream.items[index] = replace(current, output_tokens=output_tokens)

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
