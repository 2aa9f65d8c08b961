"""A scripted fake Anthropic API on 127.0.0.1 and the proxy in front of it, for the tests.

The upstream runs in a thread with its own event loop, so tests drive the proxy either in
their own loop (``serve``) or as the installed command in a subprocess. It keeps what it
received (method, path with query, headers, body) so tests can check what was forwarded.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from yarl import URL

from cachediag.proxy.limits import Limits
from cachediag.proxy.server import ProxyConfig, serve


@dataclass
class Seen:
    method: str
    path_qs: str
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class Reply:
    """What the upstream answers: a status, headers, and body chunks sent one by one."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    gate_after_first: threading.Event | None = None
    """Hold the chunks after the first until this is set (or 5 s pass)."""
    drop_after: int | None = None
    """Break the connection after this many chunks."""
    chunked: bool = True
    hold: threading.Event | None = None
    """Answer nothing until this is set (or 60 s pass, or the proxy's connection closes:
    counted in ``FakeUpstream.left_early``)."""

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


def message(msg_id: str, usage: dict[str, Any], model: str = "claude-opus-4-5") -> dict[str, Any]:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": "ANSWER-TEXT"}],
        "stop_reason": "end_turn",
        "usage": usage,
    }


USAGE = {
    "input_tokens": 3,
    "cache_creation_input_tokens": 1200,
    "cache_read_input_tokens": 9000,
    "cache_creation": {"ephemeral_5m_input_tokens": 1200, "ephemeral_1h_input_tokens": 0},
    "output_tokens": 50,
}


def json_reply(msg_id: str, usage: dict[str, Any] = USAGE, request_id: str = "req_1") -> Reply:
    body = json.dumps(message(msg_id, usage)).encode()
    return Reply(
        headers={"Content-Type": "application/json", "request-id": request_id},
        chunks=[body],
        chunked=False,
    )


def sse_events(msg_id: str, usage: dict[str, Any] = USAGE) -> list[bytes]:
    start = {**message(msg_id, {**usage, "output_tokens": 1}), "content": []}
    text = {"type": "text", "text": ""}
    delta = {"type": "text_delta", "text": "STREAMED-TEXT"}
    final = {"output_tokens": usage["output_tokens"]}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"message": start}),
        ("content_block_start", {"index": 0, "content_block": text}),
        ("content_block_delta", {"index": 0, "delta": delta}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": final}),
        ("message_stop", {}),
    ]
    return [
        f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
        for kind, data in events
    ]


def sse_reply(msg_id: str, usage: dict[str, Any] = USAGE, request_id: str = "req_1") -> Reply:
    return Reply(
        headers={"Content-Type": "text/event-stream", "request-id": request_id},
        chunks=sse_events(msg_id, usage),
    )


def gzip_reply(msg_id: str, request_id: str = "req_gz") -> Reply:
    body = gzip.compress(json.dumps(message(msg_id, USAGE)).encode())
    return Reply(
        headers={
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
            "request-id": request_id,
        },
        chunks=[body[:20], body[20:]],
    )


class FakeUpstream:
    """``reply_for(seen) -> Reply`` decides each answer; default: a JSON message."""

    def __init__(self, reply_for: Callable[[Seen], Reply] | None = None) -> None:
        self.reply_for = reply_for or (lambda seen: json_reply("msg_default"))
        self.seen: list[Seen] = []
        self.sent_last_at: list[float] = []
        self.gate_timeouts = 0
        self.left_early = 0
        """Requests whose connection the proxy closed while they were held."""
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> FakeUpstream:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    @property
    def url(self) -> URL:
        return URL(f"http://127.0.0.1:{self.port}")

    async def _start(self) -> None:
        app = web.Application(client_max_size=1 << 30)
        # An upstream that never sends 100 (Continue): the proxy must not wait for one.
        app.router.add_route("*", "/{tail:.*}", self._handle, expect_handler=_no_continue)
        self._runner = web.AppRunner(app, access_log=None, auto_decompress=False)  # raw bodies
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _held(self, request: web.Request, hold: threading.Event) -> bool:
        """Wait for ``hold``; False when the proxy's connection closed first."""
        deadline = time.monotonic() + 60
        while not hold.is_set() and time.monotonic() < deadline:
            transport = request.transport
            if transport is None or transport.is_closing():
                self.left_early += 1
                return False
            await asyncio.sleep(0.05)
        return True

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        seen = Seen(
            request.method,
            request.raw_path,
            [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.raw_headers],
            body,
        )
        self.seen.append(seen)
        reply = self.reply_for(seen)
        if reply.hold is not None and not await self._held(request, reply.hold):
            raise ConnectionResetError("the proxy went away")
        response = web.StreamResponse(status=reply.status)
        for name, value in reply.headers.items():
            response.headers[name] = value
        if not reply.chunked:
            response.content_length = len(reply.body)
        await response.prepare(request)
        chunks = [] if request.method == "HEAD" else reply.chunks  # a HEAD answer has no body
        for i, chunk in enumerate(chunks):
            if reply.drop_after is not None and i == reply.drop_after:
                assert request.transport is not None
                request.transport.abort()
                return response
            if i == 1 and reply.gate_after_first is not None:
                opened = await asyncio.to_thread(reply.gate_after_first.wait, 5.0)
                self.gate_timeouts += not opened
            await response.write(chunk)
            if i < len(chunks) - 1:
                await asyncio.sleep(0)  # let each chunk go out on its own
        self.sent_last_at.append(time.time())
        await response.write_eof()
        return response


