"""Claude Code's OpenTelemetry export, read from the Collector's files (formats.md §5).

The Collector's ``file`` exporter writes one OTLP/JSON ``Export*ServiceRequest`` per line.
Of its log records, ``claude_code.api_request`` events become request records (one
session per ``session.id``, streams by ``query_source``), ``claude_code.compaction``
events announce a rebuild of the main stream, and request bodies (inline
``claude_code.api_request_body`` events, or the ``OTEL_LOG_RAW_API_BODIES=file:<dir>``
folder with its ``index.jsonl``) are fingerprinted as they are read and joined to their
request like capture records, so that misses get exact causes. Bodies hold prompt text:
only their fingerprints are kept. Metrics, traces and other events are counted and
passed over.

These events carry no 5m/1h split of cache writes. A request whose body (``cache_control``
TTLs) or response body (the usage split) settles it gets that TTL; the others get the
configured default, ``$CACHEDIAG_OTEL_TTL`` (``5m`` unless set), and the session says so
in ``SessionLog.assumed_ttl``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cachediag.ingest.anthropic import parse_timestamp, token_count
from cachediag.ingest.jsonl import BadLine, JsonObject, iter_objects
from cachediag.ingest.otel_bodies import (
    BodyFacts,
    BodyIndex,
    load_body_index,
    request_body_facts,
    response_body_facts,
)
from cachediag.ingest.skipped import Skipped, issues_first
from cachediag.model import (
    MAIN_STREAM,
    LineIssue,
    RebuildAnnounced,
    RebuildKind,
    RequestRecord,
    SessionLog,
    StreamItem,
    StreamKind,
    Ttl,
)

FORMAT = "claude-code-otel"
TTL_ENV = "CACHEDIAG_OTEL_TTL"
"""The TTL assumed for requests whose TTL nothing in the export settles."""
DEFAULT_TTL: Ttl = "5m"

_SIGNALS = ("resourceLogs", "resourceMetrics", "resourceSpans")
_MAIN_SOURCES = frozenset({"repl_main_thread", "main", "sdk", "print", "repl", "cli"})
_COMPACT_SOURCE = "compact"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:@/+-]")


def looks_like_otel(obj: JsonObject) -> bool:
    return any(isinstance(obj.get(k), list) for k in _SIGNALS)


def default_ttl() -> Ttl:
    value = os.environ.get(TTL_ENV, "").strip()
    return "1h" if value == "1h" else DEFAULT_TTL


def attr_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain value (``intValue`` is a decimal string in JSON)."""
    if not isinstance(value, dict):
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        raw = value["intValue"]
        try:
            return int(raw)
        except (TypeError, ValueError):
            return None
    if "doubleValue" in value:
        raw = value["doubleValue"]
        return float(raw) if isinstance(raw, int | float | str) else None
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        items = value["arrayValue"].get("values") if isinstance(value["arrayValue"], dict) else None
        return [attr_value(v) for v in items] if isinstance(items, list) else []
    if "kvlistValue" in value:
        kv = value["kvlistValue"]
        return attributes(kv.get("values") if isinstance(kv, dict) else None)
    return None


def attributes(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("key"), str):
                out[item["key"]] = attr_value(item.get("value"))
    return out


@dataclass(slots=True, frozen=True)
class OtelEvent:
    name: str
    """Without the ``claude_code.`` prefix: ``api_request``, ``compaction``, ..."""
    at: float
    sequence: int
    attrs: dict[str, Any]
    resource: dict[str, Any]
    line: int


@dataclass(slots=True)
class OtelCounts:
    """What the export held besides the events read (reported, never fatal)."""

    metrics: int = 0
    spans: int = 0
    other_events: int = 0


def _event_name(record: JsonObject, attrs: dict[str, Any]) -> str:
    body = attr_value(record.get("body"))
    name = body if isinstance(body, str) and body.startswith("claude_code.") else None
    if name is None:
        event = attrs.get("event.name", record.get("eventName"))
        name = event if isinstance(event, str) else ""
    return name.removeprefix("claude_code.")


def _event_time(record: JsonObject, attrs: dict[str, Any]) -> float:
    stamp = attrs.get("event.timestamp")
    if isinstance(stamp, str):
        return parse_timestamp(stamp)
    for key in ("timeUnixNano", "observedTimeUnixNano"):
        raw = record.get(key)
        try:
            nanos = int(raw) if raw is not None else 0
        except (TypeError, ValueError):
            continue
        if nanos > 0:
            return parse_timestamp(nanos / 1e9)
    raise BadLine("event without a timestamp")


