"""One row per request: what every usage report (daily, weekly, monthly, session, blocks)
is built from.

A row holds what ccusage counts for a request (when, which session and project, which
model, the four token counts, the cost) and what the prompt cache made of it (its
outcome, what a miss paid beyond a hit, the cause named). Rows are plain slotted records:
an on-disk index stores them per transcript file and reads them back by the million, so
they carry only numbers and short strings, never prompt text.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import PurePath

from cachediag.analysis.costs import PriceFn, entry_cost
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.ingest.agents import agent_of
from cachediag.usage.agents import (
    CLAUDE,
    CODEX,
    codex_extra,
    codex_session,
    hidden_output,
)
from cachediag.usage.stamps import Kept, last_times, needs_reread

HIT = "hit"
MISS = "miss"
EXPECTED = "expected"
"""The cache outcomes a row can carry: ``Outcome``'s values (``cold`` and ``uncached``
too), kept as strings so a stored row needs no enum to be read back."""


@dataclass(slots=True, frozen=True)
class RequestRow:
    """One model request of a transcript, as the usage reports count it."""

    at: float
    """When ccusage dates the response: the ``timestamp`` of the line whose usage it
    keeps (seconds since the epoch, UTC; ``usage.stamps`` says why), else when it
    started."""
    session_id: str
    project: str
    """The folder holding the session's transcripts (``~/.claude/projects/<project>``):
    what ccusage calls ``projectPath``."""
    cwd: str | None
    """The project's real path when the transcript names it (``cwd``)."""
    model: str | None
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    cost_usd: float | None
    """What the request cost at the project's prices; ``None``: its model has no price
    (never counted as $0)."""
    outcome: str
    """The prompt cache's verdict (``Outcome``): hit, miss, expected (an announced
    rebuild), cold or uncached."""
    recache_usd: float
    """What a miss or expected rebuild paid beyond a hit (0 otherwise)."""
    cause: str | None
    """The first cause named for a miss (``Cause`` value); ``None`` when none was."""
    transcript_session: str = ""
    """The session as ccusage names it: the transcript file's name without ``.jsonl``,
    or for a subagent's file (``<session>/subagents/agent-*.jsonl``) its session folder.
    A pre-2.0 ``agent-*.jsonl`` beside the main file is its own session there."""
    started_at: float = 0.0
    """When the response started to arrive (its first line): the cache's clock."""
    logged_cost_usd: float | None = None
    """The transcript line's own ``costUSD``, when it has one (older Claude Code)."""
    source: str = ""
    line: int = 0
    """The transcript file and line the response was read from: ccusage lists a day's
    or a session's models in the order its sorted files first name them."""
    message_id: str | None = None
    request_id: str | None = None
    """The response's ids, as ccusage keys its deduplication (``message.id:requestId``)."""
    agent: str = "claude"
    """Whose session it is (``ingest.agents.agent_of``): claude, codex, gemini, opencode."""
    hidden_output_tokens: int = 0
    """Output billed but left out of ``output_tokens``, as ccusage leaves it out of
    ``outputTokens`` while its total and cost count it (Gemini CLI's thinking, opencode's
    reasoning)."""
    reasoning_tokens: int = 0
    """Of ``output_tokens``, the reasoning (Codex's ``reasoning_output_tokens``: ccusage's
    ``reasoningOutputTokens``); 0 where the log does not tell them apart."""

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_tokens
            + self.cache_read_tokens
            + self.hidden_output_tokens
        )


def transcript_session(source: str | None, session_id: str) -> str:
    """ccusage's session name for a transcript file (``RequestRow.transcript_session``)."""
    if not source:
        return session_id
    path = PurePath(source)
    parts = path.parts
    if len(parts) >= 3 and parts[-2] == "subagents":
        return parts[-3]
    return path.stem if path.suffix == ".jsonl" else path.name


