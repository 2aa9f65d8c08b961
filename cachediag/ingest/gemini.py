"""Gemini CLI chats (``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``) -> the
same normalised records as Claude Code transcripts (docs/agents.md, "Gemini CLI").

A chat file is JSON Lines: a header (``sessionId``, ``startTime``) written by every process
that opens the session, ``user`` and ``gemini`` messages (a ``gemini`` message carries the
model and ``tokens`` {input (cached included), output, cached, thoughts, tool, total}), and
``$set`` updates. One model call of the main stream is one ``gemini`` message with tokens;
side calls and compression calls are not stored, so they are not here.

Traps handled here:

- on resume, ``$set.messages`` rewrites the history (without tokens, with the resume's
  time): the first copy of each message id is the one kept;
- a resume in a new minute starts a second file with the same session id: the files of a
  session are read as one (``read_session_files``);
- GEMINI.md travels in the first user content (``<session_context>``), which every
  process start rewrites: its ``<loaded_context>`` is fingerprinted as the instructions
  (``system_hashes``), the rest of it (date, folder listing) as the first message;
- no system instruction or tool list is in the file: a request that opens a new process
  is marked (``GeminiRequest.process_start``), since what the file cannot show may have
  changed there.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

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

FORMAT = "gemini-cli"
MAX_TOKENS = 10**9
_MAX_LINE = 64 * 2**20
_CONTEXT = re.compile(r"<loaded_context>(.*?)</loaded_context>", re.DOTALL)
FILE_ID = re.compile(r"^session-.+-([0-9a-f]{8})\.jsonl?$")

JsonObject = dict[str, Any]


class BadLine(ValueError):
    """A line that is JSON but not a record this reader can use."""


@dataclass(slots=True)
class GeminiRequest(RequestRecord):
    """A Gemini CLI model call: a ``RequestRecord`` that knows whether it opened a process."""

    process_start: bool = False
    """The first call after a header line: a new ``gemini`` process, whose system
    instruction and tools (never in the file) may differ from the previous one's."""
    thoughts_tokens: int = 0
    """Of ``output_tokens``: thinking, billed at the output price."""


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_time(value: Any) -> float:
    if not isinstance(value, str):
        raise BadLine("missing or non-string timestamp")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError) as exc:
        raise BadLine("timestamp is not ISO 8601") from exc


def _time_or_none(value: Any) -> float | None:
    try:
        return parse_time(value)
    except BadLine:
        return None


def _count(tokens: JsonObject, key: str) -> int:
    value = tokens.get(key, 0)
    if value is None:
        return 0
    if type(value) is not int or not 0 <= value <= MAX_TOKENS:
        raise BadLine(f"tokens.{key} is not a token count")
    return value


def _parts(content: Any) -> list[Any]:
    """Content as a list of parts: a ``gemini`` message's text is a string when first
    written and a list of parts when a resume rewrites it; both hash the same."""
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if isinstance(content, list):
        return [p for p in content if not (isinstance(p, dict) and p.get("thought"))]
    return []


def _sent_part(part: Any) -> Any:
    """A part as the API receives it, without the ids the CLI rewrites on resume."""
    if not isinstance(part, dict):
        return part
    for key in ("functionCall", "functionResponse"):
        inner = part.get(key)
        if isinstance(inner, dict):
            return {key: {k: v for k, v in inner.items() if k != "id"}}
    return part


def sent_parts(message: JsonObject) -> list[Any]:
    """What a message resends: its content, and a ``gemini`` message's tool calls (kept
    in ``toolCalls`` while the turn runs, written as ``functionCall`` parts on resume)."""
    parts = [_sent_part(p) for p in _parts(message.get("content"))]
    calls = message.get("toolCalls")
    has_calls = any(isinstance(p, dict) and "functionCall" in p for p in parts)
    if isinstance(calls, list) and not has_calls:
        for call in calls:
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                fn = {"name": call["name"], "args": call.get("args")}
                parts.append({"functionCall": fn})
    return parts


def context_prints(content: Any) -> tuple[str, str]:
    """The session-context message's two hashes: its ``<loaded_context>`` (GEMINI.md and
    other memory files) and everything else (date, folders)."""
    text = "".join(p.get("text", "") for p in _parts(content) if isinstance(p, dict))
    found = _CONTEXT.search(text)
    loaded = found.group(1) if found else ""
    rest = text if found is None else text[: found.start()] + text[found.end() :]
    return _digest(loaded), _digest(rest)