def _count_other(obj: JsonObject, counts: OtelCounts) -> None:
    for rm in obj.get("resourceMetrics") or ():
        for sm in (rm.get("scopeMetrics") or ()) if isinstance(rm, dict) else ():
            counts.metrics += len(sm.get("metrics") or ()) if isinstance(sm, dict) else 0
    for rs in obj.get("resourceSpans") or ():
        for ss in (rs.get("scopeSpans") or ()) if isinstance(rs, dict) else ():
            counts.spans += len(ss.get("spans") or ()) if isinstance(ss, dict) else 0


def iter_events(
    objects: Iterable[tuple[int, JsonObject]],
    source: str,
    issues: list[LineIssue],
    counts: OtelCounts,
) -> Iterator[OtelEvent]:
    """Every log record of every line, flattened; bad records counted with their line."""
    for number, obj in objects:
        if not looks_like_otel(obj):
            issues.append(LineIssue(source, number, "not an OTLP export request"))
            continue
        _count_other(obj, counts)
        resource_logs = obj.get("resourceLogs", [])
        if not isinstance(resource_logs, list):
            issues.append(LineIssue(source, number, "resourceLogs is not a list"))
            continue
        for rl in resource_logs:
            if not isinstance(rl, dict):
                continue
            resource_attrs = rl.get("resource")
            resource = attributes(
                resource_attrs.get("attributes") if isinstance(resource_attrs, dict) else None
            )
            for sl in rl.get("scopeLogs") or ():
                for record in (sl.get("logRecords") or ()) if isinstance(sl, dict) else ():
                    if not isinstance(record, dict):
                        continue
                    attrs = attributes(record.get("attributes"))
                    name = _event_name(record, attrs)
                    try:
                        at = _event_time(record, attrs)
                    except BadLine as exc:
                        issues.append(LineIssue(source, number, f"{name or 'event'}: {exc}"))
                        continue
                    seq = attrs.get("event.sequence")
                    yield OtelEvent(
                        name, at, seq if isinstance(seq, int) else 0, attrs, resource, number
                    )


def _safe_id(value: str) -> str:
    return _UNSAFE.sub("_", value)[:80] or "agent"


def stream_of(query_source: Any, compactions: int) -> tuple[str, StreamKind]:
    """Stream id and kind from ``query_source`` (formats.md §5)."""
    if not isinstance(query_source, str) or not query_source:
        return MAIN_STREAM, StreamKind.MAIN
    base = query_source.split(":", 1)[0]
    if query_source in _MAIN_SOURCES or base in _MAIN_SOURCES:
        return MAIN_STREAM, StreamKind.MAIN
    if query_source == _COMPACT_SOURCE:
        # Each compaction is a conversation of its own, with its own cache.
        return f"compaction-{compactions + 1}", StreamKind.COMPACTION
    return _safe_id(query_source), StreamKind.SUBAGENT


def _tokens(attrs: dict[str, Any], key: str) -> int:
    return token_count(attrs, key) or 0


def request_record(
    event: OtelEvent, stream: str, ttl: Ttl, request: BodyFacts | None, response: BodyFacts | None
) -> tuple[RequestRecord, bool]:
    """The record of one ``api_request`` event and whether its TTL was assumed."""
    a = event.attrs
    creation = _tokens(a, "cache_creation_tokens")
    split: tuple[int, int] | None = None
    assumed = False
    if response is not None and response.split is not None and sum(response.split) == creation:
        split = response.split
    elif request is not None:
        # The body's cache_control says which TTL the writes were made at.
        split = (0, creation) if request.asked_1h else (creation, 0)
    else:
        assumed = True
    record_ttl: Ttl = ttl if split is None else ("1h" if split[1] > 0 else "5m")
    if request is not None and request.asked_1h:
        record_ttl = "1h"
    model = a.get("model")
    request_id = a.get("request_id")
    message_id = a.get("message.id")
    return (
        RequestRecord(
            at=event.at,
            input_tokens=_tokens(a, "input_tokens"),
            cache_read_tokens=_tokens(a, "cache_read_tokens"),
            cache_creation_tokens=creation,
            output_tokens=_tokens(a, "output_tokens"),
            ttl=record_ttl,
            cache_creation_5m_tokens=None if split is None else split[0],
            cache_creation_1h_tokens=None if split is None else split[1],
            model=model if isinstance(model, str) else None,
            request_id=request_id if isinstance(request_id, str) else None,
            message_id=message_id if isinstance(message_id, str) else None,
            stream=stream,
            line=event.line,
            server_reason=None if response is None else response.server_reason,
            fingerprint=None if request is None else request.fingerprint,
            applied_edits=0 if response is None else response.applied_edits,
        ),
        assumed,
    )


