"""A local fake of OpenAI's Responses API with a prefix cache, for the real-agent suite.

The real Codex CLI talks to it (a custom model provider's ``base_url``) as it would to
api.openai.com. It answers from a script chosen by markers in the last user text, and it
keeps a prompt cache the way OpenAI documents automatic prefix caching, so the usage it
reports is what a real server could report for the same bodies:

- the cached unit is the request prefix in the API's order: ``instructions``, each tool,
  then each ``input`` item; each unit boundary has a chained hash over the model too
  (one cache per model);
- a lookup reads the longest prefix shared with an earlier request of the same
  ``prompt_cache_key`` whose entry is still alive, in steps of 128 tokens from 1,024
  (a shorter prefix reads nothing); a read refreshes the entry; every request writes its
  own prefix (no write charge: OpenAI bills none);
- retention is ``retention`` seconds (default 300; the suite makes it short so a real
  pause of a few seconds expires it);
- tokens are a fixed rule: ceil(bytes of the unit's canonical JSON / 4).

Ground truth: one record per model call (``truth``) from the body alone: model, key,
tokens in / cached / out / reasoning, the outcome (``cold`` / ``hit`` / ``miss``) and, for
a miss, what it knows: ``model``, ``instructions``, ``tools``, ``expired`` (the previous
request's prefix would have been read had its entry lived), ``input`` (items rewritten).
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

from tests.real_agents.support import (
    Entry,
    FakeApi,
    Unit,
    canonical,
    changes,
    common_tokens,
    digest,
    judged,
    owns,
    stepped,
    tokens_of,
)

REASONING_TOKENS = 7  # each answer reports this many reasoning tokens (priced at output)


def units_of(body: dict[str, Any]) -> list[Unit]:
    out: list[Unit] = []
    # One cache per model and reasoning effort (OpenAI's own diagnostics name
    # reasoning_effort_changed as a miss reason, so effort is part of the key).
    reasoning = body.get("reasoning")
    if not isinstance(reasoning, dict):
        reasoning = {}
    chain = hashlib.sha256(canonical([body.get("model"), reasoning.get("effort")]).encode())

    def add(kind: str, obj: Any) -> None:
        text = canonical(obj)
        chain.update(text.encode())
        out.append(Unit(kind, chain.hexdigest(), tokens_of(obj), digest(text)))

    if body.get("instructions"):
        add("instructions", body["instructions"])
    for tool in body.get("tools") or []:
        add("tool", tool)
    inp = body.get("input")
    leading = True  # developer items before the first user item: the instructions
    for item in inp if isinstance(inp, list) else [inp]:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            add("tool", item)
            continue
        role = item.get("role") if isinstance(item, dict) else None
        leading = leading and role == "developer"
        add("instructions" if leading else "input", item)
    return out


@dataclass
class Truth:
    n: int
    path: str
    model: str
    key: str | None
    at: float
    response_id: str
    compaction: bool
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    reasoning_tokens: int
    tools: int
    effort: str | None
    outcome: str
    """cold / hit / miss; ``compaction`` for the compaction call itself; ``rebuild`` for
    the first miss after one (the expected rebuild of the replaced history)."""
    changed: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


COMPACT_MARKER = "CONTEXT CHECKPOINT COMPACTION"


def effort_of(body: dict[str, Any]) -> Any:
    reasoning = body.get("reasoning")
    return reasoning.get("effort") if isinstance(reasoning, dict) else None


def is_compaction(body: dict[str, Any]) -> bool:
    """Codex's compaction call: its last input item asks for a checkpoint summary."""
    inp = body.get("input")
    return isinstance(inp, list) and bool(inp) and COMPACT_MARKER in canonical(inp[-1])


SHELL_MARKER = "RUN-SHELL"


def wants_shell(body: dict[str, Any]) -> bool:
    """The last input item is a user message asking for the scripted shell call (after
    the call's output comes back, the answer is text)."""
    inp = body.get("input")
    if not isinstance(inp, list) or not inp or not isinstance(inp[-1], dict):
        return False
    last = inp[-1]
    return last.get("role") == "user" and SHELL_MARKER in canonical(last.get("content"))


class FakeOpenAI(FakeApi[Truth]):
    """The fake's state: the cache, clock, ground truth; ``app()`` serves it."""

    def __init__(self, retention: float = 300.0, dump_dir: Path | None = None) -> None:
        super().__init__(retention, dump_dir)
        self.entries: dict[str | None, list[Entry]] = {}
        self.last: dict[str | None, tuple[dict[str, Any], list[Unit], float]] = {}
        self.compacted: set[str | None] = set()  # keys whose next main request follows one

    # -- the cache ---------------------------------------------------------------
    def lookup(self, key: str | None, units: list[Unit], now: float) -> int:
        best = 0
        live: list[Entry] = []
        found: Entry | None = None
        for entry in self.entries.get(key, []):
            if entry.expires <= now:
                continue
            live.append(entry)
            common = stepped(common_tokens(entry.units, units))
            if common > best:
                best, found = common, entry
        if found is not None:
            found.expires = now + self.retention
        live.append(Entry(units, now + self.retention))
        self.entries[key] = live
        return best

    def judge(
        self, key: str | None, body: dict[str, Any], units: list[Unit], cached: int, now: float
    ) -> tuple[str, list[str]]:
        """cold / hit / miss against the same key's previous request, and what changed."""
        prev = self.last.get(key)
        if prev is None:
            return "cold", []
        pbody, punits, pat = prev
        outcome = judged(punits, units, cached)
        if outcome != "miss":
            return outcome, []
        differs = {
            "model": pbody.get("model") != body.get("model"),
            "effort": effort_of(pbody) != effort_of(body),
            "instructions": owns(punits, "instructions") != owns(units, "instructions"),
            "tools": owns(punits, "tool") != owns(units, "tool"),
        }
        return "miss", changes(differs, expired=now - pat > self.retention)

    # -- answers -----------------------------------------------------------------
    @staticmethod
    def answer_text(body: dict[str, Any]) -> str:
        if is_compaction(body):
            return "SUMMARY: the user ran scripted turns for a test; nothing is pending."
        return "Done: a short scripted answer from the fake."

    def serve(self, path: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        with self.lock:
            now = time.time()
            key = body.get("prompt_cache_key")
            key = key if isinstance(key, str) else None
            units = units_of(body)
            total = sum(u.tokens for u in units)
            cached = self.lookup(key, units, now)
            changed: list[str]
            if is_compaction(body):
                # Sent without tools: its own stream, judged against nothing.
                outcome, changed = "compaction", []
                self.compacted.add(key)
            else:
                outcome, changed = self.judge(key, body, units, cached, now)
                if key in self.compacted and outcome == "miss":
                    outcome, changed = "rebuild", ["compacted", *changed]
                self.compacted.discard(key)
                self.last[key] = (body, units, now)
            rid = "resp_" + uuid.uuid4().hex
            text = self.answer_text(body)
            out_tokens = tokens_of(text) + REASONING_TOKENS
            self.truth.append(Truth(
                n=len(self.truth), path=path, model=str(body.get("model")), key=key, at=now,
                response_id=rid, compaction=is_compaction(body),
                input_tokens=total, cached_tokens=cached,
                output_tokens=out_tokens, reasoning_tokens=REASONING_TOKENS,
                tools=len(body.get("tools") or []), effort=effort_of(body),
                outcome=outcome, changed=changed,
            ))  # fmt: skip
            self.dump(f"{len(self.truth) - 1:03d}.json", body)
        usage = {
            "input_tokens": total,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": out_tokens,
            "output_tokens_details": {"reasoning_tokens": REASONING_TOKENS},
            "total_tokens": total + out_tokens,
        }
        item = {
            "type": "message", "id": "msg_" + uuid.uuid4().hex, "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }  # fmt: skip
        base: dict[str, Any] = {"id": rid, "object": "response", "created_at": int(now),
                                "model": body.get("model"), "status": "in_progress",
                                "output": []}  # fmt: skip
        done = {**base, "status": "completed", "output": [item], "usage": usage}
        if wants_shell(body):
            call = {
                "type": "function_call", "id": "fc_" + uuid.uuid4().hex, "status": "completed",
                "call_id": "call_" + uuid.uuid4().hex[:12], "name": "exec_command",
                "arguments": json.dumps({"cmd": "echo realagent"}),
            }  # fmt: skip
            done = {**done, "output": [call]}
            return [
                ("response.created", {"type": "response.created", "response": base}),
                ("response.output_item.added",
                 {"type": "response.output_item.added", "output_index": 0, "item": call}),
                ("response.output_item.done",
                 {"type": "response.output_item.done", "output_index": 0, "item": call}),
                ("response.completed", {"type": "response.completed", "response": done}),
            ]  # fmt: skip
        return [
            ("response.created", {"type": "response.created", "response": base}),
            ("response.output_item.added",
             {"type": "response.output_item.added", "output_index": 0,
              "item": {**item, "content": []}}),
            ("response.output_text.delta",
             {"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
              "item_id": item["id"], "delta": text}),
            ("response.output_item.done",
             {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": done}),
        ]  # fmt: skip

    # -- the server --------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        if auth:
            self.keys.add(auth.removeprefix("Bearer "))
        path = request.path
        if request.method != "POST" or not path.rstrip("/").endswith("/responses"):
            self.other.append({"method": request.method, "path": path})
            return web.json_response({"error": {"message": "not here"}}, status=404)
        raw = await request.read()
        if request.headers.get("Content-Encoding") == "zstd":
            import zstandard  # type: ignore[import-not-found]  # only if Codex compresses (it does for ChatGPT sign-in only)

            raw = zstandard.ZstdDecompressor().decompress(raw, max_output_size=64 * 2**20)
        body = json.loads(raw)
        events = self.serve(path, body)
        if not body.get("stream"):
            return web.json_response(events[-1][1]["response"])
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for name, data in events:
            await resp.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        await resp.write_eof()
        return resp
