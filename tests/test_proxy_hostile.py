"""The capture proxy attacked from the client's side (loopback only): a fake upstream, a
second listener that must never be reached, and requests no well-behaved client sends.

Each test names what it defends: where a request may go, what a client may hold, and
that every request ends in a true record."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")

import aiohttp
from yarl import URL

from cachediag.proxy.limits import Limits
from tests.proxy_support import (
    FakeUpstream,
    Reply,
    Tripwire,
    json_reply,
    proxy_to,
    raw_exchange,
    records,
)

BODY = json.dumps({"model": "claude-opus-4-5", "messages": [{"role": "user", "content": "hi"}]})


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def port_of(base: str) -> int:
    port = URL(base).port
    assert port is not None
    return port


def status_of(answer: bytes) -> int:
    """The final status of a raw answer (after any 100 Continue)."""
    lines = [line for line in answer.split(b"\r\n") if line.startswith(b"HTTP/1.")]
    finals = [int(line.split()[1]) for line in lines if not line.split()[1].startswith(b"1")]
    assert finals, answer[:200]
    return finals[0]


def hostile_targets(trip: int) -> list[str]:
    return [
        # pasted after "http://127.0.0.1:UP" it names the tripwire (userinfo "127.0.0.1:UP")
        f"@127.0.0.1:{trip}/v1/messages",
        f"http://127.0.0.1:{trip}/v1/messages",
        "munity://x/v1/messages",
        "http://127.0.0.2:9100/x",
        f"//127.0.0.1:{trip}/v1/messages",
        f"127.0.0.1:{trip}",
        "*",
        "/v1/../../x",
        "/v1/%2e%2E/x",
        "/v1\\messages",
    ]


def test_only_origin_form_targets_are_forwarded_and_only_to_the_upstream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeUpstream() as up, Tripwire() as trip:
        targets = hostile_targets(trip.port)

        async def go() -> list[bytes]:
            async with proxy_to(up.url, tmp_path) as base:
                port = port_of(base)
                out = []
                for target in targets:
                    head = f"POST {target} HTTP/1.1\r\nHost: x\r\nx-api-key: sk-ant-KEY\r\n"
                    request = (head + f"Content-Length: {len(BODY)}\r\n\r\n{BODY}").encode()
                    out.append(await asyncio.to_thread(raw_exchange, port, request, timeout=10))
                # ...and an origin-form request still goes through.
                async with aiohttp.ClientSession() as s, s.get(base + "/v1/models?x=1") as r:
                    assert r.status == 200
                return out

        answers = run(go())
    assert trip.hits == 0
    assert [s.path_qs for s in up.seen] == ["/v1/models?x=1"]
    for target, answer in zip(targets, answers, strict=True):
        assert status_of(answer) == 400, target
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("method", ["CONNECT", "TRACE", "PROPFIND"])
def test_methods_no_api_uses_are_501_and_reach_nothing(tmp_path: Path, method: str) -> None:
    with FakeUpstream() as up:

        async def go() -> bytes:
            async with proxy_to(up.url, tmp_path) as base:
                request = f"{method} /v1/messages HTTP/1.1\r\nHost: x\r\n\r\n".encode()
                return await asyncio.to_thread(raw_exchange, port_of(base), request, timeout=10)

        assert status_of(run(go())) == 501
    assert up.seen == []


def test_answers_without_a_body_leave_the_proxy_serving(tmp_path: Path) -> None:
    with FakeUpstream() as up:

        async def go() -> list[int]:
            async with proxy_to(up.url, tmp_path) as base, aiohttp.ClientSession() as s:
                statuses = []
                for _ in range(3):
                    async with asyncio.timeout(20), s.head(base + "/v1/models") as r:
                        statuses.append(r.status)
                async with asyncio.timeout(20), s.get(base + "/v1/models") as r:
                    statuses.append(r.status)
                return statuses

        assert run(go()) == [200] * 4


def test_a_port_bearing_upstream_refuses_an_absolute_target_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeUpstream() as up:

        async def go() -> bytes:
            async with proxy_to(up.url, tmp_path) as base:
                request = b"GET http://127.0.0.2:9100/x HTTP/1.1\r\nHost: 127.0.0.2:9100\r\n\r\n"
                return await asyncio.to_thread(raw_exchange, port_of(base), request, timeout=10)

        answer = run(go())
    assert status_of(answer) == 400 and b"origin-form" in answer
    assert up.seen == []
    assert "Traceback" not in capsys.readouterr().err


def test_expect_100_continue_does_not_wait_for_an_upstream_that_never_sends_100(
    tmp_path: Path,
) -> None:
    # The fake upstream ignores Expect; the proxy answers it and does not forward it.
    with FakeUpstream(lambda seen: json_reply("msg_expect")) as up:

        async def go() -> bytes:
            async with proxy_to(up.url, tmp_path) as base:
                head = (
                    f"POST /v1/messages HTTP/1.1\r\nHost: {URL(base).raw_authority}\r\n"
                    "Expect: 100-continue\r\n"
                    f"Content-Length: {len(BODY)}\r\nConnection: close\r\n\r\n"
                ).encode()
                return await asyncio.to_thread(
                    raw_exchange, port_of(base), head, then=(BODY.encode(),), timeout=15
                )

        answer = run(go())
    assert answer.count(b"HTTP/1.1 100 Continue") == 1
    assert status_of(answer) == 200 and b"msg_expect" in answer
    [seen] = up.seen
    assert seen.body == BODY.encode()
    assert "expect" not in {k.lower() for k, _ in seen.headers}
    [rec] = records(tmp_path)
    assert rec["message_id"] == "msg_expect"


def test_an_unknown_expectation_is_417(tmp_path: Path) -> None:
    with FakeUpstream() as up:

        async def go() -> bytes:
            async with proxy_to(up.url, tmp_path) as base:
                head = (
                    b"POST /v1/x HTTP/1.1\r\nHost: x\r\nExpect: magic\r\nContent-Length: 2\r\n\r\n"
                )
                return await asyncio.to_thread(
                    raw_exchange, port_of(base), head + b"{}", timeout=10
                )

        assert status_of(run(go())) == 417
    assert up.seen == []


def test_a_transfer_coding_other_than_chunked_is_refused_not_dropped(tmp_path: Path) -> None:
    packed = gzip.compress(BODY.encode())
    chunked = f"{len(packed):x}\r\n".encode() + packed + b"\r\n0\r\n\r\n"
    with FakeUpstream() as up:

        async def go() -> bytes:
            async with proxy_to(up.url, tmp_path) as base:
                head = (
                    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n"
                    b"Transfer-Encoding: gzip, chunked\r\n\r\n"
                )
                return await asyncio.to_thread(raw_exchange, port_of(base), head + chunked)

        answer = run(go())
    assert status_of(answer) == 501
    assert up.seen == []


def test_a_compressed_request_body_is_forwarded_as_sent(tmp_path: Path) -> None:
    packed = gzip.compress(BODY.encode())
    with FakeUpstream(lambda seen: json_reply("msg_gzbody")) as up:

        async def go() -> int:
            async with proxy_to(up.url, tmp_path) as base, aiohttp.ClientSession() as s:
                headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
                async with s.post(base + "/v1/messages", data=packed, headers=headers) as r:
                    # Read whole: a client that leaves before the body is cancelled (and
                    # recorded so, without the response's id): that made this test flaky.
                    await r.read()
                    return r.status

        assert run(go()) == 200
    [seen] = up.seen
    assert seen.body == packed  # not inflated on the way (its Content-Length is the packed one)
    [rec] = records(tmp_path)
    assert rec["message_id"] == "msg_gzbody" and len(rec["fingerprint"]["message_hashes"]) == 1


def test_a_body_over_the_limit_is_413_and_never_reaches_the_upstream(tmp_path: Path) -> None:
    limits = Limits(max_body_bytes=4096)
    big = b"x" * 10_000
    with FakeUpstream() as up:

        async def go() -> tuple[bytes, bytes]:
            async with proxy_to(up.url, tmp_path, limits) as base:
                port = port_of(base)
                sized = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n"
                chunked = (
                    f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n"
                ).encode()
                piece = b"3e8\r\n" + big[:1000] + b"\r\n"
                pieces = (*[piece] * 10, b"0\r\n\r\n")
                return (
                    await asyncio.to_thread(raw_exchange, port, sized + big),
                    await asyncio.to_thread(raw_exchange, port, chunked, then=pieces),
                )

        sized, chunked = run(go())
    assert status_of(sized) == 413 and status_of(chunked) == 413
    assert all(len(seen.body) <= 4096 for seen in up.seen)  # the chunked one was cut off
    assert [s.body for s in up.seen if len(s.body) > 4096] == []


def test_a_trickled_request_head_is_cut_off(tmp_path: Path) -> None:
    limits = Limits(header_timeout_s=0.5)
    with FakeUpstream() as up:

        async def go() -> tuple[bytes, bool]:
            async with proxy_to(up.url, tmp_path, limits) as base:
                return await asyncio.to_thread(_trickle, port_of(base))

        answer, closed = run(go())
    assert closed, "a head trickled for 20 s still held its connection"
    assert answer.startswith(b"HTTP/1.1 408")
    assert up.seen == []


def _trickle(port: int) -> tuple[bytes, bool]:
    import socket
    import time

    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                sock.sendall(b"X-Slow: y\r\n")
            except OSError:
                return b"", True
            sock.settimeout(0.2)
            try:
                got = sock.recv(4096)
            except TimeoutError:
                continue
            return got, True  # an answer, then (or with it) the close
        return b"", False


def test_an_idle_kept_alive_connection_is_closed(tmp_path: Path) -> None:
    limits = Limits(idle_timeout_s=0.5)
    with FakeUpstream() as up:

        async def go() -> tuple[bytes, bool]:
            async with proxy_to(up.url, tmp_path, limits) as base:
                # Keep-alive: the connection stays open after the answer, until idle.
                request = f"GET /v1/models HTTP/1.1\r\nHost: localhost:{port_of(base)}\r\n\r\n"
                request = request.encode()
                return await asyncio.to_thread(_until_closed, port_of(base), request)

        answer, closed = run(go())
    assert status_of(answer) == 200 and len(up.seen) == 1
    assert closed, "an idle connection was still open after 20 s"


def _until_closed(port: int, request: bytes) -> tuple[bytes, bool]:
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(request)
        got = b""
        try:
            while chunk := sock.recv(65536):
                got += chunk
        except TimeoutError:
            return got, False
        return got, True


def test_a_client_gone_cancels_its_upstream_request_and_is_recorded_cancelled(
    tmp_path: Path,
) -> None:
    hold = threading.Event()
    reply = json_reply("msg_never")
    reply.hold = hold
    with FakeUpstream(lambda seen: reply) as up:

        async def go() -> None:
            async with proxy_to(up.url, tmp_path) as base, aiohttp.ClientSession() as s:
                with pytest.raises(asyncio.TimeoutError):
                    async with asyncio.timeout(1):
                        await s.post(base + "/v1/messages", data=BODY)
                for _ in range(200):  # the proxy's upstream connection closes: 20 s at most
                    if up.left_early:
                        break
                    await asyncio.sleep(0.1)

        try:
            run(go())
            left = up.left_early
        finally:
            hold.set()
    assert left == 1, "the upstream request outlived its client"
    [rec] = records(tmp_path)
    assert rec["failure"] == "cancelled"


def test_a_client_gone_mid_body_is_recorded_cancelled(tmp_path: Path) -> None:
    with FakeUpstream() as up:

        async def go() -> None:
            async with proxy_to(up.url, tmp_path) as base:
                head = (
                    f"POST /v1/messages HTTP/1.1\r\nHost: {URL(base).raw_authority}\r\n"
                    "Content-Length: 100000\r\n\r\n"
                ).encode()
                await asyncio.to_thread(_send_and_close, port_of(base), head + b'{"model":')
                await asyncio.sleep(0.5)

        run(go())
    [rec] = records(tmp_path)
    assert rec["failure"] == "cancelled"


def _send_and_close(port: int, data: bytes) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)


def test_a_gzip_bomb_does_not_grow_the_recorder_past_its_cap() -> None:
    import tracemalloc

    from cachediag.proxy.exchange import Exchange
    from cachediag.proxy.recording import build_record

    cap = 8 << 20
    bomb = gzip.compress(b'{"messages": [' + b" " * (96 << 20) + b"]}")
    ex = Exchange(sent_at=1.0, request_parts=[bomb], request_encoding="gzip", record_max_bytes=cap)
    ex.status, ex.done_at = 200, 2.0
    ex.chunks = [json.dumps({"id": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()]
    tracemalloc.start()
    try:
        record = build_record(ex)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * cap, f"peak {peak >> 20} MiB for a {len(bomb) >> 10} KiB body"
    assert "limit" in record["fingerprint_error"] and record["input_tokens"] == 1


def test_an_answer_over_the_cap_is_relayed_whole_and_recorded_without_usage(
    tmp_path: Path,
) -> None:
    big = json.dumps({"id": "msg_big", "pad": "p" * 50_000, "usage": {"input_tokens": 1}})
    reply = Reply(headers={"Content-Type": "application/json"}, chunks=[big.encode()])
    with FakeUpstream(lambda seen: reply) as up:

        async def go() -> bytes:
            limits = Limits(record_max_bytes=10_000)
            async with (
                proxy_to(up.url, tmp_path, limits) as base,
                aiohttp.ClientSession() as s,
                s.post(base + "/v1/messages", data=BODY) as r,
            ):
                return await r.read()

        assert run(go()) == big.encode()
    [rec] = records(tmp_path)
    assert rec["failure"] == "over_limit"  # the true reason, not an unreadable answer


def test_a_sized_body_over_the_cap_is_not_kept_at_all() -> None:
    # Streamed on, never held: four 50 MB requests at once cost no 4 x 32 MiB of copies.
    from types import SimpleNamespace

    from cachediag.proxy.request_body import RequestBody as _Body

    def body(length: int) -> _Body:
        request = SimpleNamespace(content_length=length, headers={}, version=(1, 1))
        return _Body(request, Limits(record_max_bytes=1000), keep=True)  # type: ignore[arg-type]

    assert body(1000).kept == [] and not body(1000).over_cap
    assert body(1001).kept is None and body(1001).over_cap
