"""The records every layer passes around.

Plain slotted dataclasses on purpose: an audit creates millions of them and the status
line imports this module on every run, so they must be cheap to import and to build.
The public JSON contract lives in ``report.contract`` (pydantic), not here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, NamedTuple

Ttl = Literal["5m", "30m", "1h", "24h"]
"""Anthropic writes ``5m`` or ``1h`` entries; OpenAI keeps a prefix ``5m`` (in-memory
retention, 5-10 minutes: the lower bound), ``30m`` (``prompt_cache_options.ttl``,
GPT-5.6+) or ``24h`` (``prompt_cache_retention``)."""
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "30m": 1800.0, "1h": 3600.0, "24h": 86400.0}

MAIN_STREAM = "main"


class StreamKind(StrEnum):
    MAIN = "main"
    SUBAGENT = "subagent"
    COMPACTION = "compaction"
    SIDECHAIN = "sidechain"
    SIDE_CALL = "side_call"


class RebuildKind(StrEnum):
    """Why a rebuild of the cached prefix was announced before it happened."""

    COMPACTION = "compaction"
    MICROCOMPACTION = "microcompaction"
    CONTEXT_EDIT = "context_edit"


class BlockPrint(NamedTuple):
    """One tool, system block or message content block: its size and markup, no text.

    A plain tuple on purpose: a 200k-token capture holds hundreds of thousands of them
    (shared between requests that resend the same message), and saved state turns them
    into lists and back without knowing this type.
    """

    hash: str
    """Content hash without ``cache_control`` (and without tool-call ids, so the same
    content under another ``tool_use_id`` is the same block)."""
    chars: int
    """Characters of the text the block carries (a tool: its JSON definition)."""
    type: str
    """``text``, ``tool_use``, ``tool_result``, ``image``, ``thinking``..., ``tool``."""
    cache_control: str = ""
    """``type;ttl=..;scope=..`` of the block's breakpoint, ``""`` when it has none."""
    media: int = 0
    """Images and binary documents inside the block (their size is not in ``chars``)."""
    name: str | None = None
    """The tool a ``tool_use`` calls or a ``tool_result`` answers (a tool's own name)."""


@dataclass(slots=True, frozen=True)
class Fingerprint:
    """What a request looked like, as hashes, names, counts and lengths only.

    Never holds prompt text: these travel into caches and reports. Fields left ``None``
    were not visible in the log, so no cause may be derived from them.
    """

    model: str | None = None
    system_hashes: tuple[str, ...] | None = None
    system_chars: int | None = None
    system_cache_control: tuple[str, ...] | None = None
    tools: tuple[tuple[str, str], ...] | None = None
    betas: tuple[str, ...] | None = None
    effort: str | None = None
    thinking_mode: str | None = None
    thinking_display: str | None = None
    fast_mode: str | None = None
    auto_mode: str | None = None
    overage: str | None = None
    extra_body_hash: str | None = None
    defer_loading: bool | None = None
    message_hashes: tuple[str, ...] | None = None
    message_roles: tuple[str, ...] | None = None
    joined: bool = False
    """Taken from a body joined to the record (raw-body telemetry, a capture index), not
    from the log line itself: causes named from it have cause_source ``capture``."""
    prompt_cache_key: str | None = None
    """OpenAI ``prompt_cache_key``, hashed (it often names a user)."""
    text_format: str | None = None
    """OpenAI ``text.format`` / ``response_format``: its type and a hash of its schema."""
    verbosity: str | None = None
    service_tier: str | None = None
    """OpenAI ``service_tier`` (Anthropic's own is part of ``extra_body_hash``)."""
    tool_blocks: tuple[BlockPrint, ...] | None = None
    """Per tool, in request order (hashes equal those of ``tools``)."""
    system_blocks: tuple[BlockPrint, ...] | None = None
    """Per system block (hashes equal ``system_hashes``)."""
    message_blocks: tuple[tuple[BlockPrint, ...], ...] | None = None
    """Per message, its content blocks in order (a string content is one text block)."""
    cache_control: str | None = None
    """The body's own top-level ``cache_control`` (automatic caching), ``""`` if none."""


