"""cachediag's own normalised request record: the format anyone can convert logs to.

One JSON object per line: a request (the fields of prompt-cache.md §1, plus an optional
fingerprint) or an event such as ``{"event": "compaction", "at": ...}``. The pydantic
models below are the contract; ``cachediag schema`` prints their JSON Schema. Validation
is the point here, so pydantic is imported (lazily, by the reader) only for this format.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cachediag.ingest.jsonl import iter_objects
from cachediag.ingest.skipped import Skipped
from cachediag.model import (
    MAIN_STREAM,
    BlockPrint,
    Fingerprint,
    LineIssue,
    RebuildAnnounced,
    RebuildKind,
    RequestRecord,
    ServerReason,
    SessionLog,
    StreamItem,
    StreamKind,
)

FORMAT = "cachediag-records"
SCHEMA_VERSION = 2
"""1: the original record. 2 adds per-block fingerprints (``tool_blocks``,
``system_blocks``, ``message_blocks``, ``cache_control``); every field of 1 is unchanged,
so a reader of 2 reads 1 as it is."""


class BlockIn(BaseModel):
    """One tool, system block or message content block, as hash and size: never text."""

    model_config = ConfigDict(extra="forbid")

    hash: str
    """Content hash without ``cache_control`` and without tool-call ids."""
    chars: int = Field(ge=0)
    """Characters of the text the block carries (a tool: its JSON definition)."""
    type: str
    """The block's ``type`` (``text``, ``tool_use``, ``tool_result``, ``image``...);
    ``tool`` for a tool definition."""
    cache_control: str = ""
    """The block's breakpoint as ``type;ttl=..;scope=..``; ``""`` when it has none."""
    media: int = Field(default=0, ge=0)
    """Images and binary documents inside the block (not counted in ``chars``)."""
    name: str | None = None
    """The tool a ``tool_use`` calls, a ``tool_result`` answers, or a tool's own name."""


BlockRow = tuple[str, int, str, str, int, str | None]
"""A block as one row, the way the capture proxy writes it (shorter than the object):
``[hash, chars, type, cache_control, media, name]``."""
Block = BlockIn | BlockRow


class FingerprintIn(BaseModel):
    """Hashes, names, counts and lengths of a request; never its text. Omit what is unknown."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    system_hashes: list[str] | None = None
    """One content hash per system block, ``cache_control`` stripped."""
    system_chars: int | None = None
    system_cache_control: list[str] | None = None
    """Per system block: its ``cache_control`` as ``type;ttl=..;scope=..``, or ``""``."""
    tools: list[tuple[str, str]] | None = None
    """``[name, content hash]`` per tool, in request order."""
    betas: list[str] | None = None
    effort: str | None = None
    thinking_mode: str | None = None
    thinking_display: str | None = None
    fast_mode: str | None = None
    auto_mode: str | None = None
    overage: str | None = None
    extra_body_hash: str | None = None
    defer_loading: bool | None = None
    message_hashes: list[str] | None = None
    message_roles: list[str] | None = None
    prompt_cache_key: str | None = None
    """OpenAI ``prompt_cache_key``, hashed."""
    text_format: str | None = None
    """OpenAI text format: its type, and a hash of its schema when it has one."""
    verbosity: str | None = None
    service_tier: str | None = None
    tool_blocks: list[Block] | None = None
    """Schema 2: per tool, in request order (each block an object or a row)."""
    system_blocks: list[Block] | None = None
    """Schema 2: per system block."""
    message_blocks: list[list[Block]] | None = None
    """Schema 2: per message, its content blocks in order."""
    cache_control: str | None = None
    """Schema 2: the body's top-level ``cache_control`` (automatic caching), or ``""``."""


class ServerReasonIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str | None
    """Anthropic ``diagnostics.cache_miss_reason.type`` or OpenAI
    ``prompt_cache_diagnostics.reason``; null: the server found no divergence."""
    missed_tokens: int | None = None
    reusable_tokens: int | None = None
    """OpenAI ``comparison_reusable_tokens``."""


