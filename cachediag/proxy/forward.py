"""Forwarding: every request relayed to the upstream unchanged, every response back as it
arrives. aiohttp (the ``cachediag[proxy]`` extra) serves and sends; imported only here
and in ``server``.

What changes on the way, and why (RFC 9110 §7.6.1): hop-by-hop headers (``Connection``,
the names it lists, ``Keep-Alive``, ``TE``, ``Trailer``, ``Transfer-Encoding``,
``Upgrade``, ``Proxy-*``) belong to one connection and are not forwarded, and ``Host``
names the upstream. Bodies are relayed as bytes: the client session never decompresses,
so a gzip answer reaches the client as the upstream sent it; request bodies are
streamed on as they arrive, with the client's ``Content-Length``. For ``POST /v1/messages``
only, ``Accept-Encoding`` is narrowed to the codings the recorder can undo, so the usage
of a compressed answer can still be read; the bytes the upstream sends are relayed as
they are. Nothing is recorded until the client has its last byte.

What is refused, before anything is sent on (RFC 9110/9112): a method no API uses
(``CONNECT``, ``TRACE``, unknown ones: 501); a target not in origin form
(400: only ``/path?query`` is forwarded, to ``--upstream`` and nowhere else, see
``target``); a transfer coding other than ``chunked`` (501: it cannot be forwarded
without undoing it); an expectation other than ``100-continue`` (417); a body over the
limit (413). ``Expect: 100-continue`` is answered here, as a server may, and not
forwarded: the ``100`` goes to the client once the upstream has taken the request's
head, so an upstream that never sends ``100`` cannot hang the request. When the client
goes away, its upstream request is cancelled and its connection closed.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, MultiMapping
from yarl import URL

from cachediag.proxy.exchange import Exchange
from cachediag.proxy.guard import BodyClock, browser_refusal
from cachediag.proxy.limits import Limits
from cachediag.proxy.recording import DECODABLE, HINT_HEADERS, Failure, Recorder
from cachediag.proxy.target import BadTarget, Origin, origin_form, redact_url, upstream_url

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Content-Length stays: the body is streamed on as it comes, with the client's framing.
# Expect is answered here (see the module's docstring), so the upstream never waits on it.
_NOT_FORWARDED = HOP_BY_HOP | {"host", "expect"}
# aiohttp adds these when absent; a transparent proxy sends only what the client sent.
_NO_AUTO = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")
UPSTREAM_KEY: web.AppKey[Upstream] = web.AppKey("cachediag_upstream")
SEPARATE_HEAD_BYTES = 65_536
"""A request body larger than this follows its head in a send of its own (below it, one
send of both costs less than a second system call)."""


CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
FORWARDED_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""What an HTTP API is called with; anything else is a 501 (RFC 9110 9.1)."""


@dataclass(slots=True)
class Upstream:
    origin: Origin
    session: aiohttp.ClientSession
    recorder: Recorder | None
    limits: Limits = field(default_factory=Limits)
    in_flight: set[asyncio.Task[object]] = field(default_factory=set)
    """The handlers running now: a stop waits for them (up to ``limits.drain_s``)."""
    guards: dict[object, ConnectionGuard] = field(default_factory=dict)
    """Each connection's header-timeout guard, by its aiohttp protocol (see ``server``)."""


def is_messages_call(method: str, path: str) -> bool:
    """``POST .../v1/messages`` (with or without a query such as ``?beta=true``)."""
    return method == "POST" and path.rstrip("/").endswith("/v1/messages")


class ConnectionGuard(Protocol):
    """What a connection's guard must hear from the handler (``server`` implements it)."""

    def request_started(self) -> None: ...

    def request_done(self) -> None: ...


def end_to_end(source: MultiMapping[str], drop: frozenset[str]) -> CIMultiDict[str]:
    """Headers minus the hop-by-hop ones (and those ``Connection`` names), case and
    repeats kept."""
    listed = {
        token.strip().lower()
        for value in source.getall("Connection", [])
        for token in value.split(",")
    }
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in source.items():
        lower = name.lower()
        if lower not in drop and lower not in listed:
            out.add(name, value)
    return out


def narrowed_accept_encoding(value: str) -> str:
    """The client's ``Accept-Encoding`` without codings the recorder cannot read back."""
    kept = [
        part.strip()
        for part in value.split(",")
        if part.split(";", 1)[0].strip().lower() in (*DECODABLE, "identity")
    ]
    return ", ".join(kept) or "identity"


def error_body(message: str, kind: str = "api_error") -> bytes:
    """An error in the Anthropic API's own shape, so clients show it as they show theirs."""
    import json

    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def refusal(status: int, message: str, kind: str = "invalid_request_error") -> web.Response:
    """An answer of the proxy's own; the connection is closed after it, since the body the
    client may still be sending is not read."""
    response = web.Response(
        status=status, body=error_body(f"cachediag proxy: {message}", kind),
        content_type="application/json",
    )  # fmt: skip
    response.force_close()
    return response