def _is_context(message: JsonObject) -> bool:
    parts = _parts(message.get("content"))
    first = parts[0] if parts else None
    return isinstance(first, dict) and str(first.get("text", "")).startswith("<session_context>")


@dataclass(slots=True)
class _Chat:
    """What the files said so far: the conversation the next call resends."""

    seen: set[str] = field(default_factory=set)
    called: set[str] = field(default_factory=set)
    """Messages whose call is recorded: the first copy with ``tokens`` (the CLI may write
    a ``gemini`` message first without them and again under its id once they came)."""
    rebuilds: list[RebuildAnnounced] = field(default_factory=list)
    conversation: list[tuple[str, str, str]] = field(default_factory=list)  # id, role, hash
    instructions: str | None = None
    new_process: bool = True
    records: list[GeminiRequest] = field(default_factory=list)
    replayed: int = 0

    def message_print(self, message: JsonObject) -> tuple[str, str, str]:
        msg_id = message.get("id")
        key = msg_id if isinstance(msg_id, str) else ""
        role = "model" if message.get("type") == "gemini" else str(message.get("type"))
        if _is_context(message):
            loaded, rest = context_prints(message.get("content"))
            self.instructions = loaded
            return key, role, rest
        # The id is part of the print: a resume inserts messages of its own (a tool
        # call's ``<id>_response``, sent beside the stored response), which is a rewrite
        # even where their content repeats an earlier message's.
        return key, role, _digest([key, sent_parts(message)])

    def rewrite(self, messages: list[Any], at: float | None, line: int) -> None:
        """``$set.messages``: the history a process start loaded (what it resends), or,
        inside a process, the history it replaced (chat compression, a rollback)."""
        before = [h for _, _, h in self.conversation]
        self.conversation = []
        for message in messages:
            if not isinstance(message, dict) or message.get("type") not in ("user", "gemini"):
                continue
            msg_id = message.get("id")
            if isinstance(msg_id, str):
                self.seen.add(msg_id)
            if isinstance(message.get("tokens"), dict):
                if isinstance(msg_id, str) and msg_id not in self.called:
                    # Known only from a history (a whole-file .json chat): which calls
                    # opened a process is not recorded, so none may be taken as not.
                    self.new_process = True
                    self.add_call(message, None)
                else:
                    self.replayed += 1
            self.conversation.append(self.message_print(message))
        after = [h for _, _, h in self.conversation]
        replaced = after[: len(before)] != before and before[: len(after)] != after
        if replaced and before and not self.new_process and at is not None:
            # Chat compression: its call is not stored, the next request rebuilds.
            self.rebuilds.append(RebuildAnnounced(at, RebuildKind.COMPACTION, line=line))

    def rewind(self, to: Any) -> None:
        """``$rewindTo``: the conversation from that message on is dropped (``/rewind``);
        the calls made before stay, they were billed."""
        keys = [key for key, _, _ in self.conversation]
        cut = keys.index(to) if isinstance(to, str) and to in keys else 0
        del self.conversation[cut:]

    def update(self, message: JsonObject) -> None:
        """A message written again under its id (its tool calls done): its content now."""
        found = self.message_print(message)
        for i, (key, _, _) in enumerate(self.conversation):
            if key == found[0]:
                self.conversation[i] = found

    def fingerprint(self, model: str | None, msg_id: Any) -> Fingerprint:
        """The request's visible prompt: the conversation before its own answer."""
        keys = [key for key, _, _ in self.conversation]
        upto = keys.index(msg_id) if isinstance(msg_id, str) and msg_id in keys else len(keys)
        sent = self.conversation[:upto]
        return Fingerprint(
            model=model,
            system_hashes=None if self.instructions is None else (self.instructions,),
            message_hashes=tuple(h for _, _, h in sent),
            message_roles=tuple(r for _, r, _ in sent),
        )

    def add_call(self, message: JsonObject, line: int | None) -> None:
        tokens = message["tokens"]
        prompt, cached = _count(tokens, "input"), _count(tokens, "cached")
        tool, thoughts = _count(tokens, "tool"), _count(tokens, "thoughts")
        if cached > prompt:
            raise BadLine("tokens.cached exceeds tokens.input")
        model = message.get("model")
        model = model if isinstance(model, str) and model else None
        msg_id = message.get("id")
        self.records.append(GeminiRequest(
            at=parse_time(message.get("timestamp")),
            # Tool-use prompt tokens are prompt the API bills at the input price.
            input_tokens=prompt - cached + tool,
            cache_read_tokens=cached,
            cache_creation_tokens=0,  # implicit caching bills no write
            output_tokens=_count(tokens, "output") + thoughts,
            model=model,
            message_id=msg_id if isinstance(msg_id, str) else None,
            line=line,
            fingerprint=self.fingerprint(model, msg_id),
            process_start=self.new_process,
            thoughts_tokens=thoughts,
        ))  # fmt: skip
        self.new_process = False
        if isinstance(msg_id, str):
            self.called.add(msg_id)

    def feed(self, obj: JsonObject, line: int, log: SessionLog) -> None:
        if "$rewindTo" in obj:
            self.rewind(obj["$rewindTo"])
            return
        update = obj.get("$set")
        if isinstance(update, dict):
            if isinstance(update.get("sessionId"), str):
                # Every resume says so, in the file it resumes, even when its header went
                # to a new file (a resume in a new minute).
                self.new_process = True
            if isinstance(update.get("messages"), list):
                stamp = update.get("lastUpdated")
                self.rewrite(update["messages"], _time_or_none(stamp), line)
            return
        kind = obj.get("type")
        msg_id = obj.get("id")
        if not isinstance(msg_id, str) and isinstance(obj.get("sessionId"), str):
            log.session_id = log.session_id or obj["sessionId"]
            self.new_process = True
            if isinstance(obj.get("messages"), list):  # a header may carry the history
                self.rewrite(obj["messages"], None, line)
            return
        if not isinstance(msg_id, str):
            raise BadLine("not a Gemini CLI chat record")
        if kind not in ("user", "gemini"):
            return  # info, error, warning...: shown by the CLI, never sent
        if kind == "gemini" and isinstance(obj.get("tokens"), dict) and msg_id not in self.called:
            self.add_call(obj, line)  # a later copy's tokens are the same call's
        if msg_id in self.seen:
            self.update(obj)
            return
        self.seen.add(msg_id)
        self.conversation.append(self.message_print(obj))


