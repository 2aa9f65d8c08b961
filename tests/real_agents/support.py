"""What the real-agent harnesses and fakes share: where an agent's CLI is installed, one
session's throwaway folders and sealed environment, a turn run (under ``strace -e
connect`` when asked) and the addresses it reached, each suite's runs fixture, and the
fakes' token rule, prefix hashes, miss rule and the state and server they share.

aiohttp (the proxy extra) is imported only inside the functions that serve: ``conftest``
imports this module to skip the suites when it is missing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pytest

if TYPE_CHECKING:
    from aiohttp import web

    from tests.real_client.fake_api import Running

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MCP_SERVER = ROOT / "tests" / "real_client" / "mcp_server.py"
LOOPBACK = frozenset({"127.0.0.1", "::1", "::ffff:127.0.0.1"})

# -- the CLIs ----------------------------------------------------------------------


@dataclass(frozen=True)
class Cli:
    """An agent's CLI as ``.ci/run`` installs it: ``npm install --prefix
    .cache/<folder>/<version> <package>@<version>`` (``env`` moves the root)."""

    name: str
    package: str
    version: str
    folder: str
    binary_name: str
    env: str

    def binary(self) -> Path | None:
        root = Path(os.environ.get(self.env, ROOT / ".cache" / self.folder))
        path = root / self.version / "node_modules" / ".bin" / self.binary_name
        return path if path.exists() and os.access(path, os.X_OK) else None

    def install_hint(self) -> str:
        return (
            f"npm install --prefix .cache/{self.folder}/{self.version} --no-audit --no-fund "
            f"{self.package}@{self.version}"
        )

    def require(self) -> Path:
        """The binary, or a skip (a failure under CI) that says how to install it."""
        binary = self.binary()
        if binary is not None:
            return binary
        message = f"{self.name} is not installed: {self.install_hint()}"
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI is set and .ci/run installs it)", pytrace=False)
        pytest.skip(message)


S = TypeVar("S", bound="AgentSession")
T = TypeVar("T")


def scenario_runs(
    cli: Cli, start: Callable[[], tuple[ThreadPoolExecutor, dict[str, Future[S]]]]
) -> Iterator[dict[str, Future[S]]]:
    """A suite's runs fixture (``yield from`` it): every scenario started together, and
    once the tests are done, waited for and its folders removed."""
    if os.environ.get("CACHEDIAG_PURE_PYTHON"):
        pytest.skip("the real-agent suite runs once, in the compiled pass")
    cli.require()
    pool, futures = start()
    yield futures
    pool.shutdown(wait=True)
    for fut in futures.values():
        if fut.done() and fut.exception() is None:
            fut.result().cleanup()


# -- one session -------------------------------------------------------------------


@dataclass
class Turn:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def events(self) -> list[dict[str, Any]]:
        """The JSON objects of stdout, one a line (what ``--json`` modes print)."""
        out = []
        for line in self.stdout.splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
        return out


@dataclass(kw_only=True)
class AgentSession:
    """What every harness's session does alike. A harness's ``__post_init__`` makes the
    folders (``make_root``), sets ``work`` and ``fake`` and calls ``serve``; its own
    ``turn`` builds the command and runs it with ``run_turn``."""

    keep: bool = False
    """Leave the folders for a person to look at (``cleanup`` does nothing)."""
    trace_connects: bool = False
    """Run each turn under ``strace -e connect`` (``connections`` reads what it saw)."""
    turns: list[Turn] = field(default_factory=list)
    root: Path = field(init=False, repr=False)
    work: Path = field(init=False, repr=False)
    fake: FakeApi[Any] = field(init=False, repr=False)
    _run: Running = field(init=False, repr=False)

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def __exit__(self, *exc: object) -> None:
        self._run.__exit__(None, None, None)

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def make_root(self, agent: str, name: str, *folders: str) -> None:
        """The session's throwaway folder, with ``folders`` (relative paths) in it."""
        self.root = Path(tempfile.mkdtemp(prefix=f"ra-{agent}-{name}-"))
        for d in folders:
            (self.root / d).mkdir(parents=True)

    def serve(self) -> None:
        """``fake`` served from a thread of its own once the session is entered."""
        from tests.real_client.fake_api import Running

        self._run = Running(self.fake)  # type: ignore[arg-type]  # duck-typed: app() only

    def run_turn(self, cmd: list[str], agent: str, timeout: float) -> Turn:
        """One turn's process in the work folder with the sealed environment; a failed
        one raises with the end of its stderr."""
        if self.trace_connects:
            out = self.root / f"connects.{len(self.turns)}.txt"
            cmd = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(out), *cmd]
        proc = subprocess.run(
            cmd, cwd=self.work, env=self.env(), capture_output=True, text=True,
            timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        result = Turn(cmd, proc.returncode, proc.stdout, proc.stderr)
        self.turns.append(result)
        if proc.returncode != 0:
            raise RuntimeError(f"{agent} exited {proc.returncode}: {proc.stderr[-2000:]}")
        return result

    def connections(self) -> list[str]:
        """The inet addresses the CLI and its children connected to (or tried to)."""
        found = []
        for path in sorted(self.root.glob("connects.*.txt")):
            for line in path.read_text(errors="replace").splitlines():
                m = re.search(
                    r'sin6?_addr=inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"', line
                )
                if m and "connect(" in line:
                    found.append(m.group(1) or m.group(2))
        return found

    def truth(self) -> list[dict[str, Any]]:
        return [t.as_json() for t in self.fake.truth]


def sealed_env(home: Path, tmp: Path, **own: str) -> dict[str, str]:
    """A CLI's whole environment: nothing of the developer's leaks in, and a proxy
    variable at a dead loopback port catches anything that would reach the network."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        **own,
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": str(tmp),
    }


def assert_loopback_only(session: AgentSession) -> None:
    addresses = session.connections()
    assert addresses, "strace saw no connect at all: the check would prove nothing"
    assert set(addresses) <= LOOPBACK, addresses


# -- the fakes ---------------------------------------------------------------------

MIN_CACHED = 1024
STEP = 128
"""OpenAI's automatic caching: nothing read below 1,024 tokens, then 128-token steps."""
MISS_MIN_TOKENS = 2000
MISS_READ_SHARE = 0.95
"""The miss rule (prompt-cache.md §2): at least 2,000 tokens re-processed, and less read
than 95% of what the previous request could lend."""


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tokens_of(obj: Any) -> int:
    """The fakes' fixed rule: ceil(bytes of the canonical JSON / 4)."""
    return max(1, math.ceil(len(canonical(obj).encode()) / 4))


def stepped(common: int) -> int:
    """What a shared prefix of ``common`` tokens reads under OpenAI's steps."""
    if common < MIN_CACHED:
        return 0
    return MIN_CACHED + (common - MIN_CACHED) // STEP * STEP


def judged(previous: Sequence[Unit], units: Sequence[Unit], read: int) -> str:
    """``cold``, ``hit`` or ``miss`` of a request that read ``read`` tokens, by the miss
    rule on what the previous request could lend: its whole prompt (or as much as this
    one is long), in OpenAI's steps."""
    lend = stepped(min(sum(u.tokens for u in previous), sum(u.tokens for u in units)))
    if lend == 0:
        return "cold"  # the previous request left nothing readable
    if not (lend - read >= MISS_MIN_TOKENS and read < MISS_READ_SHARE * lend):
        return "hit"
    return "miss"


def changes(differs: dict[str, bool], expired: bool) -> list[str]:
    """What a miss changed: the parts that differ, in order; else ``expired`` when the
    previous entry had died by now; else the input."""
    changed = [part for part, differ in differs.items() if differ]
    if not changed and expired:
        changed.append("expired")
    return changed or ["input"]


@dataclass
class Unit:
    kind: str
    digest: str
    """Chained: this unit, every unit before it, and what keys the cache (the model)."""
    tokens: int
    own: str
    """This unit's hash alone."""


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def common_tokens(a: Sequence[Unit], b: Sequence[Unit]) -> int:
    """The tokens of the longest run of units two prefixes share from the start."""
    common = 0
    for x, y in zip(a, b, strict=False):
        if x.digest != y.digest:
            break
        common += x.tokens
    return common


def owns(units: Sequence[Unit], kind: str) -> list[str]:
    """The own hashes of one kind of unit, in order: what changed between two requests."""
    return [u.own for u in units if u.kind == kind]


@dataclass
class Entry:
    units: list[Any]
    expires: float


class FakeApi(Generic[T]):
    """What every fake provider keeps besides its cache: the retention, the ground truth
    (one ``T`` a model call), the calls it does not serve, the API keys it was sent, the
    folder that keeps each body (``dump``) and the lock its state is changed under.
    ``app()`` sends every method and path to the fake's ``handle``."""

    def __init__(self, retention: float = 300.0, dump_dir: Path | None = None) -> None:
        self.retention = retention
        self.truth: list[T] = []
        self.other: list[dict[str, Any]] = []
        self.keys: set[str] = set()
        self.dump_dir = dump_dir
        self.lock = threading.Lock()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError

    def app(self) -> web.Application:
        from aiohttp import web

        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def dump(self, name: str, body: dict[str, Any]) -> None:
        """A request's body kept for a person debugging a kept run (``keep=True``)."""
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
            (self.dump_dir / name).write_text(json.dumps(body, indent=1))
