"""Request/response captures: claude-trace and the pair logs of proxies and SDK loggers.

One record per API call (formats.md §2). Each becomes a ``CapturedCall`` holding the
response's usage and the request's fingerprint, never its text; ``threads`` then sorts the
calls into conversations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cachediag.ingest.anthropic import applied_edits, parse_timestamp, server_reason, usage_record
from cachediag.ingest.fingerprint import (
    BlockMemo,
    betas_from_headers,
    canonical_json,
    fingerprint_request,
)
from cachediag.ingest.jsonl import BadLine, JsonObject, iter_objects, parse_line
from cachediag.ingest.openai import is_openai_usage, parse_openai_sse, response_record
from cachediag.ingest.openai_fingerprint import ResponseChain, fingerprint_openai_request
from cachediag.ingest.threads import name_threads, split_threads
from cachediag.model import MAIN_STREAM, LineIssue, RequestRecord, SessionLog, StreamKind, Ttl

FORMAT = "api-capture"

REQUEST_KEYS = ("request", "req", "request_body", "input")
RESPONSE_KEYS = ("response", "res", "response_body", "output")
_BODY_KEYS = ("body", "json", "data", "content")
_RAW_KEYS = ("body_raw", "raw", "text", "sse")
_MODEL_PATHS = ("/messages", "/chat/completions", "/responses")
_TIME_KEYS = ("timestamp", "time", "at", "created_at", "ts")
_SENT_KEYS = ("started_at", "start_time", "request_time", "sent_at", *_TIME_KEYS)
_ANSWERED_KEYS = ("ended_at", "end_time", "response_time", "completed_at", "logged_at")


class NotAModelCall(Exception):
    """A record that is fine but is not a model request (count_tokens, OAuth, ...)."""


class ApiErrorResponse(BadLine):
    """The API answered with an error: no tokens were processed."""


@dataclass(slots=True, frozen=True)
class CapturedCall:
    started_at: float
    record: RequestRecord
    previous_response_id: str | None = None
    """OpenAI Responses: the server holds the conversation up to this response."""
    baseline_id: str | None = None
    """The earlier response this request names as the one it continues."""
    conversation_id: str | None = None
    """OpenAI Responses ``conversation``: the server holds its items, as with
    ``previous_response_id``, up to the conversation's latest response."""


