"""The proxy benchmark's harness measures what it says: its fake API answers every request
with the whole event stream, its client reads each answer to the end direct, through the
byte splice (the floor) and through the proxy, and a recording batch is over only when
its records are written. No timings are asserted."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")

from tests.conftest import ROOT
from tests.proxy_support import proxy_to, records


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_proxy", ROOT / "scripts/bench_proxy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


def test_harness_reads_whole_answers_direct_through_the_floor_and_the_proxy(
    bench: ModuleType, tmp_path: Path
) -> None:
    body = bench.request_body(5_000)
    assert json.loads(body)["messages"]

    async def go() -> dict[str, object]:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: bench.FakeApi(3, 0.0), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        splice = await bench.start_splice(port)
        from yarl import URL

        try:
            async with proxy_to(URL(f"http://127.0.0.1:{port}"), tmp_path) as base:
                targets = [
                    bench.Target("direct", port, []),
                    bench.Target("floor", splice.sockets[0].getsockname()[1], []),
                    bench.Target("proxy", int(base.rsplit(":", 1)[1]), [], log_dir=tmp_path),
                ]
                results = {}
                for target in targets:
                    samples = bench.Samples()
                    for _ in range(3):
                        await bench.batch(target, body, 4, 0, samples)
                    results[target.name] = samples
                    for _, writer in target.conns:
                        writer.close()
                return results
        finally:
            splice.close()
            server.close()

    results = asyncio.run(go())
    for samples in results.values():
        assert isinstance(samples, bench.Samples)
        assert samples.requests == 12 and len(samples.ttfb_ms) == len(samples.total_ms) == 12
        pairs = zip(samples.ttfb_ms, samples.total_ms, strict=True)
        assert all(0 < ttfb <= total for ttfb, total in pairs)
    recs = records(tmp_path)
    assert len(recs) == 12 and all(r["output_tokens"] == 24 for r in recs)
    assert all(r["fingerprint"]["tools"] for r in recs)
