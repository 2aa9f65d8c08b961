"""opencode sessions (its SQLite database, ``ingest.opencode_db``) -> the same normalised
records as Claude Code transcripts (docs/agents-opencode.md says what each row holds).

One model call is one ``step-finish`` part, with its own ``tokens`` {input (uncached),
output (reasoning not included), reasoning, cache {read, write}}. opencode 1.18 writes an
assistant message per call (a tool call's message ends ``tool-calls``, the answer after
its result is the next one); a message that holds several steps is read step by step,
since its own ``tokens`` are only its last step's. A message without step parts is one
call with the message's tokens. A session served by the event-sourced runner 1.18
already has tables for (``session_message``, one ``assistant`` row per call with
``model`` {id, providerID} and the same ``tokens``) is read from there. The call's time
is its ``step-start`` part (when the answer began), else the message's creation.

What the database cannot say: opencode's title call (a small model on the first turn) is
never stored; the system prompt (it names the model), the AGENTS.md text, the tool list
and MCP servers are not in it. So records carry no fingerprint: the ledger names only
what the rows hold (the model, the provider, the clock).

opencode speaks to any provider. Anthropic-style rows have a cache ``write`` and are
analysed with Claude Code's ledger (format ``opencode``); rows from providers that cache
automatically (OpenAI, Gemini, most others: ``write`` 0) with OpenAI's (``opencode-auto``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cachediag.ingest.openai import openai_ttl
from cachediag.ingest.opencode_db import (
    OpencodeDbError,
    Row,
    SessionRow,
    Snapshot,
    default_databases,
    read_snapshot,
)
from cachediag.model import (
    MAIN_STREAM,
    LineIssue,
    RebuildAnnounced,
    RebuildKind,
    RequestRecord,
    SessionLog,
    StreamKind,
    Ttl,
)

FORMAT = "opencode"
"""Sessions served with explicit, billed cache writes (Anthropic): Claude Code's ledger."""
AUTO_FORMAT = "opencode-auto"
"""Sessions served with automatic prefix caching (no write charge): OpenAI's ledger."""
COMPACTION_STREAM = "compaction"
_EXPLICIT_PROVIDERS = frozenset({"anthropic", "google-vertex-anthropic"})

__all__ = [
    "AUTO_FORMAT", "FORMAT", "OpencodeDbError", "default_databases", "read_database",
    "read_database_logs",
]  # fmt: skip


def _count(obj: Any, key: str) -> int:
    value = obj.get(key) if isinstance(obj, dict) else None
    if type(value) is int and value >= 0:
        return value
    if type(value) is float and value >= 0 and value.is_integer():
        return int(value)
    return 0


@dataclass(slots=True)
class _Call:
    at: float
    tokens: dict[str, Any]
    message_id: str
    model: str | None
    provider: str | None
    compaction: bool


@dataclass(slots=True)
class _Steps:
    """The step parts of one message: when each call began, and its usage."""

    starts: list[float] = field(default_factory=list)
    finishes: list[dict[str, Any]] = field(default_factory=list)


def _loads(row: Row, what: str, source: str, issues: list[LineIssue]) -> dict[str, Any] | None:
    try:
        obj = json.loads(row.data)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        issues.append(LineIssue(source, 0, f"{what} {row.id}: data is not a JSON object"))
        return None
    return obj


def _steps(parts: list[Row], source: str, issues: list[LineIssue]) -> dict[str, _Steps]:
    out: dict[str, _Steps] = {}
    for row in parts:
        obj = _loads(row, "part", source, issues)
        if obj is None or row.message_id is None:
            continue
        kind = obj.get("type")
        steps = out.setdefault(row.message_id, _Steps())
        if kind == "step-start":
            steps.starts.append(row.time_created / 1000)
        elif kind == "step-finish":
            tokens = obj.get("tokens")
            steps.finishes.append(tokens if isinstance(tokens, dict) else {})
    return out


def _calls_of(row: Row, msg: dict[str, Any], steps: _Steps | None) -> list[_Call]:
    times = msg.get("time") if isinstance(msg.get("time"), dict) else {}
    created = times.get("created") if isinstance(times, dict) else None
    at = (created if isinstance(created, (int, float)) else row.time_created) / 1000
    model = msg.get("modelID") if isinstance(msg.get("modelID"), str) else None
    provider = msg.get("providerID") if isinstance(msg.get("providerID"), str) else None
    compaction = msg.get("summary") is True or msg.get("mode") == "compaction"
    usages = steps.finishes if steps is not None and steps.finishes else None
    if usages is None:
        tokens = msg.get("tokens")
        usages = [tokens] if isinstance(tokens, dict) else []
    starts = steps.starts if steps is not None else []
    return [
        _Call(starts[i] if i < len(starts) else at, u, row.id, model, provider, compaction)
        for i, u in enumerate(usages)
    ]


def _v2_call(row: Row, msg: dict[str, Any]) -> _Call | None:
    """A ``session_message`` assistant row: one call, ``model`` {id, providerID}."""
    tokens = msg.get("tokens")
    if not isinstance(tokens, dict):
        return None  # a call still running, or one that failed before its usage
    ref = msg.get("model") if isinstance(msg.get("model"), dict) else {}
    model = ref.get("id") if isinstance(ref, dict) else None
    provider = ref.get("providerID") if isinstance(ref, dict) else None
    return _Call(
        row.time_created / 1000, tokens, row.id,
        model if isinstance(model, str) else None,
        provider if isinstance(provider, str) else None,
        msg.get("agent") == "compaction",
    )  # fmt: skip


