"""Fuzz: generated request lines and header sets, sent as raw bytes, never make the proxy
connect anywhere but its upstream.

Loopback only. A raw upstream records each request as it came off the wire (an HTTP
library would normalise the request line); canary listeners (another port on 127.0.0.1,
and 127.0.0.2) must never see a connection; a guard records every connect and name
lookup the proxy makes, refuses anything that would leave the machine, and resolves
every name but the upstream's to a canary, so a request sent to a foreign host arrives
there, credentials and all. For every generated request: nothing but the upstream is
reached; what the upstream gets is under its base path, with its own Host; the proxy
never answers 500, logs a traceback or shows the API key; and it still serves a plain
request afterwards. In process (three upstream shapes) and as the installed command.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from yarl import URL

from cachediag.proxy.server import ProxyConfig, serve
from tests.proxy_fuzz_support import (
    Attempt,
    Canary,
    Guard,
    Outcome,
    RawUpstream,
    guard_env,
    install_guard,
    read_guard_log,
    send_raw,
    uninstall_guard,
)

SECRET = "sk-ant-FUZZ-SECRET-0000"
UPSTREAM_NAME = "upstream.test"  # resolved by the guard to the raw upstream (port 80 there)
ANSWER_WAIT_S = 2.0

# -- what is generated -------------------------------------------------------------------
# Placeholders, filled per proxy: {c1} a canary on 127.0.0.1 (another port than the
# upstream's), {c2} one on 127.0.0.2, {c1p}/{c2p} their ports, {up} the upstream's
# authority as configured, {uph} its host, {self} the proxy's own address.

SCHEMES = [
    "", "http://", "https://", "HTTP://", "hTtP://", "munity://", "ws://", "file://",
    "//", "///", "\\\\", "/\\", "\\/", "http:", "http:/", "http:\\\\", "http%3a//",
    "%2f%2f", "/%2f", "%5c%5c", "javascript:", ".", "0", ":", "@", "?", "#",
]  # fmt: skip
AUTHORITIES = [
    "{c2}", "{c1}", "127.0.0.2", "localhost:{c1p}", "[::1]:{c1p}", "[::ffff:127.0.0.2]:{c2p}",
    "{up}@{c2}", "user:pass@{c2}", "@{c2}", "{c2}@{up}", "{c2}#@{up}", "{c2}?@{up}",
    "{c2}\\@{up}", "{uph}:{c1p}", "{uph}.{c2}", "{uph}@{c2}", "{self}",
    "127\u30020\u30020\u30022:{c2p}", "127\uff0e0\uff0e0\uff0e2:{c2p}",
    "127\uff610\uff610\uff612:{c2p}", "{uph}\u3002{c2}", "0x7f.0.0.2:{c2p}",
    "2130706434:{c2p}", "127.2:{c2p}", "0177.0.0.2:{c2p}", "%31%32%37.0.0.2:{c2p}",
    "127.0.0.2%2f:{c2p}", "xn--mnchen-3ya.test", "m\u00fcnchen.test", "\u24bc.test",
    "x", "munity", "", ":{c1p}", ":{c2p}", "{c2}:80", "[127.0.0.2]:{c2p}", "{c2}%00",
]  # fmt: skip
PATHS = [
    "", "/", "/x", "/v1/messages", "/v1/messages?beta=true", "/../x", "/%2e%2e/x",
    "/.%2e/x", "/%2e%2e%2fx", "%2f..%2fx", "/x/../../y", "\\..\\x", "?x=@{c2}",
    "#@{c2}", "/x?u=http://{c2}/", ";@{c2}", "/%00", "/x%0d%0aHost:%20{c2}", "/%2f{c2}/x",
]  # fmt: skip
TOKENS = [
    "/", "//", "\\", "@", ":", ".", "..", "%2f", "%2F", "%2e", "%5c", "%40", "?", "#",
    "\u3002", "\uff0e", "\uff61", "xn--", "http", "://", "{c2}", "{c1}", "{c2p}", "{up}",
    "{uph}", "x", "v1", "messages", " ", "\t", "\r", "\n", "\r\n", "\x00", "\x7f", "\u00ff",
]  # fmt: skip
SPECIAL_TARGETS = [
    "*", "munity://x/v1/messages", "{c2}", "{c2p}", "http://{c2}/x", "https://{c2}/x",
    "//{c2}/x", "/" + "a" * 8000, "/" + "a" * 9000, "http://{c2}/" + "a" * 9000, "/" + "%2f" * 3000,
    "http://{up}/x", "http://{up}@{c2}/x",
]  # fmt: skip
METHODS = [
    "GET", "POST", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE",
    "get", "PRI", "M-SEARCH", "PROPFIND", "G\x00T",
]  # fmt: skip
FORWARDED_METHODS = ["GET", "POST", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT"]
VERSIONS = ["HTTP/1.1"] * 4 + ["HTTP/1.0", "HTTP/0.9", "HTTP/2.0", "http/1.1", "HTTP/1.10", ""]
HOSTS = [
    "{up}", "{up}", "{c2}", "{c1}", "127.0.0.2", "{up}@{c2}", "", "{self}", "munity",
    "{c2}, {up}", "{uph}", "{uph}:{c1p}", "127\u30020\u30020\u30022:{c2p}",
]  # fmt: skip
# Headers that try to move a request: a proxy that trusts any of them sends it elsewhere.
ROUTING_HEADERS = [
    ("Host", "{c2}"), ("Host", "{up}"), ("host", "{c1}"), ("X-Forwarded-Host", "{c2}"),
    ("X-Forwarded-Proto", "https"), ("X-Forwarded-Port", "{c2p}"),
    ("X-Forwarded-For", "127.0.0.2"), ("Forwarded", "for=1;host={c2};proto=http"),
    ("X-Original-URL", "http://{c2}/x"), ("X-Rewrite-URL", "//{c2}/x"),
    ("X-HTTP-Method-Override", "CONNECT"), ("X-Host", "{c2}"), (":authority", "{c2}"),
    ("Upgrade", "websocket"), ("Upgrade", "h2c"), ("Connection", "Upgrade"),
    ("HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZQ=="),
    ("Sec-WebSocket-Version", "13"), ("Proxy-Connection", "keep-alive"),
    ("Proxy-Authorization", "Basic dTpw"), ("Connection", "close"),
    ("Connection", "keep-alive, Host"), ("Connection", "x-api-key"),
    ("Content-Encoding", "gzip"), ("Content-Type", "application/json"),
    ("anthropic-beta", "b1"),
]  # fmt: skip
# Message framing, valid and not: a body the proxy and the upstream read differently
# would carry a second request past the proxy's checks.
FRAMING_HEADERS = [
    ("Expect", "100-continue"), ("Expect", "100-Continue"), ("Expect", "nope"),
    ("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "gzip, chunked"),
    ("Transfer-Encoding", "chunked, gzip"), ("Transfer-Encoding", " chunked"),
    ("Transfer-Encoding", "Chunked"), ("Transfer-Encoding", "identity"),
    ("Transfer-Encoding", "xchunked"), ("Content-Length", "0"), ("Content-Length", "5"),
    ("Content-Length", "-1"), ("Content-Length", "+5"), ("Content-Length", "5, 5"),
    ("Content-Length", "5 5"), ("Content-Length", "0x5"),
    ("Content-Length", "99999999999999999999"),
]  # fmt: skip
MALFORMED_HEADERS = [
    ("Transfer-Encoding ", "chunked"), ("X-Fold", "a\r\n {c2}"), ("X-Crlf", "a\r\nHost: {c2}"),
    ("X-Nul", "a\x00b"), ("X-Lf", "a\nHost: {c2}"), ("Bad Header", "x"), ("x-api-key ", SECRET),
    ("X-Long", "a" * 9000),
]  # fmt: skip
TRAILERS = [
    "GET http://{c2}/smuggled HTTP/1.1\r\nHost: {c2}\r\n\r\n",
    "GET /after HTTP/1.1\r\nHost: {c2}\r\n\r\n",
    "0\r\n\r\nGET //{c1}/x HTTP/1.1\r\nHost: {c1}\r\n\r\n",
]


@dataclass(frozen=True)
class Request:
    method: str
    target: str
    version: str
    sep: str
    eol: str
    fields: tuple[tuple[str, str], ...]
    trailer: str

    def render(self, slots: dict[str, str]) -> bytes:
        def fill(text: str) -> str:
            return re.sub(r"\{(\w+)\}", lambda m: slots.get(m.group(1), m.group(0)), text)

        line = self.sep.join(p for p in (self.method, self.target, self.version) if p)
        head = fill(line) + self.eol
        head += "".join(f"{fill(k)}: {fill(v)}{self.eol}" for k, v in self.fields)
        data = (head + self.eol).encode("utf-8", "surrogateescape") + self.body()
        return data + fill(self.trailer).encode()

    def body(self) -> bytes:
        codings = ",".join(v for k, v in self.fields if k.strip().lower() == "transfer-encoding")
        if "chunked" in codings.lower():
            return b"5\r\nhello\r\n0\r\n\r\n"
        lengths = [v for k, v in self.fields if k.strip().lower() == "content-length"]
        digits = re.search(r"\d+", lengths[0]) if lengths else None
        return b"x" * min(int(digits.group()), 64) if digits else b""

    @property
    def expected_answers(self) -> int:
        return 2 if self.trailer else 1


# Origin-form pieces a client may legally send, the tricky ones included: these requests
# are forwarded, so they test what the upstream gets (path under the prefix, its Host)
# while the headers below try to move them.
SEGMENTS = [
    "v1", "messages", "x", "@{c2}", "{c2}", "x:80", ":{c2p}", "%40{c2}", "%2f%2f{c2}",
    ";@{c2}", "~", "a.b", "%2F", "%5c{c2}", "%00", "%0d%0a", "http:", "%3a%2f%2f{c2}",
]  # fmt: skip
QUERIES = ["", "?beta=true", "?u=http://{c2}/", "?@{c2}", "?//{c2}", "?x=%0d%0aHost:{c2}"]


def origin_forms() -> st.SearchStrategy[str]:
    segments = st.lists(st.sampled_from(SEGMENTS), max_size=4)
    paths = segments.map(lambda segs: "".join("/" + seg for seg in segs) or "/")
    return st.builds(str.__add__, paths, st.sampled_from(QUERIES))


@st.composite
def targets(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.sampled_from(SPECIAL_TARGETS))
    if kind == 1:
        return "".join(draw(st.lists(st.sampled_from(TOKENS), max_size=14)))
    if kind == 2:
        return "".join(draw(st.sampled_from(p)) for p in (SCHEMES, AUTHORITIES, PATHS))
    return draw(origin_forms())


@st.composite
def requests(draw: st.DrawFn) -> Request:
    """Half hostile request lines (any method, target, version, spacing, line ending), half
    well-formed lines whose headers try to move the request (a forwarded request is what
    tests the Host and path the upstream gets); header sets of both kinds in both."""
    well_formed = draw(st.booleans())
    fields: list[tuple[str, str]] = []
    host = draw(st.sampled_from([*HOSTS, None]))
    if host is not None:
        fields.append(("Host", host))
    fields.append(("x-api-key", SECRET))
    fields += draw(st.lists(st.sampled_from(ROUTING_HEADERS), max_size=4, unique=True))
    fields += draw(st.lists(st.sampled_from(FRAMING_HEADERS), max_size=2, unique=True))
    if not well_formed or draw(st.integers(0, 9)) == 0:
        fields += draw(st.lists(st.sampled_from(MALFORMED_HEADERS), max_size=2))
    fields = draw(st.permutations(fields))
    if well_formed:
        return Request(
            method=draw(st.sampled_from(FORWARDED_METHODS)),
            target=draw(origin_forms()),
            version=draw(st.sampled_from(["HTTP/1.1", "HTTP/1.1", "HTTP/1.0"])),
            sep=" ",
            eol="\r\n",
            fields=tuple(fields),
            trailer=draw(st.sampled_from([""] * 6 + TRAILERS)),
        )
    return Request(
        method=draw(st.sampled_from(METHODS)),
        target=draw(targets()),
        version=draw(st.sampled_from(VERSIONS)),
        sep=draw(st.sampled_from([" "] * 6 + ["  ", "\t"])),
        eol=draw(st.sampled_from(["\r\n"] * 6 + ["\n"])),
        fields=tuple(fields),
        trailer=draw(st.sampled_from([""] * 6 + TRAILERS)),
    )


def plain(method: str, target: str, *fields: tuple[str, str], trailer: str = "") -> Request:
    head = (("Host", "{up}"), ("x-api-key", SECRET), *fields)
    return Request(method, target, "HTTP/1.1", " ", "\r\n", head, trailer)


# The attacks the issue names, and the shapes each class of trick takes: run on every
# setup, and pinned as examples of the generated run.
NAMED = [
    plain("POST", "munity://x/v1/messages", ("Content-Length", "2")),
    plain("GET", "http://{c2}/x"),
    plain("GET", "http://{c1}/x"),
    plain("GET", "@{c2}/x"),
    plain("GET", "//{c2}/x"),
    plain("GET", "\\\\{c2}/x"),
    plain("GET", "/%2f{c2}/x"),
    plain("GET", "http://{up}@{c2}/x"),
    plain("GET", "http://127\u30020\u30020\u30022:{c2p}/x"),
    plain("GET", "xn--mnchen-3ya.test/x"),
    plain("GET", ":{c1p}/x"),
    plain("OPTIONS", "*"),
    plain("CONNECT", "{c2}"),
    plain("CONNECT", "/v1/messages"),  # aiohttp's client sends CONNECT as host:port
    plain("GET", "/x", ("Host", "{c2}")),
    plain("GET", "/x", ("X-Forwarded-Host", "{c2}"), ("Forwarded", "host={c2}")),
    plain("GET", "/x", ("Bad Header", "x")),
    plain("GET", "/x", ("x-api-key ", SECRET)),
    plain("POST", "/v1/messages", ("Transfer-Encoding", "gzip, chunked")),
    plain("POST", "/v1/messages", ("Expect", "100-continue"), ("Content-Length", "5")),
    plain("GET", "/x", trailer=TRAILERS[0]),
]

# -- the harness -------------------------------------------------------------------------


class Problems(logging.Handler):
    """Every log record at ERROR or above, or with a traceback, from any logger."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            text = f"{record.name}: {record.getMessage()}"
            if record.exc_info and record.exc_info[1] is not None:
                text += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
            self.seen.append(text)