async def _no_continue(request: web.Request) -> None:
    return None


class Tripwire:
    """A listener on 127.0.0.1 that must never be reached: counts every connection."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            conn.close()

    def __enter__(self) -> Tripwire:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        self._thread.join(5)


def raw_exchange(
    port: int, data: bytes, *, then: tuple[bytes, ...] = (), timeout: float = 20
) -> bytes:
    """Send ``data`` (and each of ``then``) on a fresh connection to 127.0.0.1:port; all
    that comes back until the peer closes or ``timeout`` passes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        for more in then:
            sock.sendall(more)
        got = b""
        try:
            while chunk := sock.recv(65536):
                got += chunk
        except TimeoutError:
            pass
        return got


@asynccontextmanager
async def proxy_to(
    upstream: URL, log_dir: Path, limits: Limits | None = None
) -> AsyncIterator[str]:
    """The proxy in this loop, on a free port; yields its base URL, stops (and flushes)
    on exit."""
    stop = asyncio.Event()
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    cfg = ProxyConfig(
        host="127.0.0.1", port=0, upstream=upstream, log_dir=log_dir, limits=limits or Limits()
    )
    task = asyncio.create_task(
        serve(cfg, stop, lambda host, port: ready.set_result(f"http://{host}:{port}"))
    )
    done, _ = await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()  # raises why it could not start
    try:
        yield await ready
    finally:
        stop.set()
        await task


def records(log_dir: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(log_dir.glob("*.jsonl")):
        out.extend(json.loads(line) for line in path.read_text().splitlines() if line)
    return out


def capture_records(path: Path) -> list[dict[str, Any]]:
    """A claude-trace capture's records in the order their requests were sent."""
    out = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(out, key=lambda r: r["request"]["timestamp"])


def _upstream_reply(rec: dict[str, Any]) -> Reply:
    resp = rec["response"]
    headers = {"request-id": resp.get("headers", {}).get("request-id", "")}
    if "body_raw" in resp:
        headers["Content-Type"] = "text/event-stream"
        text = resp["body_raw"]
        # One chunk per event, as the API sends them.
        chunks = [part.encode() + b"\n\n" for part in text.split("\n\n") if part.strip()]
    else:
        headers["Content-Type"] = "application/json"
        chunks = [json.dumps(resp["body"]).encode()]
    return Reply(status=resp.get("status_code", 200), headers=headers, chunks=chunks)


async def replay_capture(
    path: Path, log_dir: Path, extra_headers: Callable[[int], dict[str, str]] | None = None
) -> None:
    """Send every request of a capture through the proxy, one after the other, to an
    upstream that answers each with the capture's own response; ``extra_headers(i)`` adds
    headers to the i-th request."""
    import aiohttp

    recs = capture_records(path)
    queue = [_upstream_reply(r) for r in recs]
    with FakeUpstream(lambda seen: queue.pop(0)) as up:
        async with proxy_to(up.url, log_dir) as base, aiohttp.ClientSession() as session:
            for i, rec in enumerate(recs):
                req = rec["request"]
                url = URL(req["url"])
                headers = {
                    k: v
                    for k, v in req.get("headers", {}).items()
                    if k.lower() not in ("content-length", "host")
                }
                if extra_headers is not None:
                    headers.update(extra_headers(i))
                target = URL(base + url.raw_path_qs, encoded=True)
                body = json.dumps(req["body"]).encode()
                async with session.request(
                    req.get("method", "POST"), target, data=body, headers=headers
                ) as resp:
                    await resp.read()


def _final_message(resp: dict[str, Any]) -> dict[str, Any]:
    from cachediag.ingest.capture import parse_sse

    if "body_raw" in resp:
        return parse_sse(resp["body_raw"])[0]
    body: dict[str, Any] = resp["body"]
    return body


def transcript_of(capture: Path, message_ids: set[str]) -> list[dict[str, Any]]:
    """The Claude Code transcript of a capture's requests ``message_ids`` (its main
    thread): one user and one assistant line per response, as Claude Code writes them,
    with the capture's own times, ids and usage. No system prompt, no tools: a transcript
    never has them."""
    from datetime import UTC, datetime

    def iso(at: float) -> str:
        return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"

    lines: list[dict[str, Any]] = []
    parent = None
    envelope = {"sessionId": "s-joined", "version": "2.1.300", "cwd": "/p", "isSidechain": False}
    for n, rec in enumerate(capture_records(capture)):
        resp = rec["response"]
        message = _final_message(resp)
        if message.get("id") not in message_ids:
            continue
        message = {k: v for k, v in message.items() if k != "context_management"}
        user = {**envelope, "type": "user", "uuid": f"u{n}", "parentUuid": parent,
                "timestamp": iso(rec["request"]["timestamp"]),
                "message": {"role": "user", "content": "(prompt)"}}  # fmt: skip
        request_id = resp.get("headers", {}).get("request-id")
        answer = {**envelope, "type": "assistant", "uuid": f"a{n}", "parentUuid": f"u{n}",
                  "timestamp": iso(resp["timestamp"]), "requestId": request_id,
                  "message": message}  # fmt: skip
        lines += [user, answer]
        parent = f"a{n}"
    return lines
