"""The proxy process: listen, forward, record, and stop cleanly on SIGINT or SIGTERM.

On a signal it stops accepting connections, lets the requests in flight finish (a long
stream included, up to ``DRAIN_S``), writes every record still queued, and returns.
aiohttp is imported here and in ``forward`` only (the ``cachediag[proxy]`` extra).
"""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import web
from yarl import URL

from cachediag.errors import CachediagError
from cachediag.proxy import DEFAULT_LISTEN
from cachediag.proxy.forward import UPSTREAM_KEY, Upstream, handle
from cachediag.proxy.logfiles import DEFAULT_KEEP_DAYS, CaptureLog
from cachediag.proxy.recording import Recorder

DRAIN_S = 600.0
"""How long a stop waits for streams in flight: long answers run for minutes."""
CONNECT_TIMEOUT_S = 30.0


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
    url = URL(value)
    if url.scheme not in ("http", "https") or not url.host:
        raise CachediagError(f"--upstream {value}: expected an http(s) URL")
    return url


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


def make_app(
    upstream: URL, session: aiohttp.ClientSession, recorder: Recorder | None
) -> web.Application:
    app = web.Application()
    app[UPSTREAM_KEY] = Upstream(upstream, session, recorder)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def bound_address(runner: web.AppRunner) -> tuple[str, int]:
    for site in runner.sites:
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        for sock in sockets:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                addr = sock.getsockname()
                return str(addr[0]), int(addr[1])
    raise CachediagError("the proxy is not listening")


def ready_line(host: str, port: int, cfg: ProxyConfig) -> str:
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    where = f"writing {cfg.log_dir}" if cfg.record else "recording nothing"
    return (
        f"cachediag proxy: listening on {base}, forwarding to {cfg.upstream}, {where}; "
        f"point Claude Code at it with ANTHROPIC_BASE_URL={base}"
    )


async def serve(
    cfg: ProxyConfig,
    stop: asyncio.Event,
    on_ready: Callable[[str, int], None] | None = None,
) -> Recorder | None:
    """Run until ``stop`` is set; returns the recorder (closed) for its counts."""
    log = CaptureLog(cfg.log_dir, cfg.keep_days) if cfg.record else None
    recorder = Recorder(log, offload=cfg.offload) if log is not None else None
    session = client_session()
    runner = web.AppRunner(
        make_app(cfg.upstream, session, recorder),
        access_log=None,  # an access log would print paths and, with them, queries
        shutdown_timeout=DRAIN_S,
        handle_signals=False,
    )
    try:
        await runner.setup()
        site = web.TCPSite(runner, cfg.host, cfg.port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:
            raise CachediagError(
                f"cannot listen on {cfg.host}:{cfg.port} ({exc.strerror})"
            ) from exc
        host, port = bound_address(runner)
        if on_ready is not None:
            on_ready(host, port)
        await stop.wait()
    finally:
        await runner.cleanup()  # stops listening, then waits for the handlers in flight
        await session.close()
        if recorder is not None:
            await asyncio.to_thread(recorder.close)
    return recorder


def run_proxy(cfg: ProxyConfig, on_ready: Callable[[str, int], None]) -> Recorder | None:
    """The foreground command: serve until SIGINT or SIGTERM."""

    async def main() -> Recorder | None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await serve(cfg, stop, on_ready)

    return asyncio.run(main())
