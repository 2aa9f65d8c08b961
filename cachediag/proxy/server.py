"""The proxy process: listen, forward, record, and stop cleanly on SIGINT or SIGTERM.

On a signal it stops accepting connections, lets the requests in flight finish for up to
``Limits.drain_s`` (5 s by default), cancels the rest (their upstream requests with
them), writes every record still queued, and returns; a second signal exits at once.
Each connection has a guard (``HeadGuard``) that closes it when a request head takes
longer than ``Limits.header_timeout_s`` to arrive; aiohttp closes the idle ones.
aiohttp (the ``cachediag[proxy]`` extra) is imported by the relay's modules alone: this
one, ``forward``, ``guard``, ``refusals`` and ``request_body``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from cachediag.errors import CachediagError
from cachediag.proxy import DEFAULT_LISTEN
from cachediag.proxy.forward import UPSTREAM_KEY, Upstream, forward, handle
from cachediag.proxy.guard import QuietServer
from cachediag.proxy.limits import Limits
from cachediag.proxy.logfiles import DEFAULT_KEEP_DAYS, CaptureLog
from cachediag.proxy.recording import Recorder
from cachediag.proxy.target import BadUpstream, Origin, parse_origin, redact_url

CONNECT_TIMEOUT_S = 30.0
CANCEL_GRACE_S = 2.0
"""After the drain, how long cancelled handlers get to unwind before the loop moves on."""
TIMEOUT_ANSWER = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


@dataclass(slots=True, frozen=True)
class ProxyConfig:
    host: str
    port: int
    upstream: URL
    log_dir: Path
    keep_days: int = DEFAULT_KEEP_DAYS
    record: bool = True
    offload: bool = False
    """Fingerprint in a worker process (the command does): it starts by re-importing the
    host's main module, which a library caller's script may not allow (multiprocessing's
    spawn rules), so it is the command's choice, not the default."""
    limits: Limits = field(default_factory=Limits)


def parse_listen(value: str, allow_remote: bool) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6); a non-loopback host needs ``allow_remote``."""
    host, sep, port_text = value.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise CachediagError(f"--listen {value}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    host = host.strip("[]") or "127.0.0.1"
    if not allow_remote and not is_loopback(host):
        raise CachediagError(
            f"--listen {value}: {host} is reachable from other machines; anyone who can "
            "reach it could send requests on the credentials your client attaches and read "
            "the answers. Pass --allow-remote if that is what you want."
        )
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_upstream(value: str) -> URL:
    """``--upstream`` checked (``target.parse_origin``): a plain http(s) origin and path."""
    return URL(str(upstream_origin(value)))


def upstream_origin(value: object) -> Origin:
    try:
        return parse_origin(value)
    except BadUpstream as exc:
        raise CachediagError(str(exc)) from None


def client_session() -> aiohttp.ClientSession:
    # No total or read timeout: an answer may stream for many minutes. Connections are
    # pooled and kept alive; the pool has no cap, since Claude Code runs subagents in
    # parallel and each stream holds a connection for its whole length.
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S),
        auto_decompress=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
    )


async def _expect_later(request: web.Request) -> None:
    """``forward`` answers ``Expect`` itself, once the upstream has the request's head."""


def make_app(
    upstream: URL, session: aiohttp.ClientSession, recorder: Recorder | None,
    limits: Limits | None = None,
) -> web.Application:  # fmt: skip
    """The proxy as an aiohttp application (for library callers and tests; ``serve`` runs
    the same ``forward`` under a bare server, with the header timeout)."""
    app = web.Application()
    app[UPSTREAM_KEY] = Upstream(upstream_origin(upstream), session, recorder, limits or Limits())
    app.router.add_route("*", "/{tail:.*}", handle, expect_handler=_expect_later)
    return app


class HeadGuard(asyncio.Protocol):
    """A connection's aiohttp protocol, wrapped: every call passes through, and a request
    head that takes longer than ``header_timeout_s`` (counted from the connection's start,
    or from the first byte after a finished request) gets a 408 and the connection closed.
    aiohttp has no such timeout, and a trickled head would hold a connection for ever."""

    def __init__(self, inner: Any, up: Upstream) -> None:
        self.inner = inner
        self.up = up
        self.transport: asyncio.Transport | None = None
        self.busy = 0
        self.timer: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(self.up.limits.header_timeout_s, self._expired)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _expired(self) -> None:
        self.timer = None
        if self.busy == 0 and self.transport is not None and not self.transport.is_closing():
            self.transport.write(TIMEOUT_ANSWER)
            self.transport.close()

    def request_started(self) -> None:
        self.busy += 1
        self._disarm()

    def request_done(self) -> None:
        self.busy -= 1  # the next head is timed from its first byte (idle: aiohttp's)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.up.guards[self.inner] = self
        self._arm()
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.busy == 0 and self.timer is None:
            self._arm()
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self.inner.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.up.guards.pop(self.inner, None)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


