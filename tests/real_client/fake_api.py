"""A local fake of Anthropic's Messages API with a prompt cache, for the real-client suite.

The real Claude Code CLI talks to it (through ``cachediag proxy``) as it would to
api.anthropic.com. It answers from a script chosen by markers in the user's prompt, and it
keeps a prompt cache the way the API documents it, so that the usage it reports is what a
real server would report for the same bodies:

- the cached unit is the request prefix in the API's order: tools, then system blocks,
  then every content block of every message; each block boundary has a chained hash;
- a ``cache_control`` marker on a block writes the prefix up to and including that block
  (TTL ``5m``, or ``1h`` when the marker says so);
- a lookup checks each breakpoint and the 20 block boundaries before it, and reads the
  longest prefix still alive; a read refreshes that entry's TTL;
- one cache per model (another model never reads this model's entries);
- tokens are a fixed rule: ceil(bytes of the block's canonical JSON / 4).

The first system block Claude Code sends is its billing header
(``x-anthropic-billing-header: cc_version=...; cch=...``); its suffix changes from request
to request on some releases, so it is left out of the key (the real API does not bill it
as prompt either), but it is recorded.

Its clock is ``time.time() + offset``; ``POST /_fake/advance`` (JSON ``{"seconds": N}``)
moves it on, so a pause past the 5-minute TTL costs no real waiting. Claude Code's own
clock is the machine's: the transcript's timestamps do not move, so a test of a pause
must either really wait or accept that cachediag sees no idle gap (see docs/real-client.md).

Ground truth: for every model call one record (``truth``) derived only from the body it
received: model, blocks, the tokens read, written and uncached, the outcome the cache
produced (``cold`` / ``hit`` / ``miss``, against the longest earlier request of the same
model it shares a prefix with), and which part of the prefix differs from that request.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.real_client.fake_body import (
    ABSENT,
    COMPACT_MARKERS,
    LOOKBACK,
    TTL,
    Block,
    Entry,
    Truth,
    answered_tool,
    blocks_of,
    canonical,
    diagnostics_of,
    first_user_text,
    is_billing,
    last_user_text,
    sse,
    strip_cc,
    system_blocks,
    tokens_of,
    tool_use,
)


class FakeAnthropic:
    """The fake's state: caches, clock, ground truth; ``app()`` serves it."""

    def __init__(self, dump_dir: Path | None = None, diagnostics: bool = False) -> None:
        self.diagnostics = diagnostics
        self.offset = 0.0
        self.caches: dict[str, dict[str, Entry]] = {}
        self.truth: list[Truth] = []
        self.history: list[tuple[str, list[Block]]] = []
        self.compacted = False  # a compaction call was served; main has not run since
        self.other: list[dict[str, Any]] = []  # any non-model call: method, path
        self.api_keys: set[str] = set()  # the x-api-key values received (the canary)
        self.dump_dir = dump_dir
        self.lock = threading.Lock()

    def now(self) -> float:
        return time.time() + self.offset

    # -- the cache ---------------------------------------------------------------
    def lookup(self, model: str, blocks: list[Block]) -> tuple[int, int, int]:
        """(read, written, uncached) tokens for this prefix; writes its breakpoints."""
        cache = self.caches.setdefault(model, {})
        now = self.now()
        breakpoints = [i for i, b in enumerate(blocks) if b.ttl]
        best = -1
        for bp in breakpoints:
            for j in range(bp, max(-1, bp - LOOKBACK - 1), -1):
                entry = cache.get(blocks[j].digest)
                if entry is not None and entry.expires > now:
                    best = max(best, j)
                    break
        read = sum(b.tokens for b in blocks[: best + 1])
        if best >= 0:
            hit = cache[blocks[best].digest]
            hit.expires = max(hit.expires, now + self._ttl_at(blocks, best))
        last_bp = breakpoints[-1] if breakpoints else -1
        written = sum(b.tokens for b in blocks[best + 1 : last_bp + 1])
        for bp in breakpoints:
            ttl = TTL.get(blocks[bp].ttl or "5m", 300.0)
            old = cache.get(blocks[bp].digest)
            if old is None or old.expires <= now:
                cache[blocks[bp].digest] = Entry(now + ttl)
            else:
                old.expires = max(old.expires, now + ttl)
        uncached = sum(b.tokens for b in blocks[last_bp + 1 :])
        return read, written, uncached

    @staticmethod
    def _ttl_at(blocks: list[Block], j: int) -> float:
        for b in blocks[j:]:
            if b.ttl:
                return TTL.get(b.ttl, 300.0)
        return 300.0

    # -- answers -----------------------------------------------------------------
    def answer(self, body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
        """The content blocks of the answer: scripted by markers in the last user text."""
        if kind == "compaction":
            return [
                {
                    "type": "text",
                    "text": "<analysis>The user ran scripted turns.</analysis>\n"
                    "<summary>1. Primary Request: scripted turns for a test.\n"
                    "2. Pending Tasks: none.</summary>",
                }
            ]
        if answered_tool(body):
            return [{"type": "text", "text": "Done with the tool."}]
        text = last_user_text(body)
        tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        if "RUN-BASH" in text and "Bash" in tools:
            return [tool_use("Bash", {"command": "echo realclient", "description": "echo"})]
        if "RUN-AGENT" in text:
            agent = next((n for n in ("Agent", "Task") if n in tools), None)
            if agent:
                return [
                    tool_use(
                        agent,
                        {
                            "description": "scripted helper",
                            "prompt": "SUBAGENT-TASK say hello",
                            "subagent_type": "general-purpose",
                        },
                    )
                ]
        return [{"type": "text", "text": "OK from the fake."}]

    def classify(self, body: dict[str, Any]) -> str:
        text = last_user_text(body)
        if any(m in text for m in COMPACT_MARKERS):
            return "compaction"
        if "SUBAGENT-TASK" in text:
            return "subagent"
        if answered_tool(body):
            return "tool_followup"
        if body.get("max_tokens") == 1 or not body.get("tools"):
            return "aux"
        return "turn"

    def stream_of(self, body: dict[str, Any], kind: str) -> str:
        """Which conversation a call belongs to, from its body: the main one, a
        subagent's (named by its task), the compaction call, or an auxiliary call."""
        if kind == "compaction":
            return "compaction"
        if kind == "aux":
            return "aux"
        first = first_user_text(body)
        if "SUBAGENT-TASK" in first:
            return "subagent:" + hashlib.sha256(first.encode()).hexdigest()[:8]
        return "main"

    def serve_call(self, body: dict[str, Any]) -> tuple[Truth, list[dict[str, Any]]]:
        model = str(body.get("model", ""))
        blocks, billing = blocks_of(body)
        kind = self.classify(body)
        stream = self.stream_of(body, kind)
        tools = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        system = hashlib.sha256(
            canonical([strip_cc(b) for b in system_blocks(body) if not is_billing(b)])
        ).hexdigest()[:16]
        tools_hash = hashlib.sha256(
            canonical([strip_cc(t) for t in body.get("tools") or []])
        ).hexdigest()[:16]
        with self.lock:
            now = self.now()
            prev = next((t for t in reversed(self.truth) if t.stream == stream), None)
            prev_blocks = self.history[prev.seq][1] if prev is not None else []
            shared = 0
            for a, b in zip(prev_blocks, blocks, strict=False):
                if a.digest != b.digest:
                    break
                shared += 1
            # The prefix the previous request left cached, and whether it timed out.
            expired = False
            if prev is not None and shared:
                last_bp = max((i for i, b in enumerate(prev_blocks) if b.ttl), default=-1)
                entry = self.caches.get(model, {}).get(prev_blocks[last_bp].digest)
                expired = entry is not None and entry.expires <= now
            read, written, uncached = self.lookup(model, blocks)
            content = self.answer(body, kind)
            output = sum(tokens_of(b) for b in content)
            seq = len(self.truth)
            changed, causes = None, []
            if prev is None:
                outcome = "cold"
            else:
                prev_total = (
                    prev.input_tokens
                    + prev.cache_read_input_tokens
                    + prev.cache_creation_input_tokens
                )
                could = min(prev_total, read + written + uncached)
                outcome = "hit" if read >= 0.95 * could or could - read < 2000 else "miss"
                if shared < min(len(prev_blocks), len(blocks)):
                    changed = blocks[shared].part
                if outcome == "miss":
                    causes = [
                        name
                        for name, differs in (
                            ("model_changed", prev.model != model),
                            ("tools_changed", prev.tools_hash != tools_hash),
                            ("system_prompt_changed", prev.system_hash != system),
                        )
                        if differs
                    ]
                    if not causes and expired:
                        causes = ["ttl_expired_5m"]
                    if not causes and changed == "messages":
                        causes = ["messages_rewritten"]
                    causes = causes or ["unknown"]
                    if stream == "main" and self.compacted:
                        outcome, causes = "expected", []
            if stream == "main":
                self.compacted = False
            if kind == "compaction":
                self.compacted = True
            truth = Truth(
                seq=seq,
                model=model,
                kind=kind,
                stream=stream,
                msg_id=f"msg_fake{seq:04d}{uuid.uuid4().hex[:12]}",
                request_id=f"req_fake{seq:04d}{uuid.uuid4().hex[:8]}",
                at=now,
                input_tokens=uncached,
                cache_read_input_tokens=read,
                cache_creation_input_tokens=written,
                output_tokens=output,
                outcome=outcome,
                causes=causes,
                changed=changed,
                prev=prev.seq if prev is not None else None,
                tools=tools,
                tools_hash=tools_hash,
                system_hash=system,
                billing=billing,
                streamed=bool(body.get("stream")),
                n_messages=len(body.get("messages") or []),
            )
            self.truth.append(truth)
            self.history.append((model, blocks))
        return truth, content

    # -- HTTP --------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self.messages)
        app.router.add_post("/v1/messages/count_tokens", self.count_tokens)
        app.router.add_post("/_fake/advance", self.advance)
        app.router.add_get("/_fake/truth", self.get_truth)
        app.router.add_route("*", "/{tail:.*}", self.fallback)
        return app

    async def messages(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.api_keys.add(request.headers.get("x-api-key", ""))
        body = json.loads(raw)
        truth, content = self.serve_call(body)
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
            (self.dump_dir / f"{truth.seq:03d}-{truth.kind}.json").write_bytes(raw)
        usage = {
            "input_tokens": truth.input_tokens,
            "cache_creation_input_tokens": truth.cache_creation_input_tokens,
            "cache_read_input_tokens": truth.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": truth.cache_creation_input_tokens,
                "ephemeral_1h_input_tokens": 0,
            },
            "output_tokens": truth.output_tokens,
            "service_tier": "standard",
        }
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        message = {
            "id": truth.msg_id,
            "type": "message",
            "role": "assistant",
            "model": truth.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if self.diagnostics:
            found = diagnostics_of(truth)
            if found is not ABSENT:
                message["diagnostics"] = found
        headers = {"request-id": truth.request_id}
        if not body.get("stream"):
            return web.json_response(message, headers=headers)
        resp = web.StreamResponse(headers={**headers, "Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for event in sse(message):
            await resp.write(event)
            await asyncio.sleep(0)
        await resp.write_eof()
        return resp

    async def count_tokens(self, request: web.Request) -> web.Response:
        body = await request.json()
        blocks, _ = blocks_of(body)
        self.other.append({"method": "POST", "path": request.path})
        return web.json_response({"input_tokens": sum(b.tokens for b in blocks)})

    async def advance(self, request: web.Request) -> web.Response:
        data = await request.json()
        self.offset += float(data.get("seconds", 0))
        return web.json_response({"offset": self.offset})

    async def get_truth(self, request: web.Request) -> web.Response:
        return web.json_response([t.as_json() for t in self.truth])

    async def fallback(self, request: web.Request) -> web.Response:
        self.other.append({"method": request.method, "path": request.path})
        return web.json_response(
            {"type": "error", "error": {"type": "not_found_error"}}, status=404
        )


class Running:
    """The fake served from a thread with its own loop, on 127.0.0.1 and a free port."""

    def __init__(self, fake: FakeAnthropic) -> None:
        self.fake = fake
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._runner = web.AppRunner(self.fake.app(), access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self._loop.run_forever()

    def __enter__(self) -> Running:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._runner is not None
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
