"""Forwarding: every request relayed to the upstream unchanged, every response back as it
arrives. aiohttp (the ``cachediag[proxy]`` extra) serves and sends.

Bodies are relayed as bytes: the client session never decompresses, so a gzip answer
reaches the client as the upstream sent it; a request's body is streamed on as it
arrives (``request_body``). What changes on the way is said in ``headers``, what is
refused before anything is sent on in ``refusals``. Nothing is recorded until the client
has its last byte. When the client goes away, its upstream request is cancelled and its
connection closed.
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
from multidict import CIMultiDict
from yarl import URL

from cachediag.proxy.exchange import Exchange
from cachediag.proxy.headers import (
    HOP_BY_HOP,
    NO_AUTO,
    NOT_FORWARDED,
    end_to_end,
    narrowed_accept_encoding,
)
from cachediag.proxy.limits import Limits
from cachediag.proxy.recording import HINT_HEADERS, Failure, Recorder
from cachediag.proxy.refusals import refusal, refused, too_large
from cachediag.proxy.request_body import BodyTooLarge, RequestBody
from cachediag.proxy.target import BadTarget, Origin, origin_form, redact_url, upstream_url

UPSTREAM_KEY: web.AppKey[Upstream] = web.AppKey("cachediag_upstream")


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
    if (answer := refused(request, up.origin, up.limits)) is not None:
        return answer
    recorder = up.recorder if is_messages_call(request.method, path) else None
    headers = end_to_end(request.headers, NOT_FORWARDED)
    body = RequestBody(request, up.limits, keep=recorder is not None)
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
    body: RequestBody,
    ex: Exchange | None,
    started: list[web.StreamResponse],
) -> web.StreamResponse:
    try:
        upstream = await up.session.request(
            request.method,
            url,
            headers=headers,
            data=body.stream() if request.body_exists else None,
            skip_auto_headers=NO_AUTO,
            allow_redirects=False,
        )
    except (aiohttp.ClientError, OSError, TimeoutError, BodyTooLarge) as exc:
        if body.too_large or isinstance(exc, BodyTooLarge):
            if ex is not None:
                ex.failure = Failure.HTTP_ERROR
                ex.status = 413
            return too_large(up.limits)
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
