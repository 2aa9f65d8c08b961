"""Time what ``cachediag proxy`` adds to a request, against the same request sent direct.

Two processes besides the proxies: a fake Anthropic API on
127.0.0.1 (its own process) that answers every ``POST /v1/messages`` with a server-sent
event stream (``message_start``, ``--events`` text deltas ``--gap-ms`` apart,
``message_delta``, ``message_stop``), and the load client (this process). Both speak
HTTP/1.1 on plain asyncio sockets rather than aiohttp: on a 2-core machine every
millisecond of CPU the harness spends is a millisecond the proxy waits for, so the harness
is made as cheap as it can be, and its own CPU per request is printed beside the proxy's.

The client sends a ~200k-token request (a conversation of long messages under a system
prompt and a tool list: ``--tokens``) on kept-alive connections either straight to the
upstream or through the installed ``cachediag proxy`` (its own venv, started as users
start it): once with ``--no-record`` (the relay alone) and once recording to a scratch
folder. A fourth path, the floor, is a byte splice on plain asyncio sockets (this script
in another process): no HTTP, no copies, what arrives is written on; what it adds is what
any Python relay on asyncio adds on this machine, so the proxy's figures can be read
against it. Batches of 1, 4 and 16 concurrent streams (Claude Code runs the main
conversation and a few subagents at once); the paths take turns within each
round, in every order in turn. After a batch through the recording proxy the client waits
until every record of it is written, so fingerprinting never spills into the next path's
batch. Per request: time to the first SSE event and to the end of the
answer; reported are p50 and p99 of each path, what the proxy adds (path minus direct),
the CPU time each process spent per request (from /proc), the load average around each
phase, and, separately, what fingerprinting and appending one such record costs.

    python scripts/bench_proxy.py [--samples 320] [--tokens 200000] [--install venv|none]
        [--paths floor relay proxy] [--proxy-args='--keep-days 1']

``--install none`` runs ``python -m cachediag`` from this checkout instead of a venv.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))


def request_body(tokens: int) -> bytes:
    """A Messages request of about ``tokens`` tokens (~4 characters a token)."""
    chars = tokens * 4
    tools = [
        {
            "name": f"mcp__server__tool_{i}",
            "description": "Does one thing well. " * 40,
            "input_schema": {"type": "object", "properties": {"arg": {"type": "string"}}},
        }
        for i in range(40)
    ]
    system = [
        {"type": "text", "text": "You are Claude Code. " * 50},
        {"type": "text", "text": "Project instructions. " * 800,
         "cache_control": {"type": "ephemeral"}},
    ]  # fmt: skip
    used = len(json.dumps(tools)) + len(json.dumps(system))
    messages: list[dict[str, Any]] = []
    n = 0
    while used < chars or not messages:
        text = f"turn {n}: " + "some code and its output, line after line. " * 90
        role = "user" if n % 2 == 0 else "assistant"
        messages.append({"role": role, "content": [{"type": "text", "text": text}]})
        used += len(text) + 40
        n += 1
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    body = {
        "model": "claude-opus-4-5",
        "max_tokens": 32000,
        "stream": True,
        "system": system,
        "tools": tools,
        "messages": messages,
    }
    return json.dumps(body).encode()


def sse_answer(n: int, events: int) -> list[bytes]:
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 1000,
        "cache_read_input_tokens": 199000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 1,
    }
    start = {"type": "message_start", "message": {
        "id": f"msg_bench_{n}", "type": "message", "role": "assistant",
        "model": "claude-opus-4-5", "content": [], "usage": usage}}  # fmt: skip
    delta = {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": "word " * 8}}  # fmt: skip
    final = {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
             "usage": {"output_tokens": 8 * events}}  # fmt: skip

    def event(data: dict[str, Any]) -> bytes:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

    return [
        event(start),
        *(event(delta) for _ in range(events)),
        event(final),
        event({"type": "message_stop"}),
    ]


LAST_EVENT = b"event: message_stop\n"
MIN_ROUNDS = 40
"""A round's requests share one burst, so rounds, not requests, are the independent
samples: at least this many of them whatever ``--samples`` says."""


# --- the fake upstream (run as: bench_proxy.py --serve PORTFILE EVENTS GAP_MS) --------


class FakeApi(asyncio.Protocol):
    """One kept-alive connection: read a request head and its Content-Length body (counted,
    never kept), answer with a chunked event stream, repeat."""

    counter = 0

    def __init__(self, events: int, gap_s: float) -> None:
        self.events, self.gap_s = events, gap_s
        self.head = b""
        self.remaining: int | None = None
        self.transport: asyncio.Transport | None = None
        self.answering: set[asyncio.Task[None]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.remaining is None:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self.head[:end].lower(), self.head[end + 4 :]
            self.head = b""
            length = [ln for ln in head.split(b"\r\n") if ln.startswith(b"content-length:")]
            if not length:  # the proxy keeps the client's framing: a length is always there
                assert self.transport is not None
                self.transport.write(b"HTTP/1.1 411 Length Required\r\ncontent-length: 0\r\n\r\n")
                return
            self.remaining = int(length[0].split(b":", 1)[1])
        self.remaining -= len(data)
        if self.remaining <= 0:
            self.remaining = None
            FakeApi.counter += 1
            task = asyncio.ensure_future(self.answer(FakeApi.counter))
            self.answering.add(task)  # held until done: the loop keeps weak references
            task.add_done_callback(self.answering.discard)

    async def answer(self, n: int) -> None:
        transport = self.transport
        assert transport is not None
        transport.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            b"request-id: req_bench_%d\r\ntransfer-encoding: chunked\r\n\r\n" % n
        )
        for i, event in enumerate(sse_answer(n, self.events)):
            if i and self.gap_s:
                await asyncio.sleep(self.gap_s)
            transport.write(b"%x\r\n%s\r\n" % (len(event), event))
        transport.write(b"0\r\n\r\n")


def serve_upstream(port_file: str, events: int, gap_ms: float) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: FakeApi(events, gap_ms / 1000), "127.0.0.1", 0)
        Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
        await asyncio.Event().wait()

    asyncio.run(main())


# --- the floor (run as: bench_proxy.py --splice PORTFILE UPSTREAM_PORT) ---------------


class Splice(asyncio.Protocol):
    """One side of a byte splice: what arrives is written to the other side as it is.

    The least any relay in Python on asyncio does for these requests: no HTTP parsing, no
    header rewriting, no copy, one upstream connection per client connection, flow control
    both ways. What it adds over direct is the floor of this machine and this runtime."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: Splice | None = None
        self.early: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is not None and peer.transport is not None:
            peer.transport.write(data)
        else:  # the upstream side is still connecting
            self.early.append(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()

    # The peer's send buffer is full: stop reading here until it drains.
    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()


async def start_splice(upstream_port: int) -> asyncio.Server:
    """A splice server on 127.0.0.1 (any free port) in front of ``upstream_port``."""
    loop = asyncio.get_running_loop()
    connecting: set[asyncio.Task[None]] = set()

    def accepted() -> Splice:
        client = Splice()

        async def connect() -> None:
            _, upstream = await loop.create_connection(Splice, "127.0.0.1", upstream_port)
            upstream.peer, client.peer = client, upstream
            assert upstream.transport is not None
            for data in client.early:
                upstream.transport.write(data)
            client.early.clear()

        task = asyncio.ensure_future(connect())
        connecting.add(task)  # held until done: the loop keeps weak references
        task.add_done_callback(connecting.discard)
        return client

    return await loop.create_server(accepted, "127.0.0.1", 0)


def serve_splice(port_file: str, upstream_port: int) -> None:
    async def main() -> None:
        server = await start_splice(upstream_port)
        Path(port_file).write_text(str(server.sockets[0].getsockname()[1]))
        await asyncio.Event().wait()

    asyncio.run(main())


# --- the client -----------------------------------------------------------------------


@dataclass
class Samples:
    ttfb_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)
    cpu_ms: float = 0.0
    """CPU of the path's own process(es) (the proxy; the upstream for direct)."""
    children_ms: float = 0.0
    """CPU of their child processes (the recording proxy's recorder process)."""
    harness_ms: float = 0.0
    """CPU of the client and the upstream."""
    requests: int = 0