@dataclass(slots=True)
class OpencodeRequest(RequestRecord):
    """An opencode model call: a ``RequestRecord`` that knows its reasoning."""

    reasoning_tokens: int = 0
    """Of ``output_tokens``: the reasoning opencode records apart (``tokens.reasoning``),
    billed at the output price; ccusage leaves it out of ``outputTokens``."""


def _record(call: _Call, ttl: Ttl) -> RequestRecord:
    tokens = call.tokens
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    return OpencodeRequest(
        at=call.at,
        input_tokens=_count(tokens, "input"),
        cache_read_tokens=_count(cache, "read"),
        cache_creation_tokens=_count(cache, "write"),
        # opencode keeps reasoning apart from output; both are billed at the output price.
        output_tokens=_count(tokens, "output") + _count(tokens, "reasoning"),
        ttl=ttl,
        cache_creation_5m_tokens=_count(cache, "write") if ttl == "5m" else None,
        model=call.model,
        message_id=call.message_id,
        provider=call.provider,
        stream=COMPACTION_STREAM if call.compaction else MAIN_STREAM,
        reasoning_tokens=_count(tokens, "reasoning"),
    )


def explicit_caching(calls: list[_Call]) -> bool:
    """Anthropic's form: any billed cache write, or a Claude model / Anthropic provider."""
    for call in calls:
        cache = call.tokens.get("cache")
        if _count(cache, "write") > 0 or call.provider in _EXPLICIT_PROVIDERS:
            return True
        if "claude" in (call.model or "").lower():
            return True
    return False


def _session_log(source: str, srow: SessionRow, calls: list[_Call], errors: int) -> SessionLog:
    explicit = explicit_caching(calls)
    log = SessionLog(srow.id, source, FORMAT if explicit else AUTO_FORMAT, api_errors=errors)
    if srow.directory:
        log.cwd = srow.directory
        log.project = Path(srow.directory).name or None
    main = log.stream(MAIN_STREAM, StreamKind.MAIN, source=source)
    for call in sorted(calls, key=lambda c: c.at):
        # Anthropic through opencode writes 5-minute entries (no ttl in its cache_control);
        # an automatic cache keeps each prefix for its model's retention.
        record = _record(call, "5m" if explicit else openai_ttl(model=call.model))
        if record.stream == COMPACTION_STREAM:
            # The summary call reads the history; main's next request rebuilds from it.
            log.stream(COMPACTION_STREAM, StreamKind.COMPACTION, source=source).items.append(record)
            main.items.append(RebuildAnnounced(record.at, RebuildKind.COMPACTION))
        else:
            main.items.append(record)
    return log


def logs_from_snapshot(snap: Snapshot, source: str) -> list[SessionLog]:
    """One log per session (a subagent's child session is its own), oldest first."""
    issues: list[LineIssue] = []
    steps = _steps(snap.parts, source, issues)
    calls: dict[str, list[_Call]] = {}
    errors: dict[str, int] = {}
    for row in snap.messages:
        msg = _loads(row, "message", source, issues)
        if msg is None or msg.get("role") != "assistant":
            continue
        if msg.get("error") is not None:
            errors[row.session_id] = errors.get(row.session_id, 0) + 1
        calls.setdefault(row.session_id, []).extend(_calls_of(row, msg, steps.get(row.id)))
    v2: dict[str, list[_Call]] = {}
    for row in snap.v2_assistants:
        msg = _loads(row, "session_message", source, issues)
        call = None if msg is None else _v2_call(row, msg)
        if call is not None:
            v2.setdefault(row.session_id, []).append(call)
    for sid, found in v2.items():
        # The same calls are never in both; a session the v2 runner served has no
        # assistant rows in ``message``.
        if not calls.get(sid):
            calls[sid] = found
    logs = [
        _session_log(source, s, calls.get(s.id, []), errors.get(s.id, 0)) for s in snap.sessions
    ]
    if logs:
        logs[0].issues.extend(issues)  # rows are not per file line: the first log carries them
    return logs


def read_database(path: Path) -> list[SessionLog]:
    """Every session of one opencode database; ``OpencodeDbError`` if it is not one."""
    return logs_from_snapshot(read_snapshot(path), str(path))


def read_database_logs(path: Path) -> list[SessionLog]:
    """``read_database``, with a file that is not one (or cannot be read) as one log
    holding the reason at line 0, as the other agents' readers report a non-log."""
    try:
        return read_database(path)
    except OpencodeDbError as exc:
        log = SessionLog(session_id=path.stem, source=str(path), format=FORMAT)
        issue = LineIssue(str(path), 0, exc.reason)
        if exc.unreadable:
            log.unreadable.append(issue)
        else:
            log.issues.append(issue)
            log.main_unreadable = True
        return [log]


def read_default(environ: dict[str, str] | None = None) -> list[SessionLog]:
    """Every session of the user's opencode databases (``default_databases``)."""
    return [log for db in default_databases(environ) for log in read_database(db)]