@dataclass
class Setup:
    name: str
    upstream_url: str
    prefix: str
    authority: str


SETUPS = [
    Setup("port", "http://127.0.0.1:{port}", "", "127.0.0.1:{port}"),
    Setup("prefix", "http://127.0.0.1:{port}/prefix", "/prefix", "127.0.0.1:{port}"),
    # Like the default (a name, no port, no path): the guard resolves the name to the raw
    # upstream and any other name to a canary, so a target pasted after the origin (which
    # makes another name) is seen arriving there.
    Setup("named", f"http://{UPSTREAM_NAME}", "", UPSTREAM_NAME),
]


class Rig:
    """Upstream, canaries, guard and proxy for one setup; ``check`` judges one request."""

    def __init__(self, setup: Setup, upstream: RawUpstream, canaries: list[Canary]) -> None:
        self.setup = setup
        self.upstream = upstream
        self.canaries = canaries
        port = str(upstream.port)
        self.upstream_url = setup.upstream_url.replace("{port}", port)
        self.authority = setup.authority.replace("{port}", port)
        self.prefix = setup.prefix
        self.address: tuple[str, int] = ("", 0)
        self.attempts: list[Attempt] = []
        self.problems = Problems()
        self.stderr = ""
        self.forwarded = 0
        self.late: list[str] = []
        self.stalled: bytes | None = None
        """Requests the upstream received, over all examples: the checks of what it got
        must not pass because nothing got there."""

    def slots(self) -> dict[str, str]:
        c1, c2 = self.canaries
        return {
            "c1": c1.authority, "c2": c2.authority, "c1p": str(c1.port), "c2p": str(c2.port),
            "up": self.authority, "uph": self.authority.rsplit(":", 1)[0],
            "self": f"{self.address[0]}:{self.address[1]}",
        }  # fmt: skip

    def reset(self) -> None:
        self.upstream.idle()
        # What arrived after the last request was judged (its client gave up waiting):
        # kept to be judged at the end, not blamed on the next request.
        late = self.failures(Outcome([], timed_out=False, closed=True))
        self.late += [
            f"after a request: {p}" for kind in ("reached", "forwarded") for p in late[kind]
        ]
        self.forwarded += len(self.upstream.received)
        self.upstream.received.clear()
        for canary in self.canaries:
            canary.hits.clear()
        self.attempts.clear()
        self.problems.seen.clear()

    def send(self, request: Request) -> Outcome:
        # A proxy that stopped answering fails every later request at once, naming the
        # one after which it stopped, instead of each waiting out its timeout.
        assert self.stalled is None, f"the proxy stopped answering after {self.stalled!r}"
        data = request.render(self.slots())
        outcome = self._exchange(data, request)
        if outcome.timed_out and not self.answers_plain():
            self.stalled = data[:300]
            raise AssertionError(f"the proxy stopped answering after {self.stalled!r}")
        return outcome

    def answers_plain(self) -> bool:
        probe = plain("POST", "/v1/messages", ("Content-Length", "2"))
        outcome = self._exchange(probe.render(self.slots()), probe)
        return [a.status for a in outcome.answers] == [200]

    def _exchange(self, data: bytes, request: Request) -> Outcome:
        outcome = send_raw(
            self.address,
            data,
            request.expected_answers,
            head_only=request.method == "HEAD",
            timeout_s=ANSWER_WAIT_S,
        )
        for listener in (self.upstream, *self.canaries):
            listener.idle()
        return outcome

    def failures(self, outcome: Outcome) -> dict[str, list[str]]:
        """What went wrong, by kind (each kind is asserted on a line of its own, so that
        hypothesis shrinks and reports each separately)."""
        reached = [
            f"canary {c.authority} got {hit[:200]!r}"
            + (" (the API key included)" if SECRET.encode() in hit else "")
            for c in self.canaries
            for hit in c.hits
        ]
        up = ("127.0.0.1", self.upstream.port)
        reached += [
            f"the proxy tried to {a.kind} {a.host}:{a.port}"
            for a in self.attempts
            if a.kind != "connect" or (a.host, a.port) != up
        ]
        forwarded = []
        for got in self.upstream.received:
            path = got.target.partition("?")[0]
            rest = path[len(self.prefix) :] if path.startswith(self.prefix) else ""
            if not rest.startswith("/") or rest.startswith("//"):
                forwarded.append(f"target {got.target!r} is not under {self.prefix}/")
            segments = re.sub("%2e", ".", path, flags=re.IGNORECASE).split("/")
            if "." in segments or ".." in segments:
                # The upstream may resolve it, to a path above its prefix.
                forwarded.append(f"target {got.target!r} has a dot segment")
            if got.hosts != [self.authority]:
                forwarded.append(f"Host {got.hosts!r} is not [{self.authority!r}]")
        answered = [f"answered {a.status}" for a in outcome.answers if a.status == 500]
        logged = [f"logged {p}" for p in self.problems.seen]
        if "Traceback" in self.stderr:
            logged.append("printed a traceback on stderr")
        leaked = []
        if any(SECRET in p for p in self.problems.seen) or SECRET in self.stderr:
            leaked.append("showed the API key in its logs or on stderr")
        return {"reached": reached, "forwarded": forwarded, "answered": answered,
                "leaked": leaked, "logged": logged}  # fmt: skip


