"""The public JSON contract of ``cachediag prompt --json``, as pydantic models.

``report.prompt`` builds these shapes as plain dicts; these models document them, give
them a JSON Schema (``cachediag schema --output prompt``) and a test validates real output
against them. Finding kinds are a closed set when cachediag writes them; ``kind`` is a
plain string so that JSON from other producers (or later versions) with other kinds
still reads back.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Strict = ConfigDict(extra="forbid")


class Where(BaseModel):
    model_config = Strict

    section: Literal["tools", "system", "messages"]
    index: int
    """Tool index, system block index, or message index."""
    block: int | None
    """Content block inside the message; null for tools and system blocks."""


class Finding(BaseModel):
    model_config = Strict

    kind: str
    """volatile_in_prefix, stable_after_breakpoint, repeated_block, below_min_cacheable,
    lookback_exceeded, no_breakpoint or tools_reordered (others accepted on read)."""
    where: Where
    first_request: int
    """Index in the stream of the first request that shows it."""
    requests: int
    """How many requests show it."""
    tokens: int
    """Tokens it cost over the stream: re-processed, paid uncached, or repeated."""
    cost_usd: float | None
    """What those tokens cost beyond the cheapest way to send them, at the stream's
    prices; null when the model has no known price."""
    misses: int
    """Misses of the ledger it caused (volatile blocks, reordered tools, lookback)."""
    detail: str
    """One sentence of evidence: names, counts and sizes, never prompt text."""
    advice: str | None
    """One plain sentence on what to change."""


class Block(BaseModel):
    model_config = Strict

    where: Where
    type: str
    name: str | None
    """The tool a tool_use calls or a tool_result answers; a tool's own name."""
    chars: int
    tokens: int
    """Estimated, scaled to the provider's count."""


class Section(BaseModel):
    model_config = Strict

    section: Literal["tools", "system", "messages"]
    label: str
    first: int
    last: int
    blocks: int
    chars: int
    raw_tokens: int
    """Characters / 4 (plus a fixed allowance per image), before scaling."""
    tokens: int
    """Estimated tokens; over all sections they add up to the provider's total."""
    read_tokens: int
    written_tokens: int
    uncached_tokens: int
    roles: dict[str, int] | None = None
    """Messages only: estimated tokens per role."""
    largest: list[Block]


class Breakpoint(BaseModel):
    model_config = Strict

    where: Where
    position: int
    """Blocks before it in the whole prompt (tools, system, messages)."""
    ttl: Literal["5m", "1h"]
    automatic: bool
    """Placed by the API's automatic caching (a top-level cache_control)."""
    prefix_tokens: int


class ProviderTokens(BaseModel):
    model_config = Strict

    input_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    total: int


class Estimate(BaseModel):
    model_config = Strict

    chars: int
    raw_tokens: int
    chars_per_token: float
    media_tokens: int


class Breakdown(BaseModel):
    model_config = Strict

    request: int
    at: float
    model: str | None
    message_id: str | None
    request_id: str | None
    provider_tokens: ProviderTokens
    estimate: Estimate
    sections: list[Section]
    breakpoints: list[Breakpoint]
    largest_blocks: list[Block]


class StreamFindings(BaseModel):
    model_config = Strict

    stream: str
    stream_kind: str
    requests: int
    findings: list[Finding]


class PromptReport(BaseModel):
    """One line of ``cachediag prompt --json``."""

    model_config = Strict

    schema_version: Literal[1]
    source: str
    stream: str
    stream_kind: str
    requests: int
    findings: list[Finding]
    """Over the whole stream, costliest first."""
    breakdown: Breakdown
    pricing_source: str | None
    other_streams: list[StreamFindings] | None = None
    """With ``--all-streams``: the findings of every other stream of the log."""


def prompt_schema() -> dict[str, Any]:
    return PromptReport.model_json_schema()
