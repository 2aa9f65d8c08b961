"""What the proxy refuses before a request reaches ``forward``'s relay, and how it refuses.

Three mechanisms, each closing a class of attack rather than one request shape:

- ``QuietServer``: aiohttp's own error answers (a head it cannot parse, an error in a
  handler) quote the offending header line, API key included, in a ``text/plain`` body.
  Every error answer of the proxy's server is instead one fixed body in the API's shape,
  built from nothing the client sent, with ``Connection: close``.
- ``browser_refusal``: the proxy answers on the credentials the client attaches, so a web
  page must not be able to use it. A browser marks every request it sends with ``Origin``
  (all cross-origin requests and every ``POST``) or ``Sec-Fetch-Site`` (all requests,
  current browsers); API clients send neither. A page that rebinds its own name to
  127.0.0.1 (DNS rebinding) is same-origin to itself, so its requests still name that name
  in ``Host``: on a loopback connection only a loopback name with the listening port (or
  the upstream's own host, a name a page does not own) is accepted. On a connection to a
  non-loopback address (``--allow-remote``) any ``Host`` is accepted, since the user chose
  to serve other machines, which can name it anything.
- ``BodyClock``: a request body that goes ``body_timeout_s`` without a byte is cut off
  (aiohttp has no such limit: one byte a second would hold the connection, and its
  upstream connection, for ever).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from cachediag.proxy.target import Origin

MALFORMED = json.dumps(
    {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "cachediag proxy: malformed request",
        },
    }
).encode()
INTERNAL = json.dumps(
    {"type": "error", "error": {"type": "api_error", "message": "cachediag proxy: internal error"}}
).encode()

BROWSER_ONLY = ("Origin", "Sec-Fetch-Site", "Sec-Fetch-Dest", "Sec-Fetch-User")
"""Headers only browsers send. ``Sec-Fetch-Mode`` is not among them: Node's own ``fetch``
(undici) sends ``Sec-Fetch-Mode: cors`` on every request, so only its other values
(``navigate``, ``no-cors``, ``same-origin``, ``websocket``), which no API client sends,
are refused."""
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class QuietHandler(RequestHandler):
    """aiohttp's connection protocol with ``handle_error`` (same signature in aiohttp 3.9
    to 3.14) answering a fixed body: the parser's message, which ``message`` carries and
    aiohttp would send, quotes the bad line."""

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        # Logged through server._quiet_aiohttp's handler: the exception's type only.
        self.log_exception("Error handling request", exc_info=exc)
        if request.writer.output_size > 0:
            raise ConnectionError("response already started; the connection is broken")
        body = MALFORMED if status < 500 else INTERNAL
        response = web.Response(
            status=status, body=body, content_type="application/json",
            headers={"Connection": "close"},  # said even when aiohttp answers as HTTP/1.0
        )  # fmt: skip
        response.force_close()
        return response


class QuietServer(web.Server):
    """``web.Server`` whose connections are ``QuietHandler``s."""

    def __call__(self) -> RequestHandler:
        server: Any = self  # _loop and _kwargs: set by web.Server in 3.9 to 3.14
        return QuietHandler(self, loop=server._loop, **server._kwargs)


def browser_refusal(request: web.BaseRequest, upstream: Origin) -> str | None:
    """Why a request is refused as a browser's (the 403's message), or ``None``."""
    headers = request.headers
    for name in BROWSER_ONLY:
        if name in headers:
            return f"requests from web pages are refused ({name} header)"
    mode = headers.get("Sec-Fetch-Mode")
    if mode is not None and mode.strip().lower() != "cors":
        return "requests from web pages are refused (Sec-Fetch-Mode header)"
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    if not isinstance(sockname, tuple) or len(sockname) < 2:
        return None  # not a TCP connection (a Unix socket): no name to check against
    local, port = _loopback(str(sockname[0])), int(sockname[1])
    if local is None:
        return None  # a connection to a non-loopback address: --allow-remote, see above
    hosts = headers.getall("Host", [])  # not request.host: without one it is our own name
    named = host_port(hosts[0]) if len(hosts) == 1 else None
    upstream_port = upstream.port or (443 if upstream.scheme == "https" else 80)
    if named is None or (
        named not in {(name, port) for name in (*LOOPBACK_NAMES, local)}
        # The upstream's own name is no page's either (a page can only rebind a name it
        # owns), and a client that names where it is going may send it.
        and named != (upstream.host, upstream_port)
    ):
        return "the Host header does not name this proxy's address"
    return None


def _loopback(address: str) -> str | None:
    """The connection's local address when it is a loopback one (IPv4-mapped unwrapped)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip) if ip.is_loopback else None


def host_port(host: str) -> tuple[str, int] | None:
    """A ``Host`` value's name (lower case, IPv6 without brackets) and port (absent: 80,
    the proxy speaks http), or ``None`` when it is not a valid one."""
    host = host.strip().lower()
    if host.startswith("["):
        name, sep, rest = host[1:].partition("]")
        if not sep:
            return None
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else "x")
    else:
        name, sep, port_text = host.rpartition(":")
        if not sep:
            name, port_text = host, ""
        if ":" in name:
            return None  # an IPv6 address without brackets is not a valid Host
    if port_text == "":
        given = 80
    elif port_text.isascii() and port_text.isdigit():
        given = int(port_text)
    else:
        return None
    return name, given


class BodyTimeout(Exception):
    """A request body went ``body_timeout_s`` without a byte."""


class BodyClock:
    """A request body's pieces, each of which must come within ``timeout_s`` of the last;
    ``expired`` says afterwards whether the body was cut off for that."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.expired = False

    async def pieces(self, stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
        """As ``forward.pieces`` (the body as read, ending at its end), timed per read."""
        while True:
            try:
                async with asyncio.timeout(self.timeout_s):
                    chunk, end_of_http_chunk = await stream.readchunk()
            except TimeoutError:
                self.expired = True
                raise BodyTimeout from None
            if chunk:
                yield chunk
            elif not end_of_http_chunk or stream.at_eof():
                return