def judge(rig: Rig, request: Request, outcome: Outcome) -> None:
    found = rig.failures(outcome)
    sent = f"{request.render(rig.slots())[:300]!r} to a proxy for {rig.upstream_url}"
    assert not found["reached"], f"{sent}: {found['reached']}"
    assert not found["forwarded"], f"{sent}: the upstream got {found['forwarded']}"
    assert not found["answered"], f"{sent}: {found['answered']}"
    assert not found["leaked"], f"{sent}: {found['leaked']}"
    assert not found["logged"], f"{sent}: {found['logged']}"


def check(rig: Rig, request: Request) -> None:
    """One request to the in-process proxy, judged; what it writes to stderr meanwhile
    (the proxy's thread shares the process's) is judged with it."""
    rig.reset()
    with contextlib.redirect_stderr(io.StringIO()) as err:
        outcome = rig.send(request)
    rig.stderr = err.getvalue()
    judge(rig, request, outcome)


def still_serves(rig: Rig) -> None:
    rig.reset()
    outcome = rig.send(plain("POST", "/v1/messages", ("Content-Length", "2")))
    assert [a.status for a in outcome.answers] == [200], f"a plain request: {outcome}"
    [got] = rig.upstream.received
    assert (got.method, got.target, got.hosts) == (
        "POST",
        rig.prefix + "/v1/messages",
        [rig.authority],
    )


