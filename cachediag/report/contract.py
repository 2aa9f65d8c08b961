"""The public JSON contract of ``cachediag analyze --json``, as pydantic models.

``report.serialize`` builds these shapes as plain dicts (the status line cannot afford
pydantic); these models document them, give them a JSON Schema (``cachediag schema
--output``) and a test validates real output against them with ``extra="forbid"``,
so the two cannot drift apart. Field names of ``PromptCache`` are Claude Code's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from cachediag.model import Ttl

Strict = ConfigDict(extra="forbid")


class LastMissCause(BaseModel):
    model_config = Strict

    causes: list[str]
    """Causes of the last miss, from the closed set (unknown strings from other producers
    are accepted when read back)."""
    tools_added: int | None = None
    tools_removed: int | None = None
    system_char_delta: int | None = None


class PromptCache(BaseModel):
    """Claude Code's ``prompt_cache`` object (v2.1.251+), plus ``hits`` and ``cold_starts``."""

    model_config = Strict

    warm: bool
    caching_observed: bool
    ttl: Ttl
    """``5m``/``1h`` for Anthropic; an OpenAI entry is ``5m``, ``30m`` or ``24h``."""
    expires_at: float | None
    """Unix seconds."""
    requests: int
    misses: int
    expected_rebuilds: int
    hit_ratio: float | None
    cache_write_tokens: int
    miss_recache_tokens: int
    last_miss_at: float | None
    last_miss_cause: LastMissCause | None
    miss_causes: dict[str, int]
    recache_tokens_if_cold: int | None
    hits: int
    cold_starts: int


class Evidence(BaseModel):
    model_config = Strict

    idle_s: float
    ttl_in_force: Ttl
    prev_cached_tokens: int
    read_tokens: int
    fell_back_to: Literal["nothing", "earlier_prefix"]
    model_before: str | None
    model_after: str | None
    server_reason: str | None
    server_missed_tokens: int | None = None
    """Tokens the server said were not reused, when it said so."""
    server_reusable_tokens: int | None = None
    """OpenAI ``comparison_reusable_tokens``: what the compared response could have lent."""


class Cost(BaseModel):
    """USD, from the prices named in the session's ``cost.pricing_source``."""

    model_config = Strict

    cost_usd: float
    """What the priced requests cost."""
    miss_cost_usd: float
    """Re-cache cost: what misses and expected rebuilds paid beyond a hit (their
    re-processed tokens not at read price)."""
    unpriced_requests: int
    """Requests of a model without a known price: not counted, never priced at $0."""
    reported_cost_requests: int | None = None
    """Requests costed at what the provider reported (OpenRouter ``usage.cost``, plus
    the upstream bill of a bring-your-own-key request) instead of list prices; absent
    when none was."""


class SessionCost(Cost):
    model_config = Strict

    main: Cost
    """The main conversation alone; the outer numbers cover every stream."""
    pricing_source: str | None


class Request(BaseModel):
    """One API request of a stream, with its outcome."""

    model_config = Strict

    index: int
    at: float
    message_id: str | None
    request_id: str | None
    model: str | None
    input_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    cache_creation_1h_tokens: int | None
    output_tokens: int
    ttl: Ttl
    gap_s: float | None
    outcome: Literal["cold", "uncached", "hit", "miss", "expected"]
    causes: list[str]
    cause_source: Literal["inferred", "server", "capture"] | None
    reprocessed_tokens: int
    """Re-processed tokens: what a miss or expected rebuild processed again instead of
    reading (0 for any other outcome)."""
    announced: Literal["compaction", "microcompaction", "context_edit"] | None
    line: int | None
    tools_added: int | None = None
    """How many tools the miss's request added (a count, as in ``last_miss_cause``)."""
    tools_removed: int | None = None
    tools_added_names: list[str] | None = None
    """The added tools' names."""
    tools_removed_names: list[str] | None = None
    tools_changed: list[str] | None = None
    system_char_delta: int | None = None
    system_blocks_changed: list[int] | None = None
    first_rewritten_message: int | None = None
    first_rewritten_role: str | None = None
    server_causes: list[str] | None = None
    inferred_causes: list[str] | None = None
    evidence: Evidence | None = None
    cost_usd: float | None = None
    """Null when the model has no known price."""
    miss_cost_usd: float | None = None
    """Re-cache cost of a miss or expected rebuild: what it paid beyond a hit."""
    cost_source: Literal["provider"] | None = None
    """``provider``: ``cost_usd`` is the provider's reported cost, not list prices."""
    provider: str | None = None
    """Who served the request behind a router (OpenRouter's ``provider``)."""
    captured_only: bool | None = None
    """True: no transcript read holds this request (Claude Code writes none for its
    compaction call); its tokens and cost are the capture proxy's record."""


class Stream(BaseModel):
    model_config = Strict

    id: str
    kind: Literal["main", "subagent", "compaction", "sidechain", "side_call"]
    source: str | None
    prompt_cache: PromptCache
    cost: Cost | None = None
    requests: list[Request] | None = None


class Totals(BaseModel):
    model_config = Strict

    requests: int
    input_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    output_tokens: int


class Session(BaseModel):
    """One line of ``cachediag analyze --json``."""

    model_config = Strict

    schema_version: Literal[2]
    """2: request ``tools_added`` / ``tools_removed`` became counts (names in
    ``*_names``), ``prompt_cache`` may be null, ``unreadable_files`` is new."""
    session_id: str
    source: str
    format: str
    project: str | None
    """The project: its real path from the transcripts' ``cwd`` (where Claude Code ran),
    else the folder holding the transcript (Claude Code's encoded path, which cannot be
    decoded: ``-home-me-my-app``); null when the log names none (a piped capture)."""
    prompt_cache: PromptCache | None
    """The main conversation; null when only subagent files of the session were read
    (a subagent's file named alone, a subagents folder without its session): each
    stream in ``streams`` carries its own."""
    streams: list[Stream]
    """Subagents, compaction agents, inline sidechains, side calls."""
    totals: Totals
    api_errors: int
    non_model_calls: int
    """Capture records that are not model requests (count_tokens, OAuth, telemetry)."""
    replayed_responses: int
    """Responses found again in another file of the run (a continued session's copy of
    its history), counted once, in the first session that has them."""
    skipped_lines: int
    unreadable_files: int
    """Files of this session that could not be read (vanished, no permission); each is
    named on stderr and the rest of the session is read."""
    cost: SessionCost | None = None
    requests: list[Request] | None = None
    assumed_ttl: Literal["5m", "1h"] | None = None
    """Present when the log could not tell some requests' TTL (OpenTelemetry events have
    no 5m/1h split): the TTL they were given ($CACHEDIAG_OTEL_TTL, default 5m)."""


class Advice(BaseModel):
    """One cause's advice, as ``cachediag explain --json`` lists it under ``advice``
    (docs/advice.md: the table it comes from)."""

    model_config = Strict

    cause: str
    produced_by: str
    """What usually produces the cause in Claude Code."""
    action: str
    """What to do; names only settings the session's Claude Code version has."""
    actionable: bool
    """False: nothing avoids the cause, and ``action`` says so."""
    settings: list[str]
    """The Claude Code settings, flags or variables ``action`` names."""
    docs: str | None


def analyze_schema() -> dict[str, Any]:
    return Session.model_json_schema()
