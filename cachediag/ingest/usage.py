"""Usage-only logs (formats.md §3): Anthropic Message objects, SSE streams, OpenAI usage.

These show no prompt, so only the clock, the model and the server's word can name a
cause. Without a conversation to follow, requests are grouped by an explicit stream or
session key when the producer wrote one, else by model: side calls on a small model must
not look like misses of the main conversation.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator

from cachediag.ingest.anthropic import (
    applied_edits,
    server_reason,
    token_count,
    usage_record,
)
from cachediag.ingest.capture import first_time, parse_sse
from cachediag.ingest.jsonl import BadLine, JsonObject, iter_objects, parse_line
from cachediag.ingest.openai import (
    is_openai_usage,
    is_stream_part,
    plain_record,
    response_record,
)
from cachediag.ingest.skipped import Skipped
from cachediag.model import MAIN_STREAM, LineIssue, RequestRecord, SessionLog, StreamKind

FORMAT = "api-usage"
_TIME_KEYS = ("at", "timestamp", "created_at", "created", "logged_at", "time")
_STREAM_KEYS = ("stream", "session_id", "conversation_id", "thread_id")
_SSE_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)


def looks_like_usage(obj: JsonObject) -> bool:
    if obj.get("type") in _SSE_EVENTS or isinstance(obj.get("usageMetadata"), dict):
        return True
    usage = obj.get("usage")
    if isinstance(usage, dict):
        return True
    response = obj.get("response")
    return isinstance(response, dict) and isinstance(response.get("usage"), dict)


def gemini_record(meta: JsonObject, at: float, line: int, model: str | None) -> RequestRecord:
    """Gemini's ``promptTokenCount`` includes the cached tokens."""
    return plain_record(
        at,
        line,
        model,
        prompt=token_count(meta, "promptTokenCount") or 0,
        read=token_count(meta, "cachedContentTokenCount") or 0,
        written=0,
        output=token_count(meta, "candidatesTokenCount") or 0,
    )


def bedrock_record(usage: JsonObject, at: float, line: int, model: str | None) -> RequestRecord:
    """Bedrock Converse counts cache reads and writes apart from ``inputTokens``."""
    read = token_count(usage, "cacheReadInputTokens") or 0
    written = token_count(usage, "cacheWriteInputTokens") or 0
    uncached = token_count(usage, "inputTokens") or 0
    return plain_record(
        at,
        line,
        model,
        prompt=uncached + read + written,
        read=read,
        written=written,
        output=token_count(usage, "outputTokens") or 0,
    )


def message_record(obj: JsonObject, at: float, line: int) -> RequestRecord:
    message = obj["response"] if isinstance(obj.get("response"), dict) else obj
    model = message.get("model", message.get("modelVersion", message.get("modelId")))
    model = model if isinstance(model, str) else None
    meta = message.get("usageMetadata")
    if isinstance(meta, dict):
        return gemini_record(meta, at, line, model)
    usage = message.get("usage")
    if not isinstance(usage, dict):
        raise BadLine("no usage object")
    if "inputTokens" in usage:
        return bedrock_record(usage, at, line, model)
    if is_openai_usage(usage):
        return response_record(message, usage, at, line)
    msg_id = message.get("id")
    return usage_record(
        usage,
        at,
        stream="",
        line=line,
        model=model,
        message_id=msg_id if isinstance(msg_id, str) else None,
        server_reason=server_reason(message),
        applied_edits=applied_edits(message),
    )


def _stream_key(obj: JsonObject, record: RequestRecord) -> str:
    for key in _STREAM_KEYS:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
    return record.model or MAIN_STREAM


def _events_as_messages(
    objects: Iterable[tuple[int, JsonObject]], issues: list[LineIssue], source: str
) -> Iterator[tuple[int, JsonObject, float | None]]:
    """Fold SSE event objects (one per line) into messages; pass other objects through."""
    pending: list[str] = []
    start_line = 0
    start_at: float | None = None
    for number, obj in objects:
        kind = obj.get("type")
        if kind not in _SSE_EVENTS:
            if not is_stream_part(obj):
                yield number, obj, first_time(obj, obj.get("response"))
            continue
        if kind == "message_start":
            if pending:
                issues.append(
                    LineIssue(source, start_line, "event stream truncated (no message_stop)")
                )
            pending, start_line, start_at = [], number, first_time(obj)
        if not pending and kind != "message_start":
            if start_line == 0:
                issues.append(LineIssue(source, number, "event without message_start"))
            continue
        pending.append(f"data: {_dumps(obj)}")
        if kind == "message_stop":
            message, _ = parse_sse("\n".join(pending))
            pending, start_line = [], 0
            yield number, message, start_at if start_at is not None else first_time(obj)
    if pending:
        issues.append(LineIssue(source, start_line, "event stream truncated (no message_stop)"))


def _dumps(obj: JsonObject) -> str:
    return json.dumps(obj, separators=(",", ":"))


def _sse_text_objects(lines: Iterable[bytes]) -> Iterator[tuple[int, JsonObject]]:
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if text.startswith(b"data:"):
            try:
                yield number, parse_line(text[5:].strip())
            except BadLine:
                continue


def read_usage(
    lines: Iterable[bytes], source: str, session_id: str, *, sse_text: bool = False
) -> SessionLog:
    session = SessionLog(session_id, source, FORMAT, issues=Skipped())
    objects = _sse_text_objects(lines) if sse_text else iter_objects(lines, source, session.issues)
    by_stream: dict[str, list[RequestRecord]] = {}
    for number, obj, at in _events_as_messages(objects, session.issues, source):
        if obj.get("type") == "error" or ("error" in obj and "usage" not in obj):
            session.api_errors += 1
            continue
        try:
            # Without a timestamp the order is all that is known; gaps then read as 0.
            record = message_record(obj, at if at is not None else 0.0, number)
        except BadLine as exc:
            session.issues.append(LineIssue(source, number, str(exc)))
            continue
        by_stream.setdefault(_stream_key(obj, record), []).append(record)
    _name_streams(session, by_stream, source)
    return session


def _name_streams(
    session: SessionLog, by_stream: dict[str, list[RequestRecord]], source: str
) -> None:
    if not by_stream:
        session.stream(MAIN_STREAM, StreamKind.MAIN, source=source)
        return
    main = max(by_stream, key=lambda k: sum(r.total_tokens for r in by_stream[k]))
    for key, records in by_stream.items():
        stream_id = MAIN_STREAM if key == main else key
        kind = StreamKind.MAIN if key == main else StreamKind.SIDE_CALL
        stream = session.stream(stream_id, kind, source=source)
        stream.items.extend(dataclasses.replace(r, stream=stream_id) for r in records)
