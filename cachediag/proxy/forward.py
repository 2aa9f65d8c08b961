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
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, MultiMapping
from yarl import URL

from cachediag.proxy.recording import DECODABLE, HINT_HEADERS, Exchange, Failure, Recorder

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
_NOT_FORWARDED = HOP_BY_HOP | {"host"}
# aiohttp adds these when absent; a transparent proxy sends only what the client sent.
_NO_AUTO = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")
UPSTREAM_KEY: web.AppKey[Upstream] = web.AppKey("cachediag_upstream")
SEPARATE_HEAD_BYTES = 65_536
"""A request body larger than this follows its head in a send of its own (below it, one
send of both costs less than a second system call)."""


@dataclass(slots=True)
class Upstream:
    base: URL
    session: aiohttp.ClientSession
    recorder: Recorder | None


def is_messages_call(method: str, path: str) -> bool:
    """``POST .../v1/messages`` (with or without a query such as ``?beta=true``)."""
    return method == "POST" and path.rstrip("/").endswith("/v1/messages")


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


def error_body(message: str) -> bytes:
    """An error in the Anthropic API's own shape, so clients show it as they show theirs."""
    import json

    return json.dumps(
        {"type": "error", "error": {"type": "api_error", "message": message}}
    ).encode()


def upstream_url(base: URL, raw_path: str) -> URL:
    # Path and query exactly as the client wrote them (no re-encoding), under the
    # upstream's own path prefix if it has one.
    prefix = base.raw_path.rstrip("/")
    return URL(str(base.origin()) + prefix + raw_path, encoded=True)


async def _streamed(request: web.Request, keep: list[bytes] | None) -> AsyncIterator[bytes]:
    """The request body as it arrives (a 1 MB conversation is not held back until read
    whole); ``keep`` collects it for the recorder."""
    if (request.content_length or 0) > SEPARATE_HEAD_BYTES:
        # An empty first piece makes the client send the request head on its own: with
        # the first piece of a large body it would be joined into one copy of 256 KB.
        yield b""
    async for chunk in pieces(request.content):
        if keep is not None:
            keep.append(chunk)
        yield chunk


async def pieces(stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """A body as the pieces it was read in. ``iter_any`` would join all that is buffered
    into one new bytes object: for a 0.8 MB body, a copy of most of it."""
    while True:
        chunk, end_of_http_chunk = await stream.readchunk()
        if chunk:
            yield chunk
        elif not end_of_http_chunk:
            return  # the end of the body


async def handle(request: web.Request) -> web.StreamResponse:
    up = request.app[UPSTREAM_KEY]
    recorder = up.recorder if is_messages_call(request.method, request.path) else None
    headers = end_to_end(request.headers, _NOT_FORWARDED)
    kept: list[bytes] | None = [] if recorder is not None else None
    body = _streamed(request, kept) if request.body_exists else None
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
        )
        if "Accept-Encoding" in headers:
            headers["Accept-Encoding"] = narrowed_accept_encoding(headers["Accept-Encoding"])
    try:
        return await _relay(request, up, headers, body, exchange)
    finally:
        if exchange is not None and recorder is not None and kept is not None:
            if exchange.done_at is None:
                exchange.done_at = time.time()
            exchange.request_parts = kept  # joined by the recorder, off the event loop
            recorder.submit(exchange)


async def _relay(
    request: web.Request,
    up: Upstream,
    headers: CIMultiDict[str],
    body: AsyncIterator[bytes] | None,
    ex: Exchange | None,
) -> web.StreamResponse:
    url = upstream_url(up.base, request.raw_path)
    try:
        upstream = await up.session.request(
            request.method,
            url,
            headers=headers,
            data=body,
            skip_auto_headers=_NO_AUTO,
            allow_redirects=False,
        )
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        if ex is not None:
            ex.failure = Failure.UNREACHABLE
        # The exception's type and the upstream's address only: nothing from the request.
        why = f"cachediag proxy: upstream {up.base} unreachable ({type(exc).__name__})"
        return web.Response(status=502, body=error_body(why), content_type="application/json")
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
        await response.prepare(request)
        try:
            async for chunk in pieces(upstream.content):
                if ex is not None:
                    ex.chunks.append(chunk)
                await response.write(chunk)
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
            # The upstream broke off mid-answer: the client must see a broken
            # response too, never a short one that looks whole.
            if ex is not None:
                ex.failure = Failure.UPSTREAM_DROPPED
            raise _abort(request) from exc
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            if ex is not None:
                ex.failure = Failure.CANCELLED
            raise
        except BaseException:
            if ex is not None:
                ex.failure = Failure.CANCELLED
            raise
        if ex is not None:
            ex.done_at = time.time()
        await response.write_eof()
        return response


def _abort(request: web.Request) -> ConnectionResetError:
    transport = request.transport
    if transport is not None:
        transport.abort()
    return ConnectionResetError("upstream closed the connection mid-response")
