"""Codex CLI rollouts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``) -> the same
normalised records as Claude Code transcripts (docs/agents.md says what each line holds).

One model call is one ``token_usage_record`` (keyed by ``response_id``); its settings are
the last ``turn_context`` (model, effort) and the merged ``world_state`` (instructions,
tool namespaces) before it. Rollouts older than ``token_usage_record`` carry only
``event_msg`` ``token_count`` running totals: a call is then a ``last_token_usage`` whose
totals moved on, so the duplicate Codex writes when a compaction starts and the
all-zero one after it are not counted (ccusage counts the duplicate).

Codex's compaction call is sent without tools, so it never reads the main prefix: it is
put in its own ``compaction`` stream, and main gets a rebuild announcement, as Claude
Code's ``compact_boundary`` does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cachediag.ingest.anthropic import parse_timestamp, token_count
from cachediag.ingest.lines import BadLine, JsonObject, iter_objects
from cachediag.ingest.openai import openai_ttl
from cachediag.model import (
    MAIN_STREAM,
    Fingerprint,
    LineIssue,
    RebuildAnnounced,
    RebuildKind,
    RequestRecord,
    SessionLog,
    StreamKind,
)

FORMAT = "codex-rollout"
COMPACTION_STREAM = "compaction"
_KNOWN = frozenset(
    {"session_meta", "turn_context", "world_state", "response_item", "event_msg",
     "token_usage_record", "compacted"}
)  # fmt: skip
_DEFAULT_EFFORT = "default"
"""turn_context says no effort when the model's default is in force. For a model whose
default is not known below it is a setting of its own, so that a move to or from an
explicit one is still a visible change."""
DEFAULT_EFFORTS = {
    "gpt-5.5": "medium",
    "gpt-5.6-sol": "low",
    "gpt-5.6-terra": "medium",
    "gpt-5.6-luna": "medium",
    "gpt-6-astra": "low",
    "gpt-6-sol": "medium",
    "gpt-6-luna": "medium",
    "gpt-6.1-sol": "low",
    "gpt-6.1-terra": "low",
    "codex-auto-review": "medium",
}
"""``default_reasoning_level`` of the model catalog bundled with Codex 0.169.0: what the
request carries when turn_context names no effort (the body says ``reasoning.effort``)."""


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(slots=True)
class _State:
    """What the rollout said so far about the request that comes next."""

    model: str | None = None
    effort: str = _DEFAULT_EFFORT
    instructions: str | None = None
    """Hash of the instructions in the prefix (base_instructions, then each full
    world_state's); a diff is appended to the conversation as a new item, not this."""
    tools: dict[str, str] | None = None
    """Tool namespaces and their descriptions' hashes (world_state ``tools``); ``None``
    until a world_state says (older rollouts have none: no tools cause from them)."""
    from_world_state: bool = False
    """Whether ``instructions`` is a full world_state's (else base_instructions')."""
    emitted: bool = False
    last_totals: tuple[int, ...] | None = None
    compaction_ids: set[str] = field(default_factory=set)

    def fingerprint(self) -> Fingerprint:
        self.emitted = True
        effort = self.effort
        if effort == _DEFAULT_EFFORT:
            effort = DEFAULT_EFFORTS.get(self.model or "", _DEFAULT_EFFORT)
        return Fingerprint(
            model=self.model,
            effort=effort,
            system_hashes=None if self.instructions is None else (self.instructions,),
            tools=None if self.tools is None else tuple(sorted(self.tools.items())),
        )


def _instructions_of(state: JsonObject) -> str | None:
    model = state.get("model")
    collab = state.get("collaboration_mode")
    parts = [
        model.get("instructions") if isinstance(model, dict) else None,
        collab.get("instructions") if isinstance(collab, dict) else None,
    ]
    return _digest(parts) if any(p is not None for p in parts) else None


def _apply_world_state(state: _State, payload: JsonObject) -> None:
    body = payload.get("state")
    if not isinstance(body, dict):
        raise BadLine("world_state without a state object")
    full = payload.get("full") is True
    tools = body.get("tools")
    if full:
        state.tools = {}
        found = _instructions_of(body)
        # The two hashes are of different things: a rollout that gains world_state after
        # requests under base_instructions (resumed by a newer Codex) changed nothing.
        if found is not None and (state.from_world_state or not state.emitted):
            state.instructions, state.from_world_state = found, True
    if isinstance(tools, dict):
        if state.tools is None:
            state.tools = {}
        for name, desc in tools.items():
            if desc is None:
                state.tools.pop(str(name), None)  # a diff's way of removing one
            else:
                state.tools[str(name)] = _digest(desc)


def _apply_turn_context(state: _State, payload: JsonObject) -> None:
    model = payload.get("model")
    if isinstance(model, str) and model:
        state.model = model
    effort = payload.get("effort")
    if not isinstance(effort, str):
        collab = payload.get("collaboration_mode")
        settings = collab.get("settings") if isinstance(collab, dict) else None
        effort = settings.get("reasoning_effort") if isinstance(settings, dict) else None
    state.effort = effort if isinstance(effort, str) and effort else _DEFAULT_EFFORT


@dataclass(slots=True)
class CodexRequest(RequestRecord):
    """A Codex model call: a ``RequestRecord`` with what ccusage reads of it besides."""

    reasoning_tokens: int = 0
    """Of ``output_tokens``: ``reasoning_output_tokens`` (ccusage's
    ``reasoningOutputTokens``)."""
    usage_at: float | None = None
    """When ccusage dates it: the ``token_count`` event that reports the usage (written
    just after a ``token_usage_record``), else ``None`` (the record's own time)."""


_REASONING_KEY = "reasoning_output_tokens"


def _reasoning(usage: object) -> int:
    value = usage.get(_REASONING_KEY) if isinstance(usage, dict) else None
    return value if type(value) is int and value >= 0 else 0


def _usage_record(
    usage: JsonObject, at: float, line: int, state: _State, response_id: str | None
) -> CodexRequest:
    """Codex's usage: ``input_tokens`` includes ``cached_input_tokens`` (and any
    ``cache_write_input_tokens``); ``output_tokens`` includes the reasoning tokens."""
    prompt = token_count(usage, "input_tokens") or 0
    read = token_count(usage, "cached_input_tokens") or 0
    written = token_count(usage, "cache_write_input_tokens") or 0
    if read + written > prompt:
        raise BadLine("cached_input_tokens exceed input_tokens")
    return CodexRequest(
        at=at,
        input_tokens=prompt - read - written,
        cache_read_tokens=read,
        cache_creation_tokens=written,
        output_tokens=token_count(usage, "output_tokens") or 0,
        ttl=openai_ttl(model=state.model),
        model=state.model,
        message_id=response_id,
        line=line,
        fingerprint=state.fingerprint(),
        reasoning_tokens=_reasoning(usage),
    )


@dataclass(slots=True)
class _Calls:
    """The model calls read, before each is placed in main or the compaction stream."""

    records: list[RequestRecord] = field(default_factory=list)
    compactions: list[tuple[float, int, str | None]] = field(default_factory=list)
    from_usage_records: bool = False
    dated: CodexRequest | None = None
    """The last ``token_usage_record`` call whose ``token_count`` has not come yet."""


def _token_count(calls: _Calls, state: _State, payload: JsonObject, at: float, line: int) -> None:
    info = payload.get("info")
    if not isinstance(info, dict):
        return  # a rate-limit-only event
    total, last = info.get("total_token_usage"), info.get("last_token_usage")
    if not isinstance(total, dict) or not isinstance(last, dict):
        raise BadLine("token_count without total/last usage")
    totals = tuple(token_count(total, k) or 0 for k in ("input_tokens", "output_tokens"))
    moved = totals != state.last_totals
    state.last_totals = totals
    if not moved or not any(token_count(last, k) for k in ("input_tokens", "output_tokens")):
        return  # the duplicate at a compaction's start, or the all-zero one after it
    record = _usage_record(last, at, line, state, None)
    record.usage_at = at
    calls.records.append(record)


def _feed(calls: _Calls, state: _State, log: SessionLog, obj: JsonObject, line: int) -> None:
    kind = obj.get("type")
    payload = obj.get("payload")
    if kind not in _KNOWN:
        raise BadLine("not a Codex rollout line")
    if not isinstance(payload, dict):
        raise BadLine("rollout line without a payload object")
    at = parse_timestamp(obj.get("timestamp"))
    if kind == "session_meta":
        _session_meta(log, state, payload)
    elif kind == "turn_context":
        _apply_turn_context(state, payload)
    elif kind == "world_state":
        _apply_world_state(state, payload)
    elif kind == "token_usage_record":
        usage = payload.get("usage")
        if not isinstance(usage, dict):
            raise BadLine("token_usage_record without usage")
        rid = payload.get("response_id")
        rid = rid if isinstance(rid, str) else None
        record = _usage_record(usage, at, line, state, rid)
        calls.records.append(record)
        calls.from_usage_records = True
        if _REASONING_KEY in usage:  # ccusage dates it by the token_count to come
            calls.dated = record
    elif kind == "compacted":
        rid = payload.get("compaction_response_id")
        calls.compactions.append((at, line, rid if isinstance(rid, str) else None))
    elif kind == "event_msg" and payload.get("type") == "token_count":
        info = payload.get("info")
        if calls.dated is not None and isinstance(info, dict) and _reports_reasoning(info):
            calls.dated.usage_at, calls.dated = at, None
        _token_count(calls, state, payload, at, line)


def _reports_reasoning(info: JsonObject) -> bool:
    """A usage event ccusage reads (one that names the reasoning tokens)."""
    return any(
        isinstance(usage, dict) and _REASONING_KEY in usage
        for usage in (info.get("last_token_usage"), info.get("total_token_usage"))
    )


def _session_meta(log: SessionLog, state: _State, payload: JsonObject) -> None:
    sid = payload.get("id") or payload.get("session_id")
    if isinstance(sid, str) and sid and not log.session_id:
        log.session_id = sid
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and log.cwd is None:
        log.cwd = cwd
        log.project = Path(cwd).name or None
    base = payload.get("base_instructions")
    text = base.get("text") if isinstance(base, dict) else base
    if isinstance(text, str) and state.instructions is None:
        state.instructions = _digest(text)


def read_rollout_lines(lines: Iterable[bytes], source: str) -> SessionLog:
    """One rollout (its raw lines) as a session: bad lines are counted and skipped."""
    log = SessionLog(session_id="", source=source, format=FORMAT)
    state, calls = _State(), _Calls()
    for line, obj in iter_objects(lines, source, log.issues):
        try:
            _feed(calls, state, log, obj, line)
        except BadLine as exc:
            log.issues.append(LineIssue(source, line, str(exc)))
    if calls.from_usage_records:
        # token_count lines repeat what token_usage_record said: keep only the records.
        calls.records = [r for r in calls.records if r.message_id is not None]
    _place(log, calls)
    if not log.session_id:
        log.session_id = Path(source).stem.removeprefix("rollout-")
    return log


def _place(log: SessionLog, calls: _Calls) -> None:
    """Main gets every call but the compaction calls, and a rebuild announcement where a
    ``compacted`` record says the history was replaced."""
    compaction_ids = {rid for _, _, rid in calls.compactions if rid is not None}
    by_id = {r.message_id for r in calls.records}
    compaction_lines = {
        _last_before(calls.records, line)
        for _, line, rid in calls.compactions
        if rid is None or rid not in by_id  # a rollout without token_usage_record
    }
    main = log.stream(MAIN_STREAM, StreamKind.MAIN, source=log.source)
    events = sorted(
        [(r.at, r.line or 0, r) for r in calls.records]
        + [(at, line, RebuildAnnounced(at, RebuildKind.COMPACTION, line=line))
           for at, line, _ in calls.compactions],
        key=lambda e: (e[1], e[0]),
    )  # fmt: skip
    for _, _, item in events:
        if isinstance(item, RequestRecord) and (
            item.message_id in compaction_ids or item.line in compaction_lines
        ):
            item.stream = COMPACTION_STREAM
            comp = log.stream(COMPACTION_STREAM, StreamKind.COMPACTION, source=log.source)
            comp.items.append(item)
        else:
            main.items.append(item)


def _last_before(records: list[RequestRecord], line: int) -> int | None:
    """The line of the last call before a ``compacted`` record: the compaction call."""
    before = [r.line for r in records if r.line is not None and r.line < line]
    return max(before) if before else None


def read_rollout(path: Path) -> SessionLog:
    """A rollout file; a file that is not one is a single issue at line 0."""
    source = str(path)
    try:
        with path.open("rb") as fh:
            log = read_rollout_lines(fh, source)
    except OSError as exc:
        log = SessionLog(session_id=path.stem, source=source, format=FORMAT)
        log.unreadable.append(LineIssue(source, 0, f"cannot read: {exc.strerror or exc}"))
        return log
    if not any(s.items for s in log.streams.values()) and log.issues and not log.cwd:
        log.main_unreadable = True
    return log