def _pointer(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _baseline(body: JsonObject) -> str | None:
    options = body.get("prompt_cache_options")
    compared = (
        _pointer(options.get("comparison_response_id")) if isinstance(options, dict) else None
    )
    return compared or _pointer(body.get("previous_response_id"))


def _conversation(body: JsonObject) -> str | None:
    value = body.get("conversation")
    return _pointer(value.get("id") if isinstance(value, dict) else value)


def looks_like_capture(obj: JsonObject) -> bool:
    return any(k in obj for k in REQUEST_KEYS) and any(k in obj for k in RESPONSE_KEYS)


def _first(obj: JsonObject, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in obj:
            return obj[key]
    return None


def _as_object(value: Any, what: str) -> JsonObject:
    if isinstance(value, (str, bytes)):
        raw = value.encode() if isinstance(value, str) else value
        try:
            value = parse_line(raw)
        except BadLine as exc:
            raise BadLine(f"{what} is a string that is not a JSON object") from exc
    if not isinstance(value, dict):
        raise BadLine(f"{what} is not a JSON object")
    return value


def first_time(*holders: Any, keys: tuple[str, ...] = _TIME_KEYS) -> float | None:
    """The first readable time among ``keys`` of the first holder that has one."""
    for holder in holders:
        if not isinstance(holder, dict):
            continue
        for key in keys:
            value = holder.get(key)
            if value is not None:
                try:
                    return parse_timestamp(value)
                except BadLine:
                    continue
    return None


def _request_parts(obj: JsonObject) -> tuple[JsonObject, JsonObject, Any]:
    """(envelope, body, headers) of the request, whichever key spelling was used."""
    req = _first(obj, REQUEST_KEYS)
    if isinstance(req, dict) and "messages" not in req and "input" not in req:
        body = _first(req, _BODY_KEYS)
        if body is None:
            raise BadLine("request has no body")
        headers = req.get("headers")
        if headers is None:
            headers = obj.get("request_headers")
        return req, _as_object(body, "request body"), headers
    return obj, _as_object(req, "request body"), obj.get("request_headers")


def parse_sse(text: str) -> tuple[JsonObject, bool]:
    """The final message of an event stream and whether the stream ended properly.

    ``message_start`` carries the full usage; each ``message_delta.usage`` is cumulative
    and overrides the fields it carries.
    """
    message: JsonObject | None = None
    usage: JsonObject = {}
    finished = False
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        try:
            event = parse_line(line[5:].strip().encode())
        except BadLine:
            continue
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = dict(event["message"])
            start_usage = message.get("usage")
            usage = dict(start_usage) if isinstance(start_usage, dict) else {}
        elif kind == "message_delta" and message is not None:
            delta_usage = event.get("usage")
            if isinstance(delta_usage, dict):
                usage.update({k: v for k, v in delta_usage.items() if v is not None})
            for key in ("context_management", "diagnostics"):
                if key in event:
                    message[key] = event[key]
        elif kind == "message_stop":
            finished = True
    if message is None:
        raise BadLine("event stream without message_start")
    message["usage"] = usage
    return message, finished


def _response_message(obj: JsonObject) -> JsonObject:
    resp = _first(obj, RESPONSE_KEYS)
    if resp is None:
        raise BadLine("no response (the request never got an answer)")
    if isinstance(resp, str) and "data:" in resp:
        return _finished_sse(resp)
    resp = _as_object(resp, "response")
    status = resp.get("status_code", resp.get("status"))
    if isinstance(status, int) and status >= 400:
        raise ApiErrorResponse(f"API error response (status {status})")
    if "usage" in resp:
        return resp
    body = _first(resp, _BODY_KEYS)
    if isinstance(body, str) and "data:" in body:
        return _finished_sse(body)
    if body is not None:
        body = _as_object(body, "response body")
        if body.get("type") == "error":
            raise ApiErrorResponse("API error response")
        return body
    raw = _first(resp, _RAW_KEYS)
    if isinstance(raw, str):
        return _finished_sse(raw)
    raise BadLine("response has neither a body nor an event stream")


def _finished_sse(text: str) -> JsonObject:
    try:
        message, finished = parse_sse(text)
    except BadLine:
        found = parse_openai_sse(text)
        if found is None:
            raise
        message, finished = found
    if not finished:
        raise BadLine("event stream truncated (no message_stop)")
    return message


def _is_model_url(url: Any) -> bool:
    if not isinstance(url, str):
        return True
    path = url.split("?", 1)[0].rstrip("/")
    return path.endswith(_MODEL_PATHS) and "count_tokens" not in path


def _asked_1h(body: JsonObject) -> bool:
    def walk(value: Any) -> bool:
        if isinstance(value, dict):
            cc = value.get("cache_control")
            if isinstance(cc, dict) and cc.get("ttl") == "1h":
                return True
            return any(walk(v) for v in value.values() if isinstance(v, (dict, list)))
        if isinstance(value, list):
            return any(walk(v) for v in value)
        return False

    for key in ("system", "tools", "messages"):
        value = body.get(key)
        # Serialising is far cheaper than walking a long conversation; walk only the
        # parts that could hold a 1h marker at all.
        if value is not None and b'"1h"' in canonical_json(value) and walk(value):
            return True
    return False


def read_call(obj: JsonObject, line: int, memo: BlockMemo | None = None) -> CapturedCall:
    """One capture record -> a call; ``BadLine`` says why it cannot be used.

    ``memo`` carries block prints from the log's earlier records (see ``BlockMemo``)."""
    req = _first(obj, REQUEST_KEYS)
    url = req.get("url") if isinstance(req, dict) else None
    if not _is_model_url(url if url is not None else obj.get("url")):
        raise NotAModelCall("not a model request (count_tokens, OAuth, telemetry...)")
    envelope, body, headers = _request_parts(obj)
    conversation = body.get("messages", body.get("input"))
    # Responses may send the whole input as one string.
    if not isinstance(conversation, list) and not (
        isinstance(conversation, str) and "messages" not in body
    ):
        raise NotAModelCall("request body has no messages list")
    message = _response_message(obj)
    usage = message.get("usage")
    if not isinstance(usage, dict):
        raise BadLine("response has no usage")
    resp = _first(obj, RESPONSE_KEYS)
    started = first_time(envelope, obj, keys=_SENT_KEYS)
    answered = first_time(resp if isinstance(resp, dict) else None)
    if answered is None:
        answered = first_time(obj, keys=_ANSWERED_KEYS)
    if answered is None:
        answered = started
    if started is None:
        started = answered
    if started is None or answered is None:
        # Order is all that is known: gaps read as 0, so no expiry is ever claimed.
        started = answered = 0.0
    if is_openai_usage(usage):
        record = response_record(message, usage, answered, line, request=body)
        # A router passes Anthropic's cache_control through to Claude models.
        ttl: Ttl = "1h" if record.ttl == "5m" and _asked_1h(body) else record.ttl
        return CapturedCall(
            started,
            dataclasses.replace(record, ttl=ttl, fingerprint=fingerprint_openai_request(body)),
            previous_response_id=_pointer(body.get("previous_response_id")),
            baseline_id=_baseline(body),
            conversation_id=_conversation(body),
        )
    model = message.get("model") if isinstance(message.get("model"), str) else body.get("model")
    msg_id = message.get("id")
    fingerprint = fingerprint_request(body, betas_from_headers(headers), memo)
    record = usage_record(
        usage,
        answered,
        stream="",
        line=line,
        model=model if isinstance(model, str) else None,
        message_id=msg_id if isinstance(msg_id, str) else None,
        server_reason=server_reason(message),
        fingerprint=fingerprint,
        applied_edits=applied_edits(message),
    )
    if record.ttl != "1h" and _asked_1h(body):
        record = dataclasses.replace(record, ttl="1h")
    return CapturedCall(started, record)


def _chained(calls: list[CapturedCall]) -> list[CapturedCall]:
    chain = ResponseChain()
    latest: dict[str, str] = {}  # conversation id -> its latest response so far
    out = []
    for call in calls:
        record = call.record
        previous = call.previous_response_id
        if previous is None and call.conversation_id is not None:
            previous = latest.get(call.conversation_id)
            if previous is not None and call.baseline_id is None:
                call = dataclasses.replace(call, baseline_id=previous)
        if record.fingerprint is not None:
            fp = chain.resolve(record.fingerprint, previous, record.message_id)
            call = dataclasses.replace(call, record=dataclasses.replace(record, fingerprint=fp))
        if call.conversation_id is not None and record.message_id is not None:
            latest[call.conversation_id] = record.message_id
        out.append(call)
    return out


def read_capture(lines: Iterable[bytes], source: str, session_id: str) -> SessionLog:
    """A whole capture, its calls sorted into streams with one ledger each."""
    session = SessionLog(session_id, source, FORMAT)
    calls: list[CapturedCall] = []
    memo = BlockMemo()
    for number, obj in iter_objects(lines, source, session.issues):
        try:
            calls.append(read_call(obj, number, memo))
        except ApiErrorResponse:
            session.api_errors += 1
        except NotAModelCall:
            # count_tokens, OAuth, telemetry: fine records, just not model requests.
            session.non_model_calls += 1
        except BadLine as exc:
            session.issues.append(LineIssue(source, number, str(exc)))
    # Streams are sequences of requests as sent; captures log them as they complete.
    calls.sort(key=lambda c: c.started_at)
    if any(c.previous_response_id or c.conversation_id for c in calls):
        calls = _chained(calls)
    links = {
        c.record.message_id: c.baseline_id
        for c in calls
        if c.baseline_id is not None and c.record.message_id is not None
    }
    threads = split_threads((c.record for c in calls), links or None)
    for stream_id, kind, items in name_threads(threads):
        session.stream(stream_id, kind, source=source).items.extend(items)
    if not session.streams:
        session.stream(MAIN_STREAM, StreamKind.MAIN, source=source)
    return session