class InProcessProxy:
    """``serve`` on its own event loop in a thread, so the test can use blocking sockets."""

    def __init__(self, upstream: str, log_dir: Path) -> None:
        self.cfg = ProxyConfig(host="127.0.0.1", port=0, upstream=URL(upstream), log_dir=log_dir)
        self.ready = threading.Event()
        self.address: tuple[str, int] = ("", 0)
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="fuzz-proxy", daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()

            def on_ready(host: str, port: int) -> None:
                self.address = (host, port)
                self.ready.set()

            await serve(self.cfg, self._stop, on_ready)

        try:
            asyncio.run(main())
        except BaseException as exc:
            self.error = exc
            self.ready.set()

    def __enter__(self) -> InProcessProxy:
        self._thread.start()
        assert self.ready.wait(30), "the proxy did not start"
        if self.error is not None:
            raise self.error
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


@pytest.fixture(scope="module", params=SETUPS, ids=[s.name for s in SETUPS])
def rig(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    upstream = RawUpstream()
    canaries = [Canary("127.0.0.1"), Canary("127.0.0.2")]
    rig = Rig(request.param, upstream, canaries)
    guard = Guard(
        {UPSTREAM_NAME: ("127.0.0.1", upstream.port)},
        sink=("127.0.0.2", canaries[1].port),
        attempts=rig.attempts,
    )
    root = logging.getLogger()
    root.addHandler(rig.problems)
    install_guard(guard)
    try:
        log_dir = tmp_path_factory.mktemp("fuzz-caps")
        with InProcessProxy(rig.upstream_url, log_dir) as proxy:
            rig.address = proxy.address
            yield rig
    finally:
        uninstall_guard()
        root.removeHandler(rig.problems)
        for listener in (upstream, *canaries):
            listener.close()


# -- the tests ---------------------------------------------------------------------------

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("attack", NAMED, ids=[f"{i}-{r.method}" for i, r in enumerate(NAMED)])
def test_named_attacks_reach_only_the_upstream(rig: Rig, attack: Request) -> None:
    check(rig, attack)


def test_answers_without_a_body_leave_it_serving(rig: Rig) -> None:
    # A HEAD's answer has no body: aiohttp hands every such answer the same empty
    # reader, so a relay loop that misreads its end spins for ever on the second one,
    # and the whole proxy with it.
    for _ in range(3):
        check(rig, plain("HEAD", "/v1/messages"))
    still_serves(rig)


def test_generated_requests_reach_only_the_upstream(rig: Rig) -> None:
    @FUZZ
    @given(requests())
    def one(request: Request) -> None:
        check(rig, request)

    one()
    assert rig.forwarded > 0, "no generated request reached the upstream: the fuzz tests nothing"
    still_serves(rig)
    assert rig.attempts, "the guard saw no connect: it would not see a wrong one either"
    assert not rig.late


def _examples(test: Any) -> Any:
    for attack in NAMED:
        test = example(attack)(test)
    return test


# -- the command, as users run it --------------------------------------------------------


@dataclass
class CommandProxy:
    proc: subprocess.Popen[bytes]
    stderr_path: Path
    guard_log: Path


def start_command(
    tmp: Path, upstream: str, names: dict[str, tuple[str, int]], sink: tuple[str, int]
) -> CommandProxy:
    guard_log = tmp / "guard.jsonl"
    stderr_path = tmp / "stderr.txt"
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cachediag", "proxy", "--listen", "127.0.0.1:0",
             "--upstream", upstream, "--log-dir", str(tmp / "caps")],
            stdout=subprocess.DEVNULL, stderr=err, env=guard_env(tmp, guard_log, names, sink),
        )  # fmt: skip
    return CommandProxy(proc, stderr_path, guard_log)