@dataclass(slots=True, frozen=True)
class ServerReason:
    """``diagnostics.cache_miss_reason`` as the API reported it."""

    type: str | None
    """Raw reason type; ``None`` means the server compared and found no divergence."""
    missed_tokens: int | None = None
    reusable_tokens: int | None = None
    """OpenAI ``comparison_reusable_tokens``: what the baseline could have lent."""


@dataclass(slots=True)  # not frozen: one per request (cachediag.analysis says why)
class RequestRecord:
    """One API request, normalised (prompt-cache.md §1)."""

    at: float
    input_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    output_tokens: int
    ttl: Ttl = "5m"
    cache_creation_5m_tokens: int | None = None
    cache_creation_1h_tokens: int | None = None
    model: str | None = None
    request_id: str | None = None
    message_id: str | None = None
    stream: str = MAIN_STREAM
    line: int | None = None
    server_reason: ServerReason | None = None
    fingerprint: Fingerprint | None = None
    applied_edits: int = 0
    """API ``context_management.applied_edits`` in this request's own response."""
    provider: str | None = None
    """Who served the request behind a router (OpenRouter's ``provider``)."""
    reported_cost_usd: float | None = None
    """What the router said the request cost (OpenRouter ``usage.cost``, plus the
    upstream cost of a bring-your-own-key request); preferred over list prices."""
    captured_only: bool = False
    """Known from the capture proxy's log alone: no transcript read holds this request
    (Claude Code writes none for its compaction call), so its tokens are the proxy's."""
    kept_at: float | None = None
    """When ccusage dates the response: the time of its first line reporting the largest
    output count (the usage reports' dates); ``None`` while that is its first line, whose
    time is ``at`` unless a copy written earlier came later (then this is set)."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens

    @property
    def cached_tokens(self) -> int:
        return self.cache_read_tokens + self.cache_creation_tokens


@dataclass(slots=True, frozen=True)
class RebuildAnnounced:
    """A compaction or clearing of old tool results: the next request may rebuild."""

    at: float
    kind: RebuildKind
    stream: str = MAIN_STREAM
    line: int | None = None


StreamItem = RequestRecord | RebuildAnnounced


@dataclass(slots=True)
class StreamLog:
    """The items of one conversation, in the order they happened."""

    id: str
    kind: StreamKind
    items: list[StreamItem] = field(default_factory=list)
    source: str | None = None

    @property
    def requests(self) -> list[RequestRecord]:
        return [item for item in self.items if isinstance(item, RequestRecord)]


@dataclass(slots=True, frozen=True)
class LineIssue:
    """A line that was counted and skipped, with where and why (never its content).

    ``line`` 0 means the whole file was passed over.
    """

    source: str
    line: int
    reason: str


@dataclass(slots=True)
class SessionLog:
    """Everything read for one session: its streams plus what was skipped."""

    session_id: str
    source: str
    format: str
    streams: dict[str, StreamLog] = field(default_factory=dict)
    issues: list[LineIssue] = field(default_factory=list)
    api_errors: int = 0
    project: str | None = None
    cwd: str | None = None
    """The working directory the first transcript line read names (its ``cwd``): where
    Claude Code ran, the project's real path. ``project`` is the folder's name."""
    non_model_calls: int = 0
    """Records of a capture that are not model requests (count_tokens, OAuth, telemetry)."""
    replayed_responses: int = 0
    """Responses already read from another file of the run (a continued session's copy
    of its history): not counted again."""
    main_unreadable: bool = False
    """The main file was not a log at all (reported as an issue with line 0)."""
    assumed_ttl: str | None = None
    """The TTL given to requests whose log could not tell it (OpenTelemetry events carry
    no 5m/1h split); ``None`` when every TTL came from the log."""
    main_present: bool = True
    """False when the input holds only subagent files of this session (a subagent's file
    named alone, an orphan ``subagents`` folder): the main conversation is not known."""
    unreadable: list[LineIssue] = field(default_factory=list)
    """Files of this session that could not be read (vanished, no permission), line 0."""

    def stream(self, stream_id: str, kind: StreamKind, source: str | None = None) -> StreamLog:
        found = self.streams.get(stream_id)
        if found is None:
            found = StreamLog(stream_id, kind, source=source)
            self.streams[stream_id] = found
        return found
