"""Loopback harness for the proxy's fuzz test: a raw upstream that records what reaches it,
canary listeners that must never be reached, a guard on every outbound connection, and a
client that speaks raw bytes (an HTTP library would normalise the request line).

The guard is what makes "no connection reaches anything but the upstream" checkable
without touching the network: every ``connect`` the process makes is recorded, a
non-loopback one is refused before it leaves, and host names are resolved only from a
table the test gives (any other name is recorded and fails to resolve). The subprocess
case installs the same guard through a ``sitecustomize`` module (see ``guard_env``).
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GUARD_LOG_ENV = "CACHEDIAG_FUZZ_GUARD_LOG"
GUARD_NAMES_ENV = "CACHEDIAG_FUZZ_GUARD_NAMES"


# -- the guard ---------------------------------------------------------------------------


@dataclass
class Attempt:
    kind: str  # "connect" or "resolve"
    host: str
    port: int
    thread: str


@dataclass
class Guard:
    """Records every outbound connect and every name lookup of this process."""

    names: dict[str, tuple[str, int]]
    """Host names that may be resolved, each to a loopback (address, port)."""
    sink: tuple[str, int] | None = None
    """Where any other name resolves (recorded first): a canary, so that a request sent
    to a foreign host is seen arriving, credentials and all, instead of failing early."""
    log_path: Path | None = None
    attempts: list[Attempt] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, kind: str, host: str, port: int) -> None:
        attempt = Attempt(kind, host, port, threading.current_thread().name)
        with self.lock:
            self.attempts.append(attempt)
            if self.log_path is not None:
                with open(self.log_path, "a", encoding="utf-8") as out:
                    out.write(json.dumps(attempt.__dict__) + "\n")


_ORIGINAL_CONNECT = socket.socket.connect
_ORIGINAL_CONNECT_EX = socket.socket.connect_ex
_ORIGINAL_GETADDRINFO = socket.getaddrinfo


def raw_connect(sock: socket.socket, address: tuple[str, int]) -> None:
    """The test client's own connect, which the guard does not see."""
    _ORIGINAL_CONNECT(sock, address)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def install_guard(guard: Guard) -> None:
    def connect(sock: socket.socket, address: Any) -> None:
        host, port = _inet(address)
        if host is not None:
            guard.note("connect", host, port)
            if not _is_loopback(host):
                raise ConnectionRefusedError(f"fuzz guard: {host} is not loopback")
        _ORIGINAL_CONNECT(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        host, port = _inet(address)
        if host is not None:
            guard.note("connect", host, port)
            if not _is_loopback(host):
                return 111  # ECONNREFUSED
        return _ORIGINAL_CONNECT_EX(sock, address)

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode("latin-1") if isinstance(host, bytes) else host
        if name is None or _is_ip(name):
            return _ORIGINAL_GETADDRINFO(host, port, *args, **kwargs)
        mapped = guard.names.get(name.lower().rstrip("."))
        if mapped is None:
            guard.note("resolve", name, int(port or 0) if str(port or 0).isdigit() else -1)
            if guard.sink is None:
                raise socket.gaierror(socket.EAI_NONAME, f"fuzz guard: {name!r} is unknown")
            mapped = guard.sink
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", mapped)]

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo


def uninstall_guard() -> None:
    socket.socket.connect = _ORIGINAL_CONNECT  # type: ignore[method-assign]
    socket.socket.connect_ex = _ORIGINAL_CONNECT_EX  # type: ignore[method-assign]
    socket.getaddrinfo = _ORIGINAL_GETADDRINFO


def _inet(address: Any) -> tuple[str | None, int]:
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], str):
        return address[0], int(address[1])
    return None, 0  # a Unix socket path or the like: not a network connection


def install_guard_from_env() -> None:
    """Called by the subprocess's sitecustomize."""
    log = os.environ.get(GUARD_LOG_ENV)
    if not log:
        return
    table = json.loads(os.environ[GUARD_NAMES_ENV])
    names = {k: (v[0], int(v[1])) for k, v in table["names"].items()}
    sink = (table["sink"][0], int(table["sink"][1])) if table["sink"] else None
    install_guard(Guard(names, sink, Path(log)))


def guard_env(
    tmp: Path, log: Path, names: dict[str, tuple[str, int]], sink: tuple[str, int] | None
) -> dict[str, str]:
    """Environment for a subprocess that installs the guard before anything else runs."""
    site = tmp / "guard-site"
    site.mkdir(exist_ok=True)
    root = Path(__file__).resolve().parent.parent
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(root)!r})\n"
        "from tests.proxy_fuzz_support import install_guard_from_env\n"
        "install_guard_from_env()\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    env[GUARD_LOG_ENV] = str(log)
    env[GUARD_NAMES_ENV] = json.dumps({"names": names, "sink": sink})
    return env


def read_guard_log(log: Path) -> list[Attempt]:
    if not log.exists():
        return []
    return [Attempt(**json.loads(line)) for line in log.read_text().splitlines() if line]


# -- raw HTTP/1.1 reading ----------------------------------------------------------------


class Closed(Exception):
    pass