class RequestIn(BaseModel):
    """One API request (prompt-cache.md §1)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1, 2] | None = None
    """Which version of this format the writer followed (absent: 1)."""
    at: float
    """When the response arrived, Unix epoch seconds."""
    input_tokens: int = Field(ge=0)
    """Uncached input: tokens after the last cache breakpoint."""
    cache_read_tokens: int = Field(ge=0)
    cache_creation_tokens: int = Field(ge=0)
    cache_creation_5m: int | None = Field(default=None, ge=0)
    cache_creation_1h: int | None = Field(default=None, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    ttl: Literal["5m", "30m", "1h", "24h"] | None = None
    """Defaults to ``1h`` when ``cache_creation_1h`` > 0, else ``5m``."""
    model: str | None = None
    request_id: str | None = None
    message_id: str | None = None
    stream: str = MAIN_STREAM
    applied_edits: int = Field(default=0, ge=0)
    """Entries of the response's ``context_management.applied_edits``."""
    server_reason: ServerReasonIn | None = None
    fingerprint: FingerprintIn | None = None
    sent_at: float | None = None
    """When the request was sent (the capture proxy writes it); orders a log's requests
    when they are split into conversations."""
    first_byte_at: float | None = None
    status: int | None = None
    """The HTTP status of the response."""
    hints: dict[str, str] | None = None
    """Claude Code's gateway hint headers, names without ``x-claude-code-``."""
    fingerprint_error: str | None = None
    """Why the request body could not be fingerprinted (it was forwarded all the same)."""
    provider: str | None = None
    """Who served the request behind a router (OpenRouter's ``provider``)."""
    reported_cost_usd: float | None = Field(default=None, ge=0)
    """What the provider said the request cost; used instead of list prices."""


class FailedRequestIn(BaseModel):
    """A request that got no usable answer: an API error, an unreachable upstream, a
    stream cancelled or broken off. Counted, never a request of the ledger."""

    model_config = ConfigDict(extra="forbid")

    at: float
    failure: Literal[
        "http_error",
        "upstream_unreachable",
        "cancelled",
        "upstream_dropped",
        "no_usage",
        "over_limit",
    ]
    sent_at: float | None = None
    first_byte_at: float | None = None
    status: int | None = None
    model: str | None = None
    request_id: str | None = None
    hints: dict[str, str] | None = None
    fingerprint: FingerprintIn | None = None
    fingerprint_error: str | None = None


class EventIn(BaseModel):
    """A rebuild announced before it happens (a compaction, a clearing of tool results)."""

    model_config = ConfigDict(extra="forbid")

    event: Literal["compaction", "microcompaction", "context_edit"]
    at: float
    stream: str = MAIN_STREAM


def json_schema() -> dict[str, Any]:
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "cachediag normalised request log line",
        "description": "One JSON object per line: a request record or an event.",
        "oneOf": [
            {"$ref": "#/$defs/RequestIn"},
            {"$ref": "#/$defs/EventIn"},
            {"$ref": "#/$defs/FailedRequestIn"},
        ],
        "$defs": {},
    }
    for model in (RequestIn, EventIn, FailedRequestIn):
        sub = model.model_json_schema(ref_template="#/$defs/{model}")
        schema["$defs"].update(sub.pop("$defs", {}))
        schema["$defs"][model.__name__] = sub
    return schema


def _prints(blocks: list[Block]) -> tuple[BlockPrint, ...]:
    return tuple(
        BlockPrint(*b)
        if isinstance(b, tuple)
        else BlockPrint(b.hash, b.chars, b.type, b.cache_control, b.media, b.name)
        for b in blocks
    )


_BLOCK_FIELDS = ("tool_blocks", "system_blocks", "message_blocks")


def _fingerprint(fp: FingerprintIn) -> Fingerprint:
    # Same field names on both sides: lists become the record's tuples; beta names are a
    # set, so their order is not a change.
    values: dict[str, Any] = {
        name: tuple(value) if isinstance(value, list) else value
        for name, value in fp
        if name not in _BLOCK_FIELDS
    }
    if fp.betas is not None:
        values["betas"] = tuple(sorted(fp.betas))
    if fp.tool_blocks is not None:
        values["tool_blocks"] = _prints(fp.tool_blocks)
    if fp.system_blocks is not None:
        values["system_blocks"] = _prints(fp.system_blocks)
    if fp.message_blocks is not None:
        values["message_blocks"] = tuple(_prints(m) for m in fp.message_blocks)
    return Fingerprint(**values)