def transfer_codings(request: web.BaseRequest) -> list[str]:
    return [
        token.strip().lower()
        for value in request.headers.getall("Transfer-Encoding", [])
        for token in value.split(",")
        if token.strip()
    ]


class _Body:
    """The request body streamed on as it arrives (a 1 MB conversation is not held back
    until read whole), counted against the body limit, and kept for the recorder up to
    its cap. It says afterwards how it ended: whole, too large, or cut off by the client."""

    def __init__(self, request: web.BaseRequest, limits: Limits, keep: bool) -> None:
        self.request = request
        self.limits = limits
        self.kept: list[bytes] | None = [] if keep else None
        self.kept_bytes = 0
        self.over_cap = False
        if keep and (request.content_length or 0) > limits.record_max_bytes:
            self.kept, self.over_cap = None, True  # known too big: nothing kept at all
        self.too_large = False
        self.client_gone = False
        self.complete = False
        self.clock = BodyClock(limits.body_timeout_s)
        self.expect_continue = (
            request.headers.get("Expect", "").strip().lower() == ("100-continue")
            and request.version >= aiohttp.HttpVersion11
        )

    async def stream(self) -> AsyncIterator[bytes]:
        if self.expect_continue:
            # Only now, with the upstream connected and the head sent: a client that
            # waits for 100 sends nothing to an upstream that is not there.
            await self.request.writer.write(CONTINUE)
        if (self.request.content_length or 0) > SEPARATE_HEAD_BYTES:
            # An empty first piece makes the client send the request head on its own: with
            # the first piece of a large body it would be joined into one copy of 256 KB.
            yield b""
        total = 0
        try:
            async for chunk in self.clock.pieces(self.request.content):
                total += len(chunk)
                if total > self.limits.max_body_bytes:
                    self.too_large = True
                    raise BodyTooLarge
                self._keep(chunk)
                yield chunk
        except BodyTooLarge:
            raise
        except (Exception, asyncio.CancelledError):
            self.client_gone = True  # the client's side of the body broke off
            raise
        self.complete = True

    def _keep(self, chunk: bytes) -> None:
        if self.kept is None:
            return
        self.kept_bytes += len(chunk)
        if self.kept_bytes > self.limits.record_max_bytes:
            self.kept, self.over_cap = None, True  # recorded without a fingerprint
        else:
            self.kept.append(chunk)


class BodyTooLarge(Exception):
    """A chunked request body passed ``max_body_bytes`` while being forwarded."""