def wait_ready(cmd: CommandProxy) -> tuple[str, int]:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        text = cmd.stderr_path.read_text(errors="replace")
        found = re.search(r"listening on http://([\d.]+):(\d+)", text)
        if found:
            return found.group(1), int(found.group(2))
        if cmd.proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"the proxy did not start: {cmd.stderr_path.read_text()}")


def stop_command(cmd: CommandProxy) -> str:
    if cmd.proc.poll() is None:
        cmd.proc.send_signal(signal.SIGTERM)
        try:
            cmd.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            cmd.proc.kill()
            cmd.proc.wait(10)
    return cmd.stderr_path.read_text(errors="replace")


def test_the_command_reaches_only_the_upstream(tmp_path: Path) -> None:
    upstream = RawUpstream()
    canaries = [Canary("127.0.0.1"), Canary("127.0.0.2")]
    rig = Rig(SETUPS[1], upstream, canaries)
    cmd = start_command(tmp_path, rig.upstream_url, {}, ("127.0.0.2", canaries[1].port))
    try:
        rig.address = wait_ready(cmd)
        seen = [len(cmd.stderr_path.read_text(errors="replace"))]

        @settings(FUZZ, max_examples=50)
        @given(requests())
        @_examples
        def one(request: Request) -> None:
            rig.reset()
            outcome = rig.send(request)
            rig.attempts[:] = read_guard_log(cmd.guard_log)
            cmd.guard_log.unlink(missing_ok=True)
            text = cmd.stderr_path.read_text(errors="replace")
            rig.stderr, seen[0] = text[seen[0] :], len(text)
            judge(rig, request, outcome)

        one()
        assert rig.forwarded > 0, "no generated request reached the upstream"
        cmd.guard_log.unlink(missing_ok=True)
        still_serves(rig)
        assert read_guard_log(cmd.guard_log), "the command's guard saw no connect"
        assert not rig.late
    finally:
        stderr = stop_command(cmd)
        for listener in (upstream, *canaries):
            listener.close()
    assert "Traceback" not in stderr, stderr
    assert SECRET not in stderr
