"""Time what ``cachediag proxy`` adds to a request, against the same request sent direct.

A fake Anthropic API runs on 127.0.0.1 in a process of its own and answers every
``POST /v1/messages`` with a server-sent event stream (``message_start``, ``--events``
text deltas ``--gap-ms`` apart, ``message_delta``, ``message_stop``). The client (this
process, aiohttp) sends a ~200k-token request (a conversation of long messages under a
system prompt and a tool list: ``--tokens``) either straight to that upstream or through
the installed ``cachediag proxy`` (its own venv, started as users start it, recording to a
scratch folder), with 1 and 16 streams at a time. Rounds alternate which path goes first.
Per request it measures the time to the first byte of the answer and to its last byte;
reported are p50 and p99 of each path and the proxy's overhead (proxy minus direct), plus
what fingerprinting and recording one such request costs (in-process, the recorder's own
code), which the proxy does after the answer is complete, off the client's path.

    python scripts/bench_proxy.py [--rounds 40] [--tokens 200000] [--install venv|none]

``--install none`` runs ``python -m cachediag`` from this checkout instead of a venv.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
    while used < chars:
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


# --- the fake upstream (run as: bench_proxy.py --serve PORTFILE EVENTS GAP_MS) --------


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


def serve_upstream(port_file: str, events: int, gap_ms: float) -> None:
    from aiohttp import web

    counter = iter(range(1 << 62))

    async def messages(request: web.Request) -> web.StreamResponse:
        await request.read()
        n = next(counter)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "request-id": f"req_bench_{n}"}
        )
        await response.prepare(request)
        for i, chunk in enumerate(sse_answer(n, events)):
            if i and gap_ms:
                await asyncio.sleep(gap_ms / 1000)
            await response.write(chunk)
        await response.write_eof()
        return response

    async def main() -> None:
        app = web.Application(client_max_size=1 << 30)
        app.router.add_post("/v1/messages", messages)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        Path(port_file).write_text(str(runner.addresses[0][1]))
        await asyncio.Event().wait()

    asyncio.run(main())


# --- the client -----------------------------------------------------------------------


@dataclass
class Samples:
    ttfb_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)


async def one_request(session: Any, url: str, body: bytes, out: Samples) -> None:
    start = time.perf_counter()
    async with session.post(url, data=body, headers={"x-api-key": "bench"}) as resp:
        first = None
        async for _chunk in resp.content.iter_any():
            if first is None:
                first = time.perf_counter()
        end = time.perf_counter()
    assert resp.status == 200 and first is not None
    out.ttfb_ms.append((first - start) * 1000)
    out.total_ms.append((end - start) * 1000)


PATHS = ("direct", "relay", "proxy")
"""Straight to the upstream; through ``proxy --no-record``; through the proxy recording."""


async def run_rounds(
    urls: dict[str, str], body: bytes, rounds: int, concurrency: int
) -> dict[str, Samples]:
    import aiohttp

    results = {name: Samples() for name in PATHS}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        for name in PATHS:  # warm every path's connections and imports
            await asyncio.gather(
                *(one_request(session, urls[name] + "/v1/messages", body, Samples())
                  for _ in range(concurrency))
            )  # fmt: skip
        for r in range(rounds):
            # Each path goes first, second and last equally often.
            order = PATHS[r % 3 :] + PATHS[: r % 3]
            for name in order:
                await asyncio.gather(
                    *(one_request(session, urls[name] + "/v1/messages", body, results[name])
                      for _ in range(concurrency))
                )  # fmt: skip
    return results


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) of a process and its children so far, from /proc."""
    from bench_analyze import _children_of

    total = 0.0
    for one in (pid, *_children_of(pid)):
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    return total


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def fingerprint_cost(body: bytes, repeats: int) -> tuple[float, float]:
    """Median ms to build one record (parse, fingerprint, serialise) and to append it."""
    sys.path.insert(0, str(REPO))
    from cachediag.ingest.fingerprint import canonical_json
    from cachediag.proxy.logfiles import CaptureLog
    from cachediag.proxy.recording import Exchange, build_record

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
) -> tuple[subprocess.Popen[str], str]:
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
    return proc, ready.split("ANTHROPIC_BASE_URL=")[1].strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--events", type=int, default=20, help="text deltas per answer")
    parser.add_argument("--gap-ms", type=float, default=2.0, help="between events upstream")
    parser.add_argument("--install", choices=("venv", "none"), default="venv")
    parser.add_argument("--serve", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve_upstream(args.serve[0], int(args.serve[1]), float(args.serve[2]))
        return 0
    if args.install == "venv":
        from bench_analyze import install_in_venv

        command, env = install_in_venv(REPO, "[proxy]")
    else:
        command = [sys.executable, "-m", "cachediag"]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
    body = request_body(args.tokens)
    build_ms, write_ms = fingerprint_cost(body, 20)
    with tempfile.TemporaryDirectory(prefix="cachediag-bench-proxy-") as scratch:
        port_file = Path(scratch) / "port"
        procs: list[subprocess.Popen[Any]] = []
        try:
            procs.append(subprocess.Popen(
                [sys.executable, __file__, "--serve", str(port_file), str(args.events),
                 str(args.gap_ms)]
            ))  # fmt: skip
            while not port_file.exists() or not port_file.read_text():
                time.sleep(0.05)
            upstream = f"http://127.0.0.1:{port_file.read_text()}"
            log_dir = Path(scratch) / "captures"
            relay, relay_url = start_proxy(command, env, upstream, log_dir, "--no-record")
            procs.append(relay)
            recording, proxy_url = start_proxy(command, env, upstream, log_dir)
            procs.append(recording)
            urls = {"direct": upstream, "relay": relay_url, "proxy": proxy_url}
            print(
                f"request: {len(body) / 1e6:.2f} MB (~{args.tokens:,} tokens); answer: "
                f"{args.events + 3} SSE events {args.gap_ms:g} ms apart; {args.rounds} rounds, "
                f"paths interleaved; load average {os.getloadavg()[0]:.1f} on "
                f"{os.cpu_count()} cores"
            )
            print(
                f"fingerprint one request (the recorder's worker process, after the answer): "
                f"{build_ms:.1f} ms; append its line: {write_ms:.2f} ms"
            )
            print("relay: proxy --no-record; proxy: recording. added = path minus direct.")
            print(f"{'streams':>7} {'metric':>6} {'path':>6} {'p50 ms':>8} {'p99 ms':>8} "
                  f"{'+p50':>7} {'+p99':>7}")  # fmt: skip
            for concurrency in (1, 16):
                before = {
                    name: cpu_ms(proc.pid)
                    for name, proc in (("relay", relay), ("proxy", recording))
                }
                results = asyncio.run(run_rounds(urls, body, args.rounds, concurrency))
                time.sleep(1.0)  # the recorder finishes the last records
                sent = (args.rounds + 1) * concurrency
                cpu = {
                    name: (cpu_ms(proc.pid) - before[name]) / sent
                    for name, proc in (("relay", relay), ("proxy", recording))
                }
                for metric in ("ttfb_ms", "total_ms"):
                    base = getattr(results["direct"], metric)
                    p50, p99 = percentile(base, 50), percentile(base, 99)
                    for name in PATHS:
                        values = getattr(results[name], metric)
                        q50, q99 = percentile(values, 50), percentile(values, 99)
                        added = "" if name == "direct" else f"{q50 - p50:>7.2f} {q99 - p99:>7.2f}"
                        print(
                            f"{concurrency:>7} {metric[:-3]:>6} {name:>6} "
                            f"{q50:>8.2f} {q99:>8.2f} {added}"
                        )
                print(
                    f"{concurrency:>7} CPU per request: relay {cpu['relay']:.1f} ms, "
                    f"recording proxy {cpu['proxy']:.1f} ms (its worker process included)"
                )
            records = sum(len(p.read_text().splitlines()) for p in log_dir.glob("*.jsonl"))
            print(f"records written by the recording proxy: {records}")
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