def _objects(
    lines: Iterable[bytes], source: str, issues: list[LineIssue]
) -> Iterator[tuple[int, JsonObject]]:
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        if len(raw) > _MAX_LINE:
            issues.append(LineIssue(source, n, "line too long"))
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            issues.append(LineIssue(source, n, "not JSON"))
            continue
        if not isinstance(obj, dict):
            issues.append(LineIssue(source, n, "not a JSON object"))
            continue
        yield n, obj


def _feed_file(chat: _Chat, log: SessionLog, lines: Iterable[bytes], source: str) -> None:
    for line, obj in _objects(lines, source, log.issues):
        try:
            chat.feed(obj, line, log)
        except (BadLine, KeyError, TypeError) as exc:
            reason = str(exc) if isinstance(exc, BadLine) else "malformed record"
            log.issues.append(LineIssue(source, line, reason))


def read_chat_lines(files: list[tuple[str, Iterable[bytes]]]) -> SessionLog:
    """One session from its files' lines, in the order given (oldest first)."""
    source = files[0][0] if files else ""
    log = SessionLog(session_id="", source=source, format=FORMAT)
    chat = _Chat()
    for name, lines in files:
        _feed_file(chat, log, lines, name)
    main = log.stream(MAIN_STREAM, StreamKind.MAIN, source=source)
    items: list[RequestRecord | RebuildAnnounced] = [*chat.records, *chat.rebuilds]
    # A compression announced at the same instant as a call's answer comes after it.
    main.items.extend(sorted(items, key=lambda i: (i.at, isinstance(i, RebuildAnnounced))))
    log.replayed_responses = chat.replayed
    if not log.session_id:
        found = FILE_ID.match(Path(source).name)
        log.session_id = found.group(1) if found else Path(source).stem
    return log
