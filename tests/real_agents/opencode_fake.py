"""A local fake of two provider APIs opencode can be pointed at, with a prefix cache.

opencode talks to any provider through the AI SDK; its ``@ai-sdk/openai-compatible`` and
``@ai-sdk/anthropic`` packages are bundled, and a custom provider's ``baseURL`` can name
this server. It serves both wire forms with one cache model, so the usage each reports
is what a real server could report for the same bodies:

- ``POST /v1/chat/completions`` (stream): OpenAI-style automatic prefix caching. Every
  request writes its prefix unbilled; a read is the longest prefix shared with a live
  entry, 0 below 1,024 tokens, else in 128-token steps. Usage: ``prompt_tokens`` (cached
  included), ``prompt_tokens_details.cached_tokens``, ``completion_tokens`` (reasoning
  included), ``completion_tokens_details.reasoning_tokens``.
- ``POST /v1/messages`` (stream): Anthropic's explicit caching. Entries are written only
  at ``cache_control`` breakpoints (billed as ``cache_creation_input_tokens``); a read is
  the longest live entry the request starts with (at least 1,024 tokens); the uncached
  rest is ``input_tokens``.

Units, in the API's order: Anthropic's tools, system blocks, messages; OpenAI's leading
system messages, tools, then the other messages; each carries a
hash chained over the model (one cache per model) and every unit before it. Tokens are
ceil(bytes of the unit's canonical JSON / 4). Retention is ``retention`` seconds from the
last write or read (the suite makes it short, so a real pause of a few seconds expires it).

Ground truth, one record per call: wire, model, tokens, outcome (``cold`` / ``hit`` /
``miss``; ``title`` for opencode's title call and ``compaction`` for its summary call,
judged against nothing) and for a miss what
changed (``model``, ``system``, ``tools``, ``expired``, ``input``).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.real_agents import support
from tests.real_agents.support import (
    MIN_CACHED,
    Entry,
    FakeApi,
    canonical,
    changes,
    common_tokens,
    digest,
    judged,
    owns,
    stepped,
    tokens_of,
)

REASONING_TOKENS = 5  # each chat-completions answer reports these (priced at output)
TITLE_MARKER = "title generator"
TOOL_MARKER = "USE_TOOL:"
TASK_MARKER = "USE_TASK"
COMPACTION_MARKER = "context summarization agent"


def _strip_cache_control(obj: Any) -> Any:
    """A unit's content without its breakpoint: moving a breakpoint is not a change."""
    if isinstance(obj, dict):
        return {k: _strip_cache_control(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_cache_control(v) for v in obj]
    return obj


def _has_breakpoint(obj: Any) -> bool:
    if isinstance(obj, dict):
        return "cache_control" in obj or any(_has_breakpoint(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_breakpoint(v) for v in obj)
    return False


@dataclass
class Unit(support.Unit):
    breakpoint: bool = False
    """A ``cache_control`` in it: Anthropic writes an entry for the prefix ending here."""


def units_of(wire: str, body: dict[str, Any]) -> list[Unit]:
    out: list[Unit] = []
    chain = hashlib.sha256(canonical([wire, body.get("model")]).encode())

    def add(kind: str, obj: Any) -> None:
        text = canonical(_strip_cache_control(obj))
        chain.update(text.encode())
        own = digest(text)
        out.append(Unit(kind, chain.hexdigest(), tokens_of(obj), own, _has_breakpoint(obj)))

    messages = list(body.get("messages") or [])
    if wire == "openai":
        # OpenAI renders the instructions (leading system messages) before the tools.
        while messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
            add("system", messages.pop(0))
    for tool in body.get("tools") or []:
        add("tool", tool)
    system = body.get("system")
    if isinstance(system, str):
        add("system", system)
    elif isinstance(system, list):
        for block in system:
            add("system", block)
    for msg in messages:
        role = msg.get("role") if isinstance(msg, dict) else None
        add("system" if role == "system" else "message", msg)
    return out


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    firsts = [system] if system else []
    firsts += [m for m in body.get("messages") or [] if m.get("role") == "system"]
    return canonical(firsts).lower()


def is_title(body: dict[str, Any]) -> bool:
    """opencode's title call: its system prompt is the title generator's."""
    return TITLE_MARKER in _system_text(body)


def is_compaction(body: dict[str, Any]) -> bool:
    """opencode's compaction call: the summarization agent's prompt, no tools."""
    return COMPACTION_MARKER in _system_text(body)


@dataclass
class Truth:
    n: int
    wire: str  # openai / anthropic
    model: str
    at: float
    response_id: str
    title: bool
    compaction: bool
    prompt_tokens: int
    """Everything sent: uncached + read + written."""
    read_tokens: int
    write_tokens: int
    output_tokens: int
    reasoning_tokens: int
    tools: int
    outcome: str
    changed: list[str] = field(default_factory=list)

    @property
    def uncached_tokens(self) -> int:
        return self.prompt_tokens - self.read_tokens - self.write_tokens

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class FakeProvider(FakeApi[Truth]):
    """The cache, the clock and the ground truth; ``app()`` serves both wires."""

    def __init__(self, retention: float = 300.0, dump_dir: Path | None = None) -> None:
        super().__init__(retention, dump_dir)
        self.entries: list[Entry] = []
        self.last: tuple[dict[str, Any], list[Unit], float] | None = None

    # -- the cache ---------------------------------------------------------------
    def _longest(self, units: list[Unit], now: float, anthropic: bool) -> tuple[int, Entry | None]:
        best, found = 0, None
        for entry in self.entries:
            if entry.expires <= now:
                continue
            if anthropic:
                # An Anthropic entry is a whole written prefix: read only if it all matches.
                if len(entry.units) > len(units) or any(
                    a.digest != b.digest for a, b in zip(entry.units, units, strict=False)
                ):
                    continue
                common = sum(u.tokens for u in entry.units)
                common = common if common >= MIN_CACHED else 0
            else:
                common = stepped(common_tokens(entry.units, units))
            if common > best:
                best, found = common, entry
        return best, found

    def lookup(self, wire: str, units: list[Unit], now: float) -> tuple[int, int]:
        """(read, written) for this request; live entries refreshed, new ones stored."""
        self.entries = [e for e in self.entries if e.expires > now]
        anthropic = wire == "anthropic"
        read, found = self._longest(units, now, anthropic)
        if found is not None:
            found.expires = now + self.retention
        if not anthropic:
            self.entries.append(Entry(units, now + self.retention))
            return read, 0
        written = 0
        for i, unit in enumerate(units):
            if not unit.breakpoint:
                continue
            prefix = units[: i + 1]
            size = sum(u.tokens for u in prefix)
            if size < MIN_CACHED:
                continue
            if size > read:
                written = max(written, size - read)
            self.entries.append(Entry(prefix, now + self.retention))
        return read, written

    def judge(
        self, body: dict[str, Any], units: list[Unit], read: int, now: float
    ) -> tuple[str, list[str]]:
        """cold / hit / miss against the previous main request, and what changed."""
        if self.last is None:
            return "cold", []
        pbody, punits, pat = self.last
        outcome = judged(punits, units, read)
        if outcome != "miss":
            return outcome, []
        differs = {
            "model": pbody.get("model") != body.get("model"),
            "system": owns(punits, "system") != owns(units, "system"),
            "tools": owns(punits, "tool") != owns(units, "tool"),
        }
        return "miss", changes(differs, expired=now - pat > self.retention)

    def record(self, wire: str, body: dict[str, Any], text: str) -> Truth:
        with self.lock:
            now = time.time()
            units = units_of(wire, body)
            total = sum(u.tokens for u in units)
            title = is_title(body)
            read, written = self.lookup(wire, units, now)
            compaction = is_compaction(body)
            outcome: str = "title" if title else "compaction"
            changed: list[str] = []
            if not (title or compaction):
                outcome, changed = self.judge(body, units, read, now)
                self.last = (body, units, now)
            reasoning = REASONING_TOKENS if wire == "openai" else 0
            truth = Truth(
                n=len(self.truth), wire=wire, model=str(body.get("model")), at=now,
                response_id=("chatcmpl-" if wire == "openai" else "msg_") + uuid.uuid4().hex,
                title=title, compaction=compaction, prompt_tokens=total,
                read_tokens=read, write_tokens=written,
                output_tokens=tokens_of(text) + reasoning, reasoning_tokens=reasoning,
                tools=len(body.get("tools") or []), outcome=outcome, changed=changed,
            )  # fmt: skip
            self.truth.append(truth)
            self.dump(f"{truth.n:03d}.json", body)
            return truth

    # -- answers -----------------------------------------------------------------
    @staticmethod
    def answer_text(body: dict[str, Any]) -> str:
        if is_title(body):
            return "Scripted test session"
        return "Done: a short scripted answer from the fake."

    @staticmethod
    def tool_request(body: dict[str, Any]) -> str | None:
        """``USE_TOOL:<path>`` in the last user text, not yet answered: read that file
        (a message of two model calls: the tool call, then the answer after its result)."""
        messages = body.get("messages") or []
        if not messages or messages[-1].get("role") != "user":
            return None
        text = canonical(messages[-1].get("content"))
        at = text.find(TOOL_MARKER)
        if at < 0:
            return None
        return text[at + len(TOOL_MARKER) :].split()[0].strip('"\\,]}')

    @staticmethod
    def task_request(body: dict[str, Any]) -> bool:
        """``USE_TASK`` in the last user text, not yet answered: hand it to a subagent."""
        messages = body.get("messages") or []
        if not messages or messages[-1].get("role") != "user":
            return False
        return TASK_MARKER in canonical(messages[-1].get("content"))

    def openai_events(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        path = self.tool_request(body)
        name, args = "read", json.dumps({"filePath": path}) if path else ""
        if not path and self.task_request(body):
            name, path = "task", "task"
            args = json.dumps({"description": "Look around", "prompt": "Say done.",
                               "subagent_type": "general"})  # fmt: skip
        text = args if path else self.answer_text(body)
        t = self.record("openai", body, text)
        base = {"id": t.response_id, "object": "chat.completion.chunk",
                "created": int(t.at), "model": body.get("model")}  # fmt: skip
        if path:
            call = {"index": 0, "id": "call_" + uuid.uuid4().hex[:12], "type": "function",
                    "function": {"name": name, "arguments": args}}  # fmt: skip
            return [
                {**base, "choices": [{"index": 0,
                                      "delta": {"role": "assistant", "tool_calls": [call]}}]},
                {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
                {**base, "choices": [], "usage": self._openai_usage(t)},
            ]  # fmt: skip
        return [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
            {**base, "choices": [{"index": 0, "delta": {"content": text}}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**base, "choices": [], "usage": self._openai_usage(t)},
        ]

    @staticmethod
    def _openai_usage(t: Truth) -> dict[str, Any]:
        return {
            "prompt_tokens": t.prompt_tokens,
            "completion_tokens": t.output_tokens,
            "total_tokens": t.prompt_tokens + t.output_tokens,
            "prompt_tokens_details": {"cached_tokens": t.read_tokens},
            "completion_tokens_details": {"reasoning_tokens": t.reasoning_tokens},
        }

    def anthropic_events(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        text = self.answer_text(body)
        t = self.record("anthropic", body, text)
        start_usage = {
            "input_tokens": t.uncached_tokens,
            "cache_creation_input_tokens": t.write_tokens,
            "cache_read_input_tokens": t.read_tokens,
            "output_tokens": 1,
        }
        message: dict[str, Any] = {"id": t.response_id, "type": "message", "role": "assistant",
                   "model": body.get("model"), "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": start_usage}  # fmt: skip
        return [
            {"type": "message_start", "message": message},
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": text}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {**start_usage, "output_tokens": t.output_tokens}},
            {"type": "message_stop"},
        ]  # fmt: skip

    # -- the server --------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "") or request.headers.get("x-api-key", "")
        if auth:
            self.keys.add(auth.removeprefix("Bearer "))
        path = request.path.rstrip("/")
        if request.method != "POST" or not path.endswith(("/chat/completions", "/messages")):
            self.other.append({"method": request.method, "path": path})
            return web.json_response({"error": {"message": "not here"}}, status=404)
        body = json.loads(await request.read())
        anthropic = path.endswith("/messages")
        events = self.anthropic_events(body) if anthropic else self.openai_events(body)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for data in events:
            head = f"event: {data['type']}\n" if anthropic else ""
            await resp.write(f"{head}data: {json.dumps(data)}\n\n".encode())
        if not anthropic:
            await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp
