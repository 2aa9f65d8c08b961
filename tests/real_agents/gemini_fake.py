"""A local fake of the Gemini API with an implicit prefix cache, for the real-agent suite.

The real Gemini CLI talks to it (``GOOGLE_GEMINI_BASE_URL``) as it would to
generativelanguage.googleapis.com:

- ``POST /v1beta/models/{m}:streamGenerateContent?alt=sse``: the main stream (SSE);
- ``POST /v1beta/models/{m}:generateContent``: side calls (next-speaker check, loop
  detection, summaries), answered and recorded, but outside the main cache comparison;
- ``POST /v1beta/models/{m}:countTokens``: a count, nothing else.

Its cache follows Gemini's implicit caching as documented: the cached unit is the request
prefix in the API's order (``systemInstruction``, each tool declaration, then every part
of every content), each boundary a chained hash over the model too (one cache per model);
a lookup reads the longest prefix shared with a live earlier request, if it is at least the
model's minimum (1,024 tokens for Flash models, 4,096 for Pro); a read refreshes the entry;
nothing is billed for writing. Retention is ``retention`` seconds (short in the suite).
Tokens are a fixed rule: ceil(bytes of the unit's canonical JSON / 4).

Ground truth per request (``truth``): model, path, tokens in / cached / out / thoughts,
outcome (``cold`` / ``hit`` / ``miss``, against the previous main request) and, for a miss,
what changed: ``model``, ``system``, ``tools``, ``contents`` (earlier parts rewritten),
``expired`` (the previous prefix would have been read had its entry lived).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.real_agents.support import (
    Entry,
    FakeApi,
    Unit,
    canonical,
    common_tokens,
    digest,
    owns,
    tokens_of,
)

THOUGHTS = 5  # every answer reports this many thinking tokens (priced at output)
TOOL_MARKER = "[[list]]"
"""A prompt with this marker is answered first with a ``list_directory`` call, so one turn
makes two main-stream requests in one process."""


def minimum_for(model: str) -> int:
    """Gemini's documented minimum prompt for implicit caching."""
    return 4096 if "pro" in model else 1024


def units_of(model: str, body: dict[str, Any]) -> list[Unit]:
    out: list[Unit] = []
    chain = hashlib.sha256(model.encode())

    def add(kind: str, obj: Any) -> None:
        text = canonical(obj)
        chain.update(text.encode())
        out.append(Unit(kind, chain.hexdigest(), tokens_of(obj), digest(text)))

    system = body.get("systemInstruction")
    if system:
        add("system", system)
    for tool in body.get("tools") or []:
        for decl in (
            tool.get("functionDeclarations") or [tool] if isinstance(tool, dict) else [tool]
        ):
            add("tool", decl)
    for content in body.get("contents") or []:
        for part in content.get("parts") or [] if isinstance(content, dict) else []:
            add("part", [content.get("role"), part])
    return out


@dataclass
class Truth:
    n: int
    kind: str  # stream / side
    model: str
    at: float
    response_id: str
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    thoughts_tokens: int
    tools: int
    outcome: str
    changed: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def wants_tool(body: dict[str, Any]) -> bool:
    contents = body.get("contents") or []
    last = contents[-1] if contents else {}
    answered = any(isinstance(p, dict) and "functionResponse" in p for p in last.get("parts") or [])
    return not answered and TOOL_MARKER in last_user_text(body)


def last_user_text(body: dict[str, Any]) -> str:
    for content in reversed(body.get("contents") or []):
        if content.get("role") == "user":
            texts = [p.get("text", "") for p in content.get("parts") or [] if isinstance(p, dict)]
            if any(texts):
                return "\n".join(t for t in texts if t)
    return ""