async def pieces(stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """A body as the pieces it was read in. ``iter_any`` would join all that is buffered
    into one new bytes object: for a 0.8 MB body, a copy of most of it."""
    while True:
        chunk, end_of_http_chunk = await stream.readchunk()
        if chunk:
            yield chunk
        elif not end_of_http_chunk or stream.at_eof():
            # The end of the body. The empty reader of a body-less answer (HEAD, 204,
            # 304) says (b"", True) every time: without at_eof this loop would spin.
            return


async def handle(request: web.Request) -> web.StreamResponse:
    """The handler of ``make_app``'s application."""
    return await forward(request, request.app[UPSTREAM_KEY])


async def forward(request: web.BaseRequest, up: Upstream) -> web.StreamResponse:
    """One request: refused, or relayed to the upstream and (messages calls) recorded."""
    task = asyncio.current_task()
    guard = up.guards.get(request.protocol)
    if guard is not None:
        guard.request_started()
    if task is not None:
        up.in_flight.add(task)
    started: list[web.StreamResponse] = []
    try:
        return await _forward(request, up, started)
    except (ConnectionError, asyncio.CancelledError, web.HTTPException):
        raise
    except Exception as exc:  # never a traceback, never a detail of the request
        print(f"cachediag proxy: internal error ({type(exc).__name__})", file=sys.stderr)
        if started and request.transport is not None:
            request.transport.abort()
            raise ConnectionResetError("internal error mid-response") from None
        return refusal(500, f"internal error ({type(exc).__name__})", "api_error")
    finally:
        if task is not None:
            up.in_flight.discard(task)
        if guard is not None:
            guard.request_done()


async def _forward(
    request: web.BaseRequest, up: Upstream, started: list[web.StreamResponse]
) -> web.StreamResponse:
    try:
        path, _ = origin_form(request.raw_path)
        url = upstream_url(up.origin, request.raw_path)
    except BadTarget as exc:
        return refusal(400, str(exc))
    if request.method not in FORWARDED_METHODS:
        # CONNECT would make the client library send the upstream's authority as target
        # (a tunnel); TRACE would echo the credentials; others are no API's.
        return refusal(501, f"the {request.method} method is not forwarded", "api_error")
    codings = transfer_codings(request)
    if codings and codings != ["chunked"]:
        # RFC 9112 6.1: a coding not understood is a 501; dropping it would send the
        # upstream a body it cannot read.
        return refusal(501, "only the chunked transfer coding is supported", "api_error")
    expect = request.headers.get("Expect")
    if expect is not None and expect.strip().lower() != "100-continue":
        return refusal(417, "the only expectation supported is 100-continue")
    if (request.content_length or 0) > up.limits.max_body_bytes:
        return refusal(
            413, f"request body over {up.limits.max_body_bytes} bytes", "request_too_large"
        )
    if (why := browser_refusal(request, up.origin)) is not None:
        return refusal(403, why, "permission_error")  # nothing forwarded, nothing recorded
    recorder = up.recorder if is_messages_call(request.method, path) else None
    headers = end_to_end(request.headers, _NOT_FORWARDED)
    body = _Body(request, up.limits, keep=recorder is not None)
    exchange: Exchange | None = None
    if recorder is not None:
        exchange = Exchange(
            sent_at=time.time(),
            request_encoding=request.headers.get("Content-Encoding", ""),
            betas=",".join(request.headers.getall("anthropic-beta", [])),
            hints={
                key: request.headers[name]
                for name, key in HINT_HEADERS.items()
                if name in request.headers
            },
            record_max_bytes=up.limits.record_max_bytes,
        )
        if "Accept-Encoding" in headers:
            headers["Accept-Encoding"] = narrowed_accept_encoding(headers["Accept-Encoding"])
    try:
        return await _relay(request, up, url, headers, body, exchange, started)
    except BaseException:
        if exchange is not None and exchange.failure is None:
            exchange.failure = Failure.CANCELLED  # the client went away, or the proxy stopped
        raise
    finally:
        if exchange is not None and recorder is not None:
            if exchange.done_at is None:
                exchange.done_at = time.time()
            # Joined by the recorder, off the event loop.
            exchange.request_parts = body.kept if body.kept is not None else []
            exchange.request_over_cap = body.over_cap
            recorder.submit(exchange)


async def _relay(
    request: web.BaseRequest,
    up: Upstream,
    url: URL,
    headers: CIMultiDict[str],
    body: _Body,
    ex: Exchange | None,
    started: list[web.StreamResponse],
) -> web.StreamResponse:
    try:
        upstream = await up.session.request(
            request.method,
            url,
            headers=headers,
            data=body.stream() if request.body_exists else None,
            skip_auto_headers=_NO_AUTO,
            allow_redirects=False,
        )
    except (aiohttp.ClientError, OSError, TimeoutError, BodyTooLarge) as exc:
        if body.too_large or isinstance(exc, BodyTooLarge):
            if ex is not None:
                ex.failure = Failure.HTTP_ERROR
                ex.status = 413
            return refusal(
                413, f"request body over {up.limits.max_body_bytes} bytes", "request_too_large"
            )
        if body.clock.expired:  # the upstream request is cancelled with its body
            if ex is not None:
                ex.failure = Failure.CANCELLED
            return refusal(408, "request body timed out", "timeout_error")
        if body.client_gone:
            if ex is not None:
                ex.failure = Failure.CANCELLED
            raise ConnectionResetError("the client broke off its request body") from None
        if ex is not None:
            ex.failure = Failure.UNREACHABLE
        # The exception's type and the upstream's address only: nothing from the request.
        why = f"upstream {redact_url(up.origin)} unreachable ({type(exc).__name__})"
        return refusal(502, why, "api_error")
    async with upstream:
        if ex is not None:
            ex.first_byte_at = time.time()
            ex.status = upstream.status
            ex.request_id = upstream.headers.get("request-id")
            ex.response_encoding = upstream.headers.get("Content-Encoding", "")
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        response.headers.extend(end_to_end(upstream.headers, HOP_BY_HOP))
        if "Content-Length" in upstream.headers:
            response.content_length = int(upstream.headers["Content-Length"])
        started.append(response)  # from here on an error can only break the connection
        await response.prepare(request)
        kept = 0
        cap = up.limits.record_max_bytes
        try:
            async for chunk in pieces(upstream.content):
                if ex is not None and not ex.response_over_cap:
                    kept += len(chunk)
                    if kept > cap:
                        ex.response_over_cap, ex.chunks = True, []
                    else:
                        ex.chunks.append(chunk)
                await response.write(chunk)
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
            # The upstream broke off mid-answer: the client must see a broken
            # response too, never a short one that looks whole.
            if ex is not None:
                ex.failure = Failure.UPSTREAM_DROPPED
            raise _abort(request) from exc
        if ex is not None:
            ex.done_at = time.time()
        await response.write_eof()
        return response


def _abort(request: web.BaseRequest) -> ConnectionResetError:
    transport = request.transport
    if transport is not None:
        transport.abort()
    return ConnectionResetError("upstream closed the connection mid-response")
