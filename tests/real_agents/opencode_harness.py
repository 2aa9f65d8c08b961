"""Drive the real opencode CLI offline against the local fake provider APIs.

One ``OpencodeSession`` is one opencode session in throwaway directories: its own HOME
and XDG folders (config, data with ``opencode.db``, state, cache), working folder, fake
provider and a canary API key. The config names two custom providers, both at the fake:
``fakeoa`` (``@ai-sdk/openai-compatible``: chat completions) and ``fakean``
(``@ai-sdk/anthropic``: Messages); both packages are bundled, so nothing is installed.
``turn()`` runs ``opencode run --format json`` (then with ``--session <id>``), each turn a
separate process continuing one session. ``OPENCODE_DISABLE_MODELS_FETCH`` and friends keep
it from models.dev, npm and the LSP downloads; a proxy at a dead loopback port catches the
rest; with ``trace_connects`` each turn runs under ``strace -e connect``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.real_agents.opencode_fake import FakeProvider
from tests.real_client.fake_api import Running

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OPENCODE_VERSION = "1.18.33"
INSTALL_ROOT = Path(os.environ.get("CACHEDIAG_OPENCODE_ROOT", ROOT / ".cache" / "opencode"))
MCP_SERVER = ROOT / "tests" / "real_client" / "mcp_server.py"
MODELS = {
    "fakeoa": ("gpt-5.5", "gpt-5.4", "gpt-5-mini"),
    "fakean": ("claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5"),
}
_QUIET = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
}


def opencode_binary(version: str = OPENCODE_VERSION) -> Path | None:
    """The CLI installed by ``npm install --prefix .cache/opencode/<version> opencode-ai``."""
    path = INSTALL_ROOT / version / "node_modules" / ".bin" / "opencode"
    return path if path.exists() and os.access(path, os.X_OK) else None


def install_hint(version: str = OPENCODE_VERSION) -> str:
    return (
        f"npm install --prefix .cache/opencode/{version} --no-audit --no-fund opencode-ai@{version}"
    )


@dataclass
class Turn:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.stdout.splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
        return out


@dataclass
class OpencodeSession:
    name: str
    provider: str = "fakeoa"
    retention: float = 300.0
    context_limit: int = 200000
    """The models' context window in the config: a small one makes opencode compact."""
    keep: bool = False
    trace_connects: bool = False
    canary: str = field(default_factory=lambda: "sk-canary-" + secrets.token_hex(12))
    turns: list[Turn] = field(default_factory=list)
    session_id: str | None = None

    def __post_init__(self) -> None:
        self.binary = opencode_binary()
        if self.binary is None:
            raise FileNotFoundError(f"opencode {OPENCODE_VERSION} is not installed")
        self.root = Path(tempfile.mkdtemp(prefix=f"ra-opencode-{self.name}-"))
        self.home = self.root / "home"
        self.work = self.root / "work"
        for d in ("home", "config", "data", "state", "cache", "work", "tmp"):
            (self.root / d).mkdir(parents=True)
        self.fake = FakeProvider(retention=self.retention, dump_dir=self.root / "bodies")
        self._run = Running(self.fake)  # type: ignore[arg-type]  # duck-typed: app() only

    def __enter__(self) -> OpencodeSession:
        self._run.__enter__()
        self.write_config()
        return self

    def __exit__(self, *exc: object) -> None:
        self._run.__exit__(None, None, None)

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    @property
    def data_home(self) -> Path:
        return self.root / "data"

    @property
    def database(self) -> Path:
        return self.data_home / "opencode" / "opencode.db"

    # -- set-up --------------------------------------------------------------------
    def write_config(self, mcp: bool = False) -> None:
        limit = {"context": self.context_limit, "output": min(8000, self.context_limit // 9)}
        npm = {"fakeoa": "@ai-sdk/openai-compatible", "fakean": "@ai-sdk/anthropic"}
        providers = {
            pid: {
                "npm": npm[pid],
                "name": f"fake {pid}",
                "options": {"baseURL": f"{self._run.url}/v1", "apiKey": "{env:FAKE_API_KEY}"},
                "models": {m: {"name": m, "limit": limit} for m in models},
            }
            for pid, models in MODELS.items()
        }
        first, _, small = MODELS[self.provider]
        config: dict[str, Any] = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "model": f"{self.provider}/{first}",
            "small_model": f"{self.provider}/{small}",
            "provider": providers,
        }
        if mcp:
            config["mcp"] = {
                "tickets": {"type": "local", "command": [sys.executable, str(MCP_SERVER)]}
            }
        folder = self.root / "config" / "opencode"
        folder.mkdir(exist_ok=True)
        (folder / "opencode.json").write_text(json.dumps(config, indent=1))

    def env(self) -> dict[str, str]:
        """opencode's whole environment: nothing of the developer's leaks in."""
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "XDG_DATA_HOME": str(self.data_home),
            "XDG_STATE_HOME": str(self.root / "state"),
            "XDG_CACHE_HOME": str(self.root / "cache"),
            "FAKE_API_KEY": self.canary,
            **_QUIET,
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "TMPDIR": str(self.root / "tmp"),
        }

    # -- driving -------------------------------------------------------------------
    def turn(self, prompt: str, *args: str, timeout: float = 180) -> Turn:
        assert self.binary is not None
        cmd = [str(self.binary), "run", "--format", "json"]
        if self.session_id is not None:
            cmd += ["--session", self.session_id]
        cmd += [*args, prompt]
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
            raise RuntimeError(f"opencode exited {proc.returncode}: {proc.stderr[-2000:]}")
        for event in result.events():
            sid = event.get("sessionID")
            if isinstance(sid, str) and self.session_id is None:
                self.session_id = sid
        return result

    # -- what it left ---------------------------------------------------------------
    def connections(self) -> list[str]:
        """The inet addresses opencode and its children connected to (or tried to)."""
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