class FakeGemini(FakeApi[Truth]):
    def __init__(self, retention: float = 300.0, dump_dir: Path | None = None) -> None:
        super().__init__(retention, dump_dir)
        self.entries: list[Entry] = []
        self.last: tuple[dict[str, Any], str, list[Unit], float] | None = None

    def lookup(self, units: list[Unit], model: str, now: float) -> int:
        self.entries = [e for e in self.entries if e.expires > now]
        best, found = 0, None
        for entry in self.entries:
            common = common_tokens(entry.units, units)
            if common >= minimum_for(model) and common > best:
                best, found = common, entry
        if found is not None:
            found.expires = now + self.retention
        self.entries.append(Entry(units, now + self.retention))
        return best

    def judge(
        self, model: str, units: list[Unit], cached: int, now: float
    ) -> tuple[str, list[str]]:
        """Against the previous main request: ``hit`` when this one read all the prefix it
        left (or as much of it as this one is long), else ``miss`` with every part that
        differs from it, and ``expired`` when its entry was dead by now."""
        if self.last is None:
            return "cold", []
        _, pmodel, punits, pat = self.last
        could = min(sum(u.tokens for u in punits), sum(u.tokens for u in units))
        if could < minimum_for(model):
            return "cold", []  # too short for the cache to have kept anything readable
        if cached >= could:
            return "hit", []
        changed = []
        if pmodel != model:
            changed.append("model")
        if owns(punits, "system") != owns(units, "system"):
            changed.append("system")
        if owns(punits, "tool") != owns(units, "tool"):
            changed.append("tools")
        ours, theirs = owns(units, "part"), owns(punits, "part")
        if ours[: len(theirs)] != theirs:
            changed.append("contents")
        if now - pat > self.retention:
            changed.append("expired")
        return "miss", changed or ["evicted"]

    def answer(self, body: dict[str, Any], stream: bool) -> str:
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            schema = canonical(
                config.get("responseSchema") or config.get("responseJsonSchema") or {}
            )
            if "next_speaker" in schema:
                return json.dumps({"reasoning": "The answer is complete.", "next_speaker": "user"})
            return json.dumps({"reasoning": "fine", "unproductive_state_confidence": 0.0,
                               "unproductive_state_analysis": "none"})  # fmt: skip
        if not stream:
            if "state_snapshot" in canonical(body.get("systemInstruction") or {}):
                # Chat compression and its self-check (0.61 offline still kept the old
                # history in the runs tried: docs/agents-gemini.md).
                return "<state_snapshot><overall_goal>test</overall_goal></state_snapshot>"
            return "A short summary from the fake."
        return "Done: a short scripted answer from the fake Gemini."

    def serve(self, model: str, kind: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        with self.lock:
            now = time.time()
            units = units_of(model, body)
            total = sum(u.tokens for u in units)
            if kind == "stream":
                cached = self.lookup(units, model, now)
                outcome, changed = self.judge(model, units, cached, now)
                self.last = (body, model, units, now)
            else:
                cached, outcome, changed = 0, "side", []
            text = self.answer(body, kind == "stream")
            out_tokens = tokens_of(text)
            rid = f"fake-{len(self.truth):04d}"
            self.truth.append(Truth(
                n=len(self.truth), kind=kind, model=model, at=now, response_id=rid,
                prompt_tokens=total, cached_tokens=cached, output_tokens=out_tokens,
                thoughts_tokens=THOUGHTS, tools=len(owns(units, "tool")), outcome=outcome,
                changed=changed,
            ))  # fmt: skip
            self.dump(f"{len(self.truth) - 1:03d}-{kind}.json", body)
        usage: dict[str, Any] = {
            "promptTokenCount": total,
            "candidatesTokenCount": out_tokens,
            "thoughtsTokenCount": THOUGHTS,
            "totalTokenCount": total + out_tokens + THOUGHTS,
        }
        if cached:
            usage["cachedContentTokenCount"] = cached
        parts: list[dict[str, Any]] = [{"text": text}]
        if kind == "stream" and wants_tool(body):
            parts = [{"functionCall": {"name": "list_directory", "args": {"dir_path": "."}}}]
        response = {
            "candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": rid,
        }  # fmt: skip
        return text, response

    async def handle(self, request: web.Request) -> web.StreamResponse:
        key = request.headers.get("x-goog-api-key") or request.query.get("key")
        if key:
            self.keys.add(key)
        path = request.path
        if request.method != "POST" or "/models/" not in path or ":" not in path:
            self.other.append({"method": request.method, "path": path})
            return web.json_response({"error": {"code": 404, "message": "not here"}}, status=404)
        model, _, method = path.rsplit("/", 1)[-1].partition(":")
        body = json.loads(await request.read())
        if method == "countTokens":
            total = sum(u.tokens for u in units_of(model, body))
            return web.json_response({"totalTokens": total})
        if method not in ("streamGenerateContent", "generateContent"):
            self.other.append({"method": request.method, "path": path})
            return web.json_response({"error": {"code": 404, "message": "not here"}}, status=404)
        kind = "stream" if method == "streamGenerateContent" else "side"
        _, response = self.serve(model, kind, body)
        if kind == "side":
            return web.json_response(response)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(f"data: {json.dumps(response)}\r\n\r\n".encode())
        await resp.write_eof()
        return resp