class Reader:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def more(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise Closed
        self.buf += data

    def until(self, mark: bytes, limit: int = 1 << 20) -> bytes:
        while mark not in self.buf:
            if len(self.buf) > limit:
                raise Closed
            self.more()
        head, self.buf = self.buf.split(mark, 1)
        return head

    def exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            self.more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def rest(self) -> bytes:
        try:
            while True:
                self.more()
        except Closed:
            pass
        out, self.buf = self.buf, b""
        return out

    def chunked(self) -> bytes:
        out = b""
        while True:
            size_line = self.until(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.until(b"\r\n"):  # trailers, up to the empty line
                    pass
                return out
            out += self.exactly(size)
            self.until(b"\r\n")


def parse_head(head: bytes) -> tuple[list[str], list[tuple[str, str]]]:
    """The first line's parts and the header fields, as latin-1 text."""
    lines = head.decode("latin-1").split("\r\n")
    fields = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields.append((name.strip(), value.strip()))
    return lines[0].split(" "), fields


def header(fields: list[tuple[str, str]], name: str) -> list[str]:
    return [v for k, v in fields if k.lower() == name]


# -- the raw upstream and the canaries ---------------------------------------------------


@dataclass
class Received:
    method: str
    target: str
    version: str
    hosts: list[str]
    fields: list[tuple[str, str]]


class _Listener:
    """A TCP listener served by one thread per connection."""

    def __init__(self, host: str) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(128)
        self.host = host
        self.port: int = self.sock.getsockname()[1]
        self.active = 0
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def authority(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.active += 1
            threading.Thread(target=self._serve, args=(conn, peer), daemon=True).start()

    def _serve(self, conn: socket.socket, peer: Any) -> None:
        try:
            conn.settimeout(10)
            self.serve(conn, peer)
        except (OSError, Closed, ValueError):
            pass
        finally:
            conn.close()
            with self.lock:
                self.active -= 1

    def serve(self, conn: socket.socket, peer: Any) -> None:
        raise NotImplementedError

    def idle(self, timeout_s: float = 2.0) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            with self.lock:
                if self.active == 0:
                    return True
            time.sleep(0.005)
        return False

    def close(self) -> None:
        self.sock.close()


class Canary(_Listener):
    """Must never be reached: it records every connection and what it was sent in its
    first second (a request head, with whatever credentials it carries), and answers
    nothing."""

    def __init__(self, host: str) -> None:
        self.hits: list[bytes] = []
        super().__init__(host)

    def serve(self, conn: socket.socket, peer: Any) -> None:
        self.hits.append(b"")
        conn.settimeout(1.0)
        reader = Reader(conn)
        with suppress(OSError, Closed):
            while b"\r\n\r\n" not in reader.buf:
                reader.more()
        self.hits[-1] = reader.buf


UPSTREAM_BODY = json.dumps(
    {"id": "msg_fuzz", "type": "message", "role": "assistant", "content": [],
     "model": "claude-opus-4-5", "usage": {"input_tokens": 1, "output_tokens": 1}}
).encode()  # fmt: skip


class RawUpstream(_Listener):
    """Records each request's line and Host fields as they came off the wire, reads its
    body by its framing, and answers 200 with a small JSON message."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.received: list[Received] = []
        super().__init__(host)

    def serve(self, conn: socket.socket, peer: Any) -> None:
        reader = Reader(conn)
        head = reader.until(b"\r\n\r\n")
        line, fields = parse_head(head)
        method, target, version = [*line, "", "", ""][:3]
        self.received.append(Received(method, target, version, header(fields, "host"), fields))
        if any(v.lower() == "100-continue" for v in header(fields, "expect")):
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        codings = ",".join(header(fields, "transfer-encoding")).lower()
        if "chunked" in codings:
            reader.chunked()
        elif header(fields, "content-length"):
            reader.exactly(int(header(fields, "content-length")[0]))
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nrequest-id: req_fuzz\r\n"
            + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(UPSTREAM_BODY)
            + (b"" if method == "HEAD" else UPSTREAM_BODY)
        )


# -- the raw client ----------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    fields: list[tuple[str, str]]
    body: bytes


@dataclass
class Outcome:
    answers: list[Answer]
    timed_out: bool
    closed: bool


def send_raw(
    address: tuple[str, int], data: bytes, expect: int, head_only: bool, timeout_s: float
) -> Outcome:
    """Send ``data`` on a fresh connection; read up to ``expect`` responses (final ones,
    interim 1xx skipped) or until the proxy closes or goes quiet for ``timeout_s``."""
    answers: list[Answer] = []
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    try:
        raw_connect(sock, address)
        with suppress(OSError):  # refused mid-send: what it answered is still read
            sock.sendall(data)
        reader = Reader(sock)
        while len(answers) < expect:
            line, fields = parse_head(reader.until(b"\r\n\r\n"))
            status = int(line[1]) if len(line) > 1 and line[1].isdigit() else -1
            if 100 <= status < 200:
                continue
            codings = ",".join(header(fields, "transfer-encoding")).lower()
            if head_only or status in (204, 304):
                body = b""
            elif "chunked" in codings:
                body = reader.chunked()
            elif header(fields, "content-length"):
                body = reader.exactly(int(header(fields, "content-length")[0]))
            else:
                body = reader.rest()
            answers.append(Answer(status, fields, body))
        return Outcome(answers, timed_out=False, closed=False)
    except TimeoutError:
        return Outcome(answers, timed_out=True, closed=False)
    except (Closed, ConnectionError):
        return Outcome(answers, timed_out=False, closed=True)
    finally:
        sock.close()


@contextmanager
def listening(*listeners: _Listener) -> Iterator[None]:
    try:
        yield
    finally:
        for listener in listeners:
            listener.close()