def ready_line(host: str, port: int, cfg: ProxyConfig) -> str:
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    where = f"writing {cfg.log_dir}" if cfg.record else "recording nothing"
    return (
        f"cachediag proxy: listening on {base}, forwarding to {redact_url(cfg.upstream)}, "
        f"{where}; "
        f"point Claude Code at it with ANTHROPIC_BASE_URL={base}"
    )


async def serve(
    cfg: ProxyConfig,
    stop: asyncio.Event,
    on_ready: Callable[[str, int], None] | None = None,
) -> Recorder | None:
    """Run until ``stop`` is set; returns the recorder (closed) for its counts."""
    origin = upstream_origin(cfg.upstream)
    log = CaptureLog(cfg.log_dir, cfg.keep_days) if cfg.record else None
    recorder = Recorder(log, offload=cfg.offload) if log is not None else None
    session = client_session()
    up = Upstream(origin, session, recorder, cfg.limits)

    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        return await forward(request, up)

    server = QuietServer(  # error answers never quote the request (guard)
        handler,
        handler_cancellation=True,  # a client gone: its upstream request is cancelled
        keepalive_timeout=cfg.limits.idle_timeout_s,
        auto_decompress=False,  # a compressed request body is forwarded as it came
        access_log=None,  # an access log would print paths and, with them, queries
    )
    listener: asyncio.Server | None = None
    _quiet_aiohttp()
    try:
        loop = asyncio.get_running_loop()
        try:
            listener = await loop.create_server(
                lambda: HeadGuard(server(), up), cfg.host, cfg.port, reuse_address=True
            )
        except OSError as exc:
            raise CachediagError(
                f"cannot listen on {cfg.host}:{cfg.port} ({exc.strerror})"
            ) from exc
        host, port = _bound(listener)
        if on_ready is not None:
            on_ready(host, port)
        await stop.wait()
    finally:
        if listener is not None:
            listener.close()  # no new connections
        await _drain(up, cfg.limits.drain_s)
        await server.shutdown(0.1)  # closes the connections left (idle, kept alive)
        await session.close()
        if recorder is not None:
            await asyncio.to_thread(recorder.close)
    return recorder


async def _drain(up: Upstream, drain_s: float) -> None:
    """Requests in flight get ``drain_s`` to finish; the rest are cancelled (which closes
    their upstream connections) and recorded as cancelled."""
    running = set(up.in_flight)
    if running:
        _, late = await asyncio.wait(running, timeout=drain_s)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late, timeout=CANCEL_GRACE_S)


def _bound(listener: asyncio.Server) -> tuple[str, int]:
    for sock in listener.sockets:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            addr = sock.getsockname()
            return str(addr[0]), int(addr[1])
    raise CachediagError("the proxy is not listening")


def _quiet_aiohttp() -> None:
    """aiohttp's own log lines can quote a request; one line with the kind of event only,
    never a traceback (Python's fallback would print one for an error logged)."""
    logger = logging.getLogger("aiohttp")
    if not any(isinstance(h, _OneLine) for h in logger.handlers):
        logger.addHandler(_OneLine())
        logger.propagate = False


class _OneLine(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)

    def emit(self, record: logging.LogRecord) -> None:
        kind = type(record.exc_info[1]).__name__ if record.exc_info else record.levelname
        print(f"cachediag proxy: connection error ({kind})", file=sys.stderr)


def run_proxy(cfg: ProxyConfig, on_ready: Callable[[str, int], None]) -> Recorder | None:
    """The foreground command: serve until SIGINT or SIGTERM; a second one exits now."""

    async def main() -> Recorder | None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            if stop.is_set():
                print("cachediag proxy: stopped at once (second signal)", file=sys.stderr)
                with contextlib.suppress(Exception):
                    sys.stderr.flush()
                os._exit(128 + signum)
            stop.set()
            print(
                f"cachediag proxy: stopping; requests in flight have {cfg.limits.drain_s:g} s "
                "to finish (signal again to stop now)",
                file=sys.stderr,
                flush=True,
            )

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal, int(sig))
        return await serve(cfg, stop, on_ready)

    return asyncio.run(main())