@dataclass(slots=True)
class _Session:
    log: SessionLog
    compactions: int = 0
    seen: set[tuple[str | None, str | None, float]] = field(default_factory=set)


def _session_key(event: OtelEvent, fallback: str) -> str:
    value = event.attrs.get("session.id", event.resource.get("session.id"))
    return value if isinstance(value, str) and value else fallback


_BODY_EVENTS = {"api_request_body": False, "api_response_body": True}


def read_otel(
    lines: Iterable[bytes],
    source: str,
    session_id: str,
    *,
    body_dirs: Iterable[Path] = (),
    ttl: Ttl | None = None,
) -> list[SessionLog]:
    """Every session of an export, in the order they first appear."""
    ttl = ttl or default_ttl()
    issues = Skipped()
    counts = OtelCounts()
    bodies = BodyIndex()
    for folder in body_dirs:
        load_body_index(folder, bodies, issues)
    events: list[OtelEvent] = []
    for event in iter_events(iter_objects(lines, source, issues), source, issues, counts):
        response = _BODY_EVENTS.get(event.name)
        if response is None:
            if event.name in ("api_request", "compaction"):
                events.append(event)
            else:
                counts.other_events += 1
            continue
        try:
            body = event.attrs.get("body")
            facts = response_body_facts(body) if response else request_body_facts(body)
        except BadLine as exc:
            issues.append(LineIssue(source, event.line, f"{event.name}: {exc}"))
            continue
        bodies.add(event.attrs, facts, _session_key(event, session_id), response=response)
    # The Collector batches records as they come; the sessions are read in time order.
    events.sort(key=lambda e: (e.at, e.sequence))
    sessions: dict[str, _Session] = {}
    for event in events:
        key = _session_key(event, session_id)
        state = sessions.get(key)
        if state is None:
            log = SessionLog(key, source, FORMAT, issues=Skipped(), project=_project(event))
            log.stream(MAIN_STREAM, StreamKind.MAIN, source=source)
            state = sessions[key] = _Session(log)
        _add_event(state, event, bodies, ttl, source)
    logs = [s.log for s in sessions.values()]
    if not logs:
        empty = SessionLog(session_id, source, FORMAT, issues=Skipped())
        empty.stream(MAIN_STREAM, StreamKind.MAIN, source=source)
        logs = [empty]
    logs[0].issues = issues_first(issues, logs[0].issues)
    logs[0].non_model_calls += counts.metrics + counts.spans + counts.other_events
    return logs


def _project(event: OtelEvent) -> str | None:
    for holder in (event.attrs, event.resource):
        for key in ("project", "workspace.project", "service.namespace"):
            value = holder.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _add_event(state: _Session, event: OtelEvent, bodies: BodyIndex, ttl: Ttl, source: str) -> None:
    log = state.log
    if event.name == "compaction":
        if event.attrs.get("success") is False:
            return  # a failed compaction left the conversation as it was
        state.compactions += 1
        item: StreamItem = RebuildAnnounced(event.at, RebuildKind.COMPACTION, line=event.line)
        log.streams[MAIN_STREAM].items.append(item)
        return
    stream_id, kind = stream_of(event.attrs.get("query_source"), state.compactions)
    request, response = bodies.lookup(event.attrs, log.session_id, log.issues)
    try:
        record, assumed = request_record(event, stream_id, ttl, request, response)
    except BadLine as exc:
        log.issues.append(LineIssue(source, event.line, f"api_request: {exc}"))
        return
    # A Collector that retried an export writes the same record twice.
    key = (record.request_id, record.message_id, record.at)
    if (record.request_id or record.message_id) and key in state.seen:
        log.replayed_responses += 1
        return
    state.seen.add(key)
    if assumed:
        log.assumed_ttl = ttl
    log.stream(stream_id, kind, source=source).items.append(record)
