"""A request's body on its way to the upstream: streamed on as it arrives, with the
client's ``Content-Length`` (a 1 MB conversation is not held back until read whole),
counted against the body limit, and kept for the recorder up to its cap.

``Expect: 100-continue`` is answered here, as a server may, and not forwarded: the
``100`` goes to the client once the upstream has taken the request's head, so an upstream
that never sends ``100`` cannot hang the request. aiohttp (the ``cachediag[proxy]``
extra) reads the body.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from cachediag.proxy.guard import BodyClock
from cachediag.proxy.limits import Limits

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
SEPARATE_HEAD_BYTES = 65_536
"""A request body larger than this follows its head in a send of its own (below it, one
send of both costs less than a second system call)."""


class BodyTooLarge(Exception):
    """A chunked request body passed ``max_body_bytes`` while being forwarded."""


class RequestBody:
    """The request body streamed on as it arrives, counted and kept (see the module's
    docstring). It says afterwards how it ended: whole, too large, or cut off by the
    client."""

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