@dataclass
class Target:
    name: str
    port: int
    pids: list[int]
    """Whose CPU counts as the path's (the proxy, or the upstream for direct)."""
    log_dir: Path | None = None
    """A recording proxy's folder: the client waits for its records after each batch."""
    conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = field(default_factory=list)
    sent: int = 0


async def one_request(
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], head: bytes, body: bytes
) -> tuple[float, float]:
    reader, writer = conn
    start = time.perf_counter()
    writer.write(head)
    writer.write(body)
    status = await reader.readuntil(b"\r\n\r\n")
    if not status.startswith(b"HTTP/1.1 200") or b"chunked" not in status.lower():
        raise SystemExit(f"unexpected answer: {status[:200]!r}")
    first = None
    last = b""
    while True:
        size = int((await reader.readuntil(b"\r\n"))[:-2], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            break
        last = (await reader.readexactly(size + 2))[:-2]
        if first is None:
            first = time.perf_counter()
    end = time.perf_counter()
    if first is None or LAST_EVENT not in last:
        raise SystemExit("an answer ended before its message_stop event")
    return (first - start) * 1000, (end - start) * 1000


def cpu_ms(pids: list[int], children: bool = True) -> float:
    """CPU time (user + system) of processes (and their children) so far, from /proc."""
    from bench_analyze import _children_of

    total = 0.0
    for pid in pids:
        for one in (pid, *(_children_of(pid) if children else ())):
            try:
                fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    return total


def own_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1000


def records_in(log_dir: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in log_dir.glob("*.jsonl"))


async def wait_for_records(target: Target, timeout_s: float = 60.0) -> None:
    assert target.log_dir is not None
    deadline = time.monotonic() + timeout_s
    while records_in(target.log_dir) < target.sent:
        if time.monotonic() > deadline:
            raise SystemExit(f"{target.name}: records missing after {timeout_s:.0f} s")
        await asyncio.sleep(0.02)


async def batch(
    target: Target, body: bytes, concurrency: int, upstream_pid: int, out: Samples | None
) -> None:
    head = (
        f"POST /v1/messages?beta=true HTTP/1.1\r\nhost: 127.0.0.1:{target.port}\r\n"
        "content-type: application/json\r\nanthropic-version: 2023-06-01\r\n"
        f"x-api-key: bench\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    while len(target.conns) < concurrency:
        target.conns.append(await asyncio.open_connection("127.0.0.1", target.port))
    own0, path0 = cpu_ms(target.pids, children=False), cpu_ms(target.pids)
    upstream0 = cpu_ms([upstream_pid], children=False)
    client0 = own_cpu_ms()
    times = await asyncio.gather(
        *(one_request(conn, head, body) for conn in target.conns[:concurrency])
    )
    client = own_cpu_ms() - client0
    target.sent += concurrency
    if target.log_dir is not None:
        await wait_for_records(target)
    if out is not None:
        own = cpu_ms(target.pids, children=False) - own0
        out.cpu_ms += own
        out.children_ms += cpu_ms(target.pids) - path0 - own
        out.harness_ms += client + cpu_ms([upstream_pid], children=False) - upstream0
        out.requests += concurrency
        for ttfb, total in times:
            out.ttfb_ms.append(ttfb)
            out.total_ms.append(total)


async def run_rounds(
    targets: list[Target], body: bytes, rounds: int, concurrency: int, upstream_pid: int
) -> dict[str, Samples]:
    results = {t.name: Samples() for t in targets}
    for target in targets:  # open and warm every path's connections
        await batch(target, body, concurrency, upstream_pid, None)
    orders = list(itertools.permutations(targets))
    for r in range(rounds):
        # Every order in turn: each path goes first, second and last equally often, and
        # comes right after each other path equally often (a rotation alone would always
        # put the same path after the direct one, and after the wait for records).
        for target in orders[r % len(orders)]:
            await batch(target, body, concurrency, upstream_pid, results[target.name])
    for target in targets:
        for _, writer in target.conns:
            writer.close()
        target.conns.clear()
    return results


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def fingerprint_cost(body: bytes, repeats: int) -> tuple[float, float]:
    """Median ms to build one record (parse, fingerprint, serialise) and to append it."""
    sys.path.insert(0, str(REPO))
    from cachediag.ingest.fingerprint import canonical_json
    from cachediag.proxy.exchange import Exchange
    from cachediag.proxy.logfiles import CaptureLog
    from cachediag.proxy.recording import build_record

    chunks = sse_answer(0, 20)
    build, write = [], []
    with tempfile.TemporaryDirectory() as scratch:
        log = CaptureLog(Path(scratch))
        for _ in range(repeats):
            ex = Exchange(sent_at=time.time(), request_body=body, betas="a,b")
            ex.status, ex.done_at, ex.chunks = 200, time.time(), chunks
            t0 = time.perf_counter()
            line = canonical_json(build_record(ex))
            t1 = time.perf_counter()
            log.append(line)
            t2 = time.perf_counter()
            build.append((t1 - t0) * 1000)
            write.append((t2 - t1) * 1000)
        log.close()
    return statistics.median(build), statistics.median(write)


def start_proxy(
    argv: list[str], env: dict[str, str], upstream: str, log_dir: Path, *extra: str
) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [*argv, "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream,
         "--log-dir", str(log_dir), *extra],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert proc.stderr is not None
    ready = proc.stderr.readline()
    if "ANTHROPIC_BASE_URL=" not in ready:
        proc.kill()
        raise SystemExit(f"the proxy did not start: {ready}{proc.stderr.read()}")
    return proc, int(ready.rsplit(":", 1)[1])


def report(concurrency: int, results: dict[str, Samples], load: tuple[float, float]) -> None:
    print(
        f"{concurrency} stream(s) at once; load average {load[0]:.1f} before, {load[1]:.1f} after"
    )
    print(f"  {'metric':>11} {'path':>6} {'p50 ms':>8} {'p99 ms':>8} {'+p50':>7} {'+p99':>7}")
    for metric, label in (("ttfb_ms", "first event"), ("total_ms", "last byte")):
        base = getattr(results["direct"], metric)
        p50, p99 = percentile(base, 50), percentile(base, 99)
        for name, samples in results.items():
            values = getattr(samples, metric)
            q50, q99 = percentile(values, 50), percentile(values, 99)
            added = "" if name == "direct" else f" {q50 - p50:>+7.2f} {q99 - p99:>+7.2f}"
            print(f"  {label:>11} {name:>6} {q50:>8.2f} {q99:>8.2f}{added}")
    cpu = ", ".join(
        f"{name} {s.cpu_ms / s.requests:.2f} ms"
        + (
            f" (+ {s.children_ms / s.requests:.2f} in its recorder process)"
            if name == "proxy"
            else ""
        )
        for name, s in results.items()
        if name != "direct"
    )
    harness = sum(s.harness_ms for s in results.values()) / sum(
        s.requests for s in results.values()
    )
    print(f"  CPU per request: {cpu}; the harness (client + fake upstream) {harness:.2f} ms")


PATHS = ("direct", "floor", "relay", "proxy")
PATH_HELP = (
    "floor: a byte splice on plain asyncio sockets (the least a Python relay does); "
    "relay: cachediag proxy --no-record; proxy: cachediag proxy, recording"
)


def start_helper(mode: str, scratch: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    """This script in a process of its own (the fake API, the splice); its port."""
    port_file = scratch / f"{mode}.port"
    proc = subprocess.Popen([sys.executable, __file__, f"--{mode}", str(port_file), *args])
    while not port_file.exists() or not port_file.read_text():
        if proc.poll() is not None:
            raise SystemExit(f"the {mode} process exited {proc.returncode}")
        time.sleep(0.05)
    return proc, int(port_file.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--samples", type=int, default=320,
        help="requests timed per path and concurrency (rounds = samples / streams)",
    )  # fmt: skip
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--events", type=int, default=20, help="text deltas per answer")
    parser.add_argument("--gap-ms", type=float, default=2.0, help="between events upstream")
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument(
        "--paths", nargs="+", choices=PATHS[1:], default=list(PATHS[1:]),
        help=f"what is timed against direct ({PATH_HELP})",
    )  # fmt: skip
    parser.add_argument(
        "--proxy-args", default="", metavar="ARGS",
        help="more options for both cachediag proxy runs, e.g. --proxy-args='--keep-days 1'",
    )  # fmt: skip
    parser.add_argument("--install", choices=("venv", "none"), default="venv")
    parser.add_argument("--serve", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--splice", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve_upstream(args.serve[0], int(args.serve[1]), float(args.serve[2]))
        return 0
    if args.splice:
        serve_splice(args.splice[0], int(args.splice[1]))
        return 0
    if args.install == "venv":
        from bench_analyze import install_in_venv

        command, env = install_in_venv(REPO, "[proxy]")
    else:
        command = [sys.executable, "-m", "cachediag"]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
    body = request_body(args.tokens)
    build_ms, write_ms = fingerprint_cost(body, 20)
    extra = args.proxy_args.split()
    with tempfile.TemporaryDirectory(prefix="cachediag-bench-proxy-") as name:
        scratch = Path(name)
        log_dir = scratch / "captures"
        procs: list[subprocess.Popen[Any]] = []
        try:
            upstream, up_port = start_helper("serve", scratch, str(args.events), str(args.gap_ms))
            procs.append(upstream)
            url = f"http://127.0.0.1:{up_port}"
            paths = [Target("direct", up_port, [upstream.pid])]
            for path in PATHS[1:]:
                if path not in args.paths:
                    continue
                if path == "floor":
                    proc, port = start_helper("splice", scratch, str(up_port))
                elif path == "relay":
                    proc, port = start_proxy(command, env, url, log_dir, "--no-record", *extra)
                else:
                    proc, port = start_proxy(command, env, url, log_dir, *extra)
                procs.append(proc)
                records = log_dir if path == "proxy" else None
                paths.append(Target(path, port, [proc.pid], log_dir=records))
            print(
                f"request: {len(body) / 1e6:.2f} MB (~{args.tokens:,} tokens); answer: "
                f"{args.events + 3} SSE events {args.gap_ms:g} ms apart; paths interleaved; "
                f"{os.cpu_count()} cores"
            )
            print(
                f"fingerprint one request (the recorder's worker process, after the answer): "
                f"{build_ms:.1f} ms; append its line: {write_ms:.2f} ms"
            )
            print(f"{PATH_HELP}{'; proxies run with ' + args.proxy_args if extra else ''}.")
            print("added = path minus direct.")
            orders = len(list(itertools.permutations(paths)))
            for concurrency in args.streams:
                targets = [Target(t.name, t.port, t.pids, t.log_dir) for t in paths]
                for target in targets:
                    if target.log_dir is not None:
                        target.sent = records_in(target.log_dir)
                rounds = max(MIN_ROUNDS, args.samples // concurrency)
                rounds = -(-rounds // orders) * orders  # whole cycles of the orders
                load_before = os.getloadavg()[0]
                results = asyncio.run(run_rounds(targets, body, rounds, concurrency, upstream.pid))
                report(concurrency, results, (load_before, os.getloadavg()[0]))
            if "proxy" in args.paths:
                print(f"records written by the recording proxy: {records_in(log_dir)}")
        finally:
            for proc in reversed(procs):
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(timeout=60)
                    except subprocess.TimeoutExpired:
                        proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
