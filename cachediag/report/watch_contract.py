"""The public JSON contract of ``cachediag watch --json``: one object per line.

``report.watch`` builds these shapes as plain dicts; these models document them and give
the JSON Schema (``cachediag watch --schema``), and a test validates real output against
it, so the two cannot drift apart. Every event names its kind in ``event``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from cachediag.report.contract import Request

Strict = ConfigDict(extra="forbid", use_attribute_docstrings=True)
StreamKindName = Literal["main", "subagent", "compaction", "sidechain", "side_call"]


class SessionFields(BaseModel):
    model_config = Strict

    at: float
    """Unix seconds: when the request's response or the compaction was logged; for the
    other events, when the watch noticed them."""
    session_id: str
    """The main transcript's file name without ``.jsonl``."""
    project: str | None
    """The project: its real path from the transcripts' ``cwd`` (where Claude Code ran),
    else the folder holding the transcript (Claude Code's encoded path, which cannot be
    decoded: ``-home-me-my-app``); null when the log names none (a piped capture)."""
    transcript: str
    """Path of the main transcript (it may not exist when only agent files were seen);
    for another agent, its session file (a rollout, a chat, opencode's database)."""
    agent: Literal["claude", "codex", "gemini", "opencode"]
    """Whose session: ``claude`` (Claude Code) or another agent (docs/agents.md)."""


class RequestEvent(SessionFields, Request):
    """One API request, as soon as its response line is written: the fields of one entry
    of ``cachediag analyze --requests`` plus where it happened. ``output_tokens`` and
    ``cost_usd`` are those of the response's first line: Claude Code writes a long
    response as several lines and only the last holds the final output count (misses,
    causes, re-processed tokens and ``miss_cost_usd`` do not depend on it)."""

    model_config = Strict

    event: Literal["request"]
    stream: str
    """``main``, ``agent-<id>`` (a subagent or compaction agent file) or
    ``sidechain-<uuid8>`` (an inline subagent of old Claude Code versions)."""
    stream_kind: StreamKindName


class RebuildEvent(SessionFields):
    """A compaction (``compact_boundary``) or microcompaction: the next request of the
    stream may rebuild its cache, and is ``expected`` if it does while the cache lives."""

    model_config = Strict

    event: Literal["rebuild"]
    stream: str
    kind: Literal["compaction", "microcompaction", "context_edit"]
    line: int | None


class SessionEvent(SessionFields):
    """A session shows activity for the first time in this watch (before its first other
    event), or its transcript was just created."""

    model_config = Strict

    event: Literal["session"]
    new: bool
    """The transcript appeared after the watch started."""


class StreamEvent(SessionFields):
    """A subagent, compaction agent or inline sidechain stream made its first request."""

    model_config = Strict

    event: Literal["stream"]
    stream: str
    stream_kind: StreamKindName
    source: str | None
    """The file the stream's lines come from."""


class ResetEvent(SessionFields):
    """A file was truncated, replaced or rewritten before the point already read: its
    session was read again from the start; only requests not reported before follow."""

    model_config = Strict

    event: Literal["reset"]
    path: str
    reason: Literal["truncated", "replaced", "rewritten"]


class RemovedEvent(SessionFields):
    """A file that had been read was deleted (or renamed away)."""

    model_config = Strict

    event: Literal["removed"]
    path: str


class SummaryEvent(SessionFields):
    """Printed for every session with activity when the watch ends (Ctrl-C, SIGTERM, or
    the end of ``--once``): what happened while it was watched, over all its streams."""

    model_config = Strict

    event: Literal["summary"]
    requests: int
    outcomes: dict[str, int]
    """Requests per outcome (``hit``, ``miss``, ``expected``, ``cold``, ``uncached``)."""
    hit_ratio: float | None
    """Cache reads / all input tokens of those requests; null before any token."""
    reprocessed_tokens: int
    """Re-processed tokens: what misses and expected rebuilds processed again, not read."""
    miss_cost_usd: float
    """Re-cache cost: what those paid beyond hits, over the requests with a known price."""
    unpriced_requests: int
    """Requests of a model without a known price: not counted, never priced at $0."""
    miss_causes: dict[str, int]
    """Causes of the misses, each counted once per miss that names it."""
    streams: list[str]
    """Streams with requests."""
    compactions: int


class WatchEvent(RootModel[Any]):
    """One line of ``cachediag watch --json``."""

    root: (
        RequestEvent
        | RebuildEvent
        | SessionEvent
        | StreamEvent
        | ResetEvent
        | RemovedEvent
        | SummaryEvent
    ) = Field(discriminator="event")


def watch_schema() -> dict[str, Any]:
    return WatchEvent.model_json_schema()