def to_item(obj: dict[str, Any], line: int) -> StreamItem:
    if "event" in obj:
        ev = EventIn.model_validate(obj)
        return RebuildAnnounced(ev.at, RebuildKind(ev.event), stream=ev.stream, line=line)
    r = RequestIn.model_validate(obj)
    ttl = r.ttl or ("1h" if (r.cache_creation_1h or 0) > 0 else "5m")
    return RequestRecord(
        at=r.at,
        input_tokens=r.input_tokens,
        cache_read_tokens=r.cache_read_tokens,
        cache_creation_tokens=r.cache_creation_tokens,
        output_tokens=r.output_tokens,
        ttl=ttl,
        cache_creation_5m_tokens=r.cache_creation_5m,
        cache_creation_1h_tokens=r.cache_creation_1h,
        model=r.model,
        request_id=r.request_id,
        message_id=r.message_id,
        stream=r.stream,
        line=line,
        server_reason=None
        if r.server_reason is None
        else ServerReason(
            r.server_reason.type, r.server_reason.missed_tokens, r.server_reason.reusable_tokens
        ),
        fingerprint=None if r.fingerprint is None else _fingerprint(r.fingerprint),
        applied_edits=r.applied_edits,
        provider=r.provider,
        reported_cost_usd=r.reported_cost_usd,
    )


def _problem(exc: ValidationError) -> str:
    # Field locations and error kinds only: pydantic's message would quote the input.
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "line"
        parts.append(f"{where}: {err['type']}")
    return "not a valid cachediag record (" + "; ".join(parts) + ")"


def read_records(lines: Iterable[bytes], source: str, session_id: str) -> SessionLog:
    """Records with a ``stream`` go to it; requests that name none but carry message
    hashes (the capture proxy's) are split into conversations as a capture is."""
    session = SessionLog(session_id, source, FORMAT, issues=Skipped())
    session.stream(MAIN_STREAM, StreamKind.MAIN, source=source)
    unplaced: list[tuple[float, RequestRecord]] = []
    for number, obj in iter_objects(lines, source, session.issues):
        try:
            if "failure" in obj and "event" not in obj:
                _count_failure(FailedRequestIn.model_validate(obj), session, number)
                continue
            item = to_item(obj, number)
        except ValidationError as exc:
            session.issues.append(LineIssue(source, number, _problem(exc)))
            continue
        if _placeable(item, obj):
            assert isinstance(item, RequestRecord)
            sent = obj.get("sent_at")
            unplaced.append((sent if isinstance(sent, (int, float)) else item.at, item))
            continue
        kind = StreamKind.MAIN if item.stream == MAIN_STREAM else StreamKind.SUBAGENT
        session.stream(item.stream, kind, source=source).items.append(item)
    if unplaced:
        _place(session, unplaced, source)
    return session


def _placeable(item: StreamItem, obj: dict[str, Any]) -> bool:
    return (
        isinstance(item, RequestRecord)
        and "stream" not in obj
        and item.fingerprint is not None
        and bool(item.fingerprint.message_hashes)
    )


def _place(session: SessionLog, unplaced: list[tuple[float, RequestRecord]], source: str) -> None:
    from cachediag.ingest.threads import name_threads, split_threads

    # Streams are sequences of requests as sent; the proxy writes them as they complete.
    unplaced.sort(key=lambda pair: pair[0])
    for stream_id, kind, items in name_threads(split_threads(r for _, r in unplaced)):
        stream = session.stream(stream_id, kind, source=source)
        stream.items.extend(items)
        stream.items.sort(key=_item_time)


def _item_time(item: StreamItem) -> float:
    return item.at


def _count_failure(failed: FailedRequestIn, session: SessionLog, line: int) -> None:
    if failed.failure in ("http_error", "upstream_unreachable"):
        session.api_errors += 1
    else:
        what = {
            "cancelled": "cancelled by the client before the answer ended",
            "upstream_dropped": "the upstream broke off the answer",
            "no_usage": "the answer carried no readable usage",
            "over_limit": "the answer was over the proxy's --record-max",
        }[failed.failure]
        session.issues.append(LineIssue(session.source, line, f"request {what} (no usage)"))
