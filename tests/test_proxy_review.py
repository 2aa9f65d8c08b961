"""The security review's findings (issue 24): an API key echoed in aiohttp's 400 body, web
pages (and DNS rebinding) using the proxy, and a request body trickled for ever."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")

from yarl import URL

from cachediag.proxy.limits import Limits
from tests.proxy_support import FakeUpstream, json_reply, proxy_to, raw_exchange, records

BODY = json.dumps({"model": "claude-opus-4-5", "messages": [{"role": "user", "content": "hi"}]})
SECRET = b"SECRETKEY"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def status_of(answer: bytes) -> int:
    assert answer.startswith((b"HTTP/1.1 ", b"HTTP/1.0 ")), answer[:200]
    return int(answer.split()[1])


def exchange(tmp_path: Path, make: Any, limits: Limits | None = None, **kw: Any) -> Any:
    """``make(authority) -> bytes`` sent raw to a proxy before a fake upstream."""
    with FakeUpstream(lambda seen: json_reply("msg_review")) as up:

        async def go() -> bytes:
            async with proxy_to(up.url, tmp_path, limits) as base:
                port = URL(base).port
                assert port is not None
                data = make(f"127.0.0.1:{port}", port)
                return await asyncio.to_thread(raw_exchange, port, data, **kw)

        answer = run(go())
        return answer, up.seen


MALFORMED = [
    b"GET /v1/a HTTP/1.1\r\nHost: x\r\nx-api-key: sk-ant-SECRETKEY\x7f\r\n\r\n",
    b"GET /v1/a HTTP/1.1\r\nHost: x\r\nx-api-key: sk-ant-SECRETKEY\nX: y\r\n\r\n",
    b"GET /v1/a HTTP/1.1\r\nHost: x\r\nx-api-key: sk-ant-SECRETKEY\r\r\n\r\n",
    b"GET /v1/a HTTP/1.1\r\nHost: x\r\nauthorization: Bearer SECRETKEY" + b"x" * 9000 + b"\r\n\r\n",
    b"GET /v1/a HTTP/1.1\nHost: x\nx-api-key: sk-ant-SECRETKEY\x7f\n\n",
]


@pytest.mark.parametrize("data", MALFORMED, ids=["del", "bare-lf", "cr-cr-lf", "long", "all-lf"])
def test_a_malformed_head_is_answered_without_quoting_it(
    tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    answer, seen = exchange(tmp_path, lambda authority, port: data, timeout=10)
    assert status_of(answer) in (400, 431)
    assert SECRET not in answer, answer
    assert b"cachediag proxy: malformed request" in answer
    assert b"connection: close" in answer.lower()
    err = capsys.readouterr().err
    assert "SECRETKEY" not in err and "Traceback" not in err
    assert seen == []


def _post(authority: str, *extra: str) -> bytes:
    lines = [
        "POST /v1/messages HTTP/1.1",
        f"Host: {authority}",
        "x-api-key: sk-ant-KEY",
        "Content-Type: text/plain",
        f"Content-Length: {len(BODY)}",
        "Connection: close",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n" + BODY).encode()


BROWSER = [
    ("Origin: https://evil.example",),
    ("Origin: null",),
    ("Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors"),
    ("Sec-Fetch-Mode: navigate",),
]


@pytest.mark.parametrize("extra", BROWSER, ids=["origin", "origin-null", "site", "navigate"])
def test_a_browsers_request_is_refused_and_reaches_nothing(
    tmp_path: Path, extra: tuple[str, ...]
) -> None:
    answer, seen = exchange(tmp_path, lambda authority, port: _post(authority, *extra))
    assert status_of(answer) == 403 and b"permission_error" in answer
    assert seen == [] and records(tmp_path) == []


@pytest.mark.parametrize(
    "host",
    ["rebind.evil.example:{port}", "rebind.evil.example", "127.0.0.1:1", "localhost.:{port}", ""],
)
def test_a_host_that_is_not_the_proxys_address_is_refused(tmp_path: Path, host: str) -> None:
    # DNS rebinding: a page whose name now resolves to 127.0.0.1 sends its own name.
    answer, seen = exchange(
        tmp_path, lambda authority, port: _post(host.replace("{port}", str(port)))
    )
    assert status_of(answer) == 403
    assert seen == [] and records(tmp_path) == []


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
def test_api_clients_are_still_served(tmp_path: Path, host: str) -> None:
    # Node's fetch (undici) sends Sec-Fetch-Mode: cors on every request, no Origin.
    answer, seen = exchange(
        tmp_path,
        lambda authority, port: _post(host.replace("{port}", str(port)), "Sec-Fetch-Mode: cors"),
    )
    assert status_of(answer) == 200 and b"msg_review" in answer
    assert len(seen) == 1
    [rec] = records(tmp_path)
    assert rec["message_id"] == "msg_review"


def test_a_trickled_body_is_cut_off_with_408_and_recorded_cancelled(tmp_path: Path) -> None:
    limits = Limits(body_timeout_s=0.5)

    def make(authority: str, port: int) -> bytes:
        head = (
            _post(authority)
            .split(b"\r\n\r\n")[0]
            .replace(f"Content-Length: {len(BODY)}".encode(), b"Content-Length: 100000")
        )
        return head + b"\r\n\r\n" + BODY[:10].encode()  # then nothing more, connection open

    answer, _ = exchange(tmp_path, make, limits, timeout=20)
    assert status_of(answer) == 408, answer[:200]
    assert b"request body timed out" in answer
    [rec] = records(tmp_path)
    assert rec["failure"] == "cancelled"