def row_of(
    entry: LedgerEntry,
    session_id: str,
    project: str,
    cwd: str | None,
    price_of: PriceFn,
    transcript: str = "",
    dated: dict[str, Kept] | None = None,
    source: str = "",
    agent: str = "claude",
) -> RequestRow:
    """The row of one ledger entry (its request, outcome and costs); ``dated``: the
    lines ccusage keeps, read again (``stamps.last_times``), else the reader's
    ``kept_at``; a Codex request as ccusage dates it (``agents.codex_extra``)."""
    record = entry.record
    cost = entry_cost(entry, price_of)
    diagnosis = entry.diagnosis
    cause = None
    if diagnosis is not None and diagnosis.named and diagnosis.causes:
        cause = diagnosis.causes[0].value
    mid = record.message_id
    logged = None
    if dated is None:
        kept_at = record.kept_at
        at = record.at if mid is None or kept_at is None else kept_at
    else:
        kept = None if mid is None else dated.get(mid)
        at = record.at if kept is None else kept.at
        logged = None if kept is None else kept.logged_cost_usd
    hidden = hidden_output(record)
    reasoning, usage_at = codex_extra(record)
    if usage_at is not None:
        at = usage_at
    return RequestRow(
        at=at,
        session_id=session_id,
        project=project,
        cwd=cwd,
        model=record.model,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens - hidden,
        cache_creation_tokens=record.cache_creation_tokens,
        cache_read_tokens=record.cache_read_tokens,
        cost_usd=cost.cost_usd,
        outcome=entry.outcome.value,
        recache_usd=cost.miss_cost_usd or 0.0,
        cause=cause,
        transcript_session=transcript or session_id,
        started_at=record.at,
        logged_cost_usd=logged,
        source=source,
        line=record.line or 0,
        message_id=record.message_id,
        request_id=record.request_id,
        agent=agent,
        hidden_output_tokens=hidden,
        reasoning_tokens=reasoning,
    )


def session_rows(analysis: SessionAnalysis, price_of: PriceFn) -> list[RequestRow]:
    """Every request of one analysed session (main conversation, subagents, side calls),
    oldest first: what the pipeline made of its transcripts, priced with ``price_of``,
    dated as ccusage dates them (``stamps``: by the reader's ``kept_at``, or the lines
    holding usage read again where a line has its own ``costUSD``).

    Responses the pipeline already counted in another file (a continued session's copy)
    are not in the ledger, so they are not here either: each response is one row.
    """
    log = analysis.log
    agent = agent_of(log.format)
    project = log.project or ""
    files = {s.log.source for s in analysis.streams if s.log.source and s.log.source != "-"}
    ordered = sorted(files)
    dated = last_times(ordered) if needs_reread(log.format, ordered) else None
    rows: list[RequestRow] = []
    for stream in analysis.streams:
        source = stream.log.source or ""
        name = _session_name(agent, source, log.session_id)
        rows.extend(
            row_of(
                entry,
                log.session_id,
                project,
                log.cwd,
                price_of,
                name,
                dated,
                source,
                agent,
            )
            for entry in stream.entries
            if not entry.record.captured_only
        )
    rows.sort(key=lambda r: r.at)
    return rows


def _session_name(agent: str, source: str, session_id: str) -> str:
    if agent == CLAUDE:
        return transcript_session(source, session_id)
    if agent == CODEX:
        return codex_session(source, session_id)
    return session_id  # Gemini CLI's and opencode's own ids


def is_miss(row: RequestRow) -> bool:
    return row.outcome == Outcome.MISS.value


def is_expected(row: RequestRow) -> bool:
    return row.outcome == Outcome.EXPECTED.value


COST_MODES = ("auto", "calculate", "display")
"""ccusage's ``--mode``: the log's ``costUSD`` when a line has one, else our prices
(``auto``); always our prices (``calculate``); the log's only, 0 without (``display``)."""


def priced(row: RequestRow, mode: str) -> RequestRow:
    """``row`` with the cost ``mode`` takes (``COST_MODES``)."""
    if mode == "calculate" or (mode == "auto" and row.logged_cost_usd is None):
        return row
    return replace(row, cost_usd=row.logged_cost_usd or 0.0)
