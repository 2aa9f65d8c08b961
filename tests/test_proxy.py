"""The capture proxy against a fake upstream on 127.0.0.1: what clients get is what the
upstream sent, byte for byte, and each messages request leaves one record."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")

import aiohttp
from yarl import URL

from tests.proxy_support import (
    USAGE,
    FakeUpstream,
    Reply,
    Seen,
    gzip_reply,
    json_reply,
    proxy_to,
    records,
    sse_reply,
)

BODY = {
    "model": "claude-opus-4-5",
    "max_tokens": 100,
    "system": [{"type": "text", "text": "system text"}],
    "tools": [{"name": "Read", "description": "d", "input_schema": {"type": "object"}}],
    "messages": [{"role": "user", "content": "hello"}],
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def post(
    session: aiohttp.ClientSession, url: str, body: bytes, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    async with session.post(url, data=body, headers=headers) as resp:
        return resp.status, dict(resp.headers), await resp.read()


def client() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(auto_decompress=False)


def test_json_answer_relayed_byte_for_byte_and_recorded(tmp_path: Path) -> None:
    reply = json_reply("msg_json", request_id="req_json")
    body = json.dumps(BODY).encode()
    with FakeUpstream(lambda seen: reply) as up:

        async def go() -> tuple[int, dict[str, str], bytes]:
            async with proxy_to(up.url, tmp_path) as base, client() as s:
                return await post(
                    s,
                    base + "/v1/messages?beta=true",
                    body,
                    **{
                        "x-api-key": "sk-key",
                        "anthropic-beta": "b2,b1",
                        "Content-Type": "application/json",
                        "Connection": "keep-alive, X-Hop",
                        "X-Hop": "per-connection",
                        "X-End": "kept",
                    },
                )

        status, headers, got = run(go())
    assert (status, got) == (200, reply.body)
    assert headers["request-id"] == "req_json"
    [seen] = up.seen
    assert (seen.method, seen.path_qs, seen.body) == ("POST", "/v1/messages?beta=true", body)
    names = {k.lower(): v for k, v in seen.headers}
    assert names["x-api-key"] == "sk-key" and names["x-end"] == "kept"
    assert "x-hop" not in names  # named by Connection: hop-by-hop
    assert names["host"] == f"127.0.0.1:{up.port}"
    assert names["content-length"] == str(len(body))  # streamed on, the client's framing
    [rec] = records(tmp_path)
    assert rec["message_id"] == "msg_json" and rec["request_id"] == "req_json"
    assert rec["status"] == 200 and rec["model"] == "claude-opus-4-5"
    assert (rec["input_tokens"], rec["cache_read_tokens"], rec["cache_creation_tokens"]) == (
        3,
        9000,
        1200,
    )
    assert rec["output_tokens"] == 50 and rec["cache_creation_5m"] == 1200
    assert rec["sent_at"] <= rec["first_byte_at"] <= rec["at"]
    fp = rec["fingerprint"]
    assert fp["betas"] == ["b1", "b2"] and fp["tools"][0][0] == "Read"
    assert len(fp["message_hashes"]) == 1


def test_sse_relayed_as_it_arrives(tmp_path: Path) -> None:
    gate = threading.Event()
    reply = sse_reply("msg_sse", request_id="req_sse")
    reply.gate_after_first = gate
    first_at: list[float] = []
    with FakeUpstream(lambda seen: reply) as up:

        async def go() -> bytes:
            async with (
                proxy_to(up.url, tmp_path) as base,
                client() as s,
                s.post(base + "/v1/messages", data=json.dumps(BODY)) as resp,
            ):
                got = b""
                async for chunk in resp.content.iter_any():
                    if not got:
                        first_at.append(time.time())
                        gate.set()  # only now may the upstream send the rest
                    got += chunk
                return got

        got = run(go())
    assert got == reply.body
    assert up.gate_timeouts == 0, "the first event was held back until the stream ended"
    assert first_at[0] < up.sent_last_at[0]
    [rec] = records(tmp_path)
    assert rec["message_id"] == "msg_sse" and rec["output_tokens"] == USAGE["output_tokens"]
    assert rec["cache_read_tokens"] == 9000 and rec["request_id"] == "req_sse"


def test_error_status_and_body_relayed_and_recorded_without_usage(tmp_path: Path) -> None:
    err = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    reply = Reply(status=529, headers={"Content-Type": "application/json"}, chunks=[err])
    with FakeUpstream(lambda seen: reply) as up:

        async def go() -> tuple[int, dict[str, str], bytes]:
            async with proxy_to(up.url, tmp_path) as base, client() as s:
                return await post(s, base + "/v1/messages", json.dumps(BODY).encode())

        status, _, got = run(go())
    assert (status, got) == (529, err)
    [rec] = records(tmp_path)
    assert rec["failure"] == "http_error" and rec["status"] == 529
    assert "input_tokens" not in rec


def test_dropped_upstream_breaks_the_client_response_too(tmp_path: Path) -> None:
    reply = sse_reply("msg_drop")
    reply.drop_after = 2
    with FakeUpstream(lambda seen: reply) as up:

        async def go() -> str:
            async with proxy_to(up.url, tmp_path) as base, client() as s:
                try:
                    await post(s, base + "/v1/messages", json.dumps(BODY).encode())
                except aiohttp.ClientPayloadError:
                    return "broken"
                return "looked whole"

        assert run(go()) == "broken"
    [rec] = records(tmp_path)
    assert rec["failure"] == "upstream_dropped" and "input_tokens" not in rec


def test_unreachable_upstream_is_a_502_in_the_api_error_shape(tmp_path: Path) -> None:
    with FakeUpstream() as up:
        dead = up.url  # the port is free again once it stops

    async def go() -> tuple[int, dict[str, str], bytes]:
        async with proxy_to(dead, tmp_path) as base, client() as s:
            return await post(s, base + "/v1/messages", json.dumps(BODY).encode())

    status, headers, got = run(go())
    assert status == 502 and headers["Content-Type"].startswith("application/json")
    error = json.loads(got)
    assert error["type"] == "error" and error["error"]["type"] == "api_error"
    assert "unreachable" in error["error"]["message"]
    [rec] = records(tmp_path)
    assert rec["failure"] == "upstream_unreachable"


def test_concurrent_streams_each_get_their_own_bytes_and_record(tmp_path: Path) -> None:
    def reply_for(seen: Seen) -> Reply:
        n = json.loads(seen.body)["n"]
        return sse_reply(f"msg_{n}", request_id=f"req_{n}")

    with FakeUpstream(reply_for) as up:

        async def one(s: aiohttp.ClientSession, base: str, n: int) -> bytes:
            body = json.dumps({**BODY, "n": n}).encode()
            return (await post(s, base + "/v1/messages", body))[2]

        async def go() -> list[bytes]:
            async with proxy_to(up.url, tmp_path) as base, client() as s:
                return await asyncio.gather(*(one(s, base, n) for n in range(16)))

        bodies = run(go())
    for n, got in enumerate(bodies):
        assert got == sse_reply(f"msg_{n}").body
    recs = records(tmp_path)
    assert sorted(r["message_id"] for r in recs) == sorted(f"msg_{n}" for n in range(16))
    assert all(r["request_id"] == "req_" + r["message_id"][4:] for r in recs)


def test_large_chunked_and_empty_request_bodies_forwarded_whole(tmp_path: Path) -> None:
    # A 200k-token conversation arrives in many reads; a client may also send it chunked.
    big = json.dumps({**BODY, "messages": [{"role": "user", "content": "x" * 1_500_000}]})
    with FakeUpstream(lambda seen: json_reply("msg_big")) as up:

        async def pieces() -> Any:
            for i in range(0, len(big), 70_000):
                yield big[i : i + 70_000].encode()
                await asyncio.sleep(0)

        async def go() -> None:
            async with proxy_to(up.url, tmp_path) as base, client() as s:
                await post(s, base + "/v1/messages", big.encode())
                async with s.post(base + "/v1/messages", data=pieces()) as resp:
                    assert resp.status == 200 and json.loads(await resp.read())["id"]
                await post(s, base + "/v1/messages/count_tokens", b"")

        run(go())
    sized, chunked, empty = up.seen
    assert sized.body == chunked.body == big.encode() and empty.body == b""
    assert dict(chunked.headers).get("Transfer-Encoding") == "chunked"
    recs = records(tmp_path)
    assert len(recs) == 2 and all(len(r["fingerprint"]["message_hashes"]) == 1 for r in recs)


def test_other_endpoints_pass_through_unrecorded(tmp_path: Path) -> None:
    def reply_for(seen: Seen) -> Reply:
        return Reply(
            headers={"Content-Type": "application/json"},
            chunks=[b'{"ok": "' + seen.path_qs.encode() + b'"}'],
        )

    with FakeUpstream(reply_for) as up:

        async def go() -> list[bytes]:
            async with proxy_to(up.url, tmp_path) as base, client() as s:
                out = [(await post(s, base + "/v1/messages/count_tokens", b'{"messages": []}'))[2]]
                raw = URL(base + "/v1/models?limit=5&after_id=a%2Fb", encoded=True)
                async with s.get(raw) as resp:
                    out.append(await resp.read())
                async with s.delete(base + "/v1/messages/batches/b1") as resp:
                    out.append(await resp.read())
                return out

        got = run(go())
    assert got == [
        b'{"ok": "/v1/messages/count_tokens"}',
        b'{"ok": "/v1/models?limit=5&after_id=a%2Fb"}',
        b'{"ok": "/v1/messages/batches/b1"}',
    ]
    assert [s.method for s in up.seen] == ["POST", "GET", "DELETE"]
    assert records(tmp_path) == []


def test_compressed_answer_relayed_compressed_and_its_usage_read(tmp_path: Path) -> None:
    reply = gzip_reply("msg_gz")
    with FakeUpstream(lambda seen: reply) as up:

        async def go() -> tuple[int, dict[str, str], bytes]:
            async with proxy_to(up.url, tmp_path) as base, client() as s:
                return await post(
                    s, base + "/v1/messages", json.dumps(BODY).encode(),
                    **{"Accept-Encoding": "zstd, gzip;q=0.9, x-unknown"},
                )  # fmt: skip

        _, headers, got = run(go())
    assert got == reply.body and headers["Content-Encoding"] == "gzip"
    asked = {k.lower(): v for k, v in up.seen[0].headers}["accept-encoding"]
    assert asked == "gzip;q=0.9"  # only what the recorder can read back
    [rec] = records(tmp_path)
    assert rec["message_id"] == "msg_gz" and rec["cache_read_tokens"] == 9000


def test_malformed_body_is_forwarded_and_recorded_unfingerprinted(tmp_path: Path) -> None:
    with FakeUpstream(lambda seen: json_reply("msg_bad")) as up:

        async def go() -> bytes:
            async with proxy_to(up.url, tmp_path) as base, client() as s:
                return (await post(s, base + "/v1/messages", b"{not json"))[2]

        run(go())
    assert up.seen[0].body == b"{not json"
    [rec] = records(tmp_path)
    assert rec["message_id"] == "msg_bad" and "fingerprint" not in rec
    assert rec["fingerprint_error"]


def test_stop_finishes_streams_in_flight(tmp_path: Path) -> None:
    gate = threading.Event()
    reply = sse_reply("msg_inflight")
    reply.gate_after_first = gate
    with FakeUpstream(lambda seen: reply) as up:

        async def go() -> bytes:
            from cachediag.proxy.server import ProxyConfig, serve

            stop = asyncio.Event()
            ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            cfg = ProxyConfig("127.0.0.1", 0, up.url, tmp_path)
            task = asyncio.create_task(serve(cfg, stop, lambda h, p: ready.set_result(p)))
            port = await ready
            url = f"http://127.0.0.1:{port}/v1/messages"
            async with client() as s, s.post(url, data=b"{}") as resp:
                got = await resp.content.readany()
                stop.set()  # a stop arrives mid-stream
                await asyncio.sleep(0.2)
                gate.set()
                got += await resp.read()
            await task
            return got

        assert run(go()) == reply.body
    [rec] = records(tmp_path)
    assert rec["message_id"] == "msg_inflight"


def test_records_built_in_a_worker_process(tmp_path: Path) -> None:
    from cachediag.proxy.server import ProxyConfig, serve

    with FakeUpstream(lambda seen: sse_reply("msg_worker", request_id="req_w")) as up:

        async def go() -> None:
            stop = asyncio.Event()
            ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            cfg = ProxyConfig("127.0.0.1", 0, up.url, tmp_path, offload=True)
            task = asyncio.create_task(serve(cfg, stop, lambda h, p: ready.set_result(p)))
            port = await ready
            async with client() as s:
                await post(s, f"http://127.0.0.1:{port}/v1/messages", json.dumps(BODY).encode())
            stop.set()
            recorder = await task
            assert recorder is not None
            assert (recorder.written, recorder.offloaded, recorder.failed) == (1, 1, 0)

        run(go())
    [rec] = records(tmp_path)
    assert rec["message_id"] == "msg_worker" and rec["fingerprint"]["tools"][0][0] == "Read"
