"""Drive the real Codex CLI offline against the local fake Responses API.

One ``CodexSession`` is one fresh Codex thread in throwaway directories: its own HOME,
CODEX_HOME (a ``config.toml`` whose custom model provider's ``base_url`` is the fake),
working folder, fake API and a canary API key. ``turn()`` runs ``codex exec`` (then
``codex exec resume <thread>``), so every turn is a separate process continuing one
thread and one rollout, as a user's scripted runs are. With ``trace_connects`` each turn
runs under ``strace -e connect``, to prove no connection leaves loopback.
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

from tests.real_agents.fake_openai import FakeOpenAI
from tests.real_client.fake_api import Running

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CODEX_VERSION = "0.169.0"
INSTALL_ROOT = Path(os.environ.get("CACHEDIAG_CODEX_ROOT", ROOT / ".cache" / "codex"))
MCP_SERVER = ROOT / "tests" / "real_client" / "mcp_server.py"
FIRST_MODEL = "gpt-5.5"

# Everything that reaches github.com or chatgpt.com on start is switched off (issue 29).
_FEATURES_OFF = ("plugins", "remote_plugin", "plugin_sharing", "apps", "in_app_updates")


def codex_binary(version: str = CODEX_VERSION) -> Path | None:
    """The CLI installed by ``npm install --prefix .cache/codex/<version> @openai/codex``."""
    path = INSTALL_ROOT / version / "node_modules" / ".bin" / "codex"
    return path if path.exists() and os.access(path, os.X_OK) else None


def install_hint(version: str = CODEX_VERSION) -> str:
    return (
        f"npm install --prefix .cache/codex/{version} --no-audit --no-fund @openai/codex@{version}"
    )


@dataclass
class CodexTurn:
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
class CodexSession:
    name: str
    retention: float = 2.0
    keep: bool = False
    trace_connects: bool = False
    config_extra: str = ""
    canary: str = field(default_factory=lambda: "sk-canary-" + secrets.token_hex(12))
    turns: list[CodexTurn] = field(default_factory=list)
    thread_id: str | None = None

    def __post_init__(self) -> None:
        self.binary = codex_binary()
        if self.binary is None:
            raise FileNotFoundError(f"Codex {CODEX_VERSION} is not installed")
        self.root = Path(tempfile.mkdtemp(prefix=f"ra-codex-{self.name}-"))
        self.home = self.root / "home"
        self.codex_home = self.root / "codex-home"
        self.work = self.root / "work"
        for d in (self.home, self.codex_home, self.work, self.root / "tmp"):
            d.mkdir(parents=True)
        self.fake = FakeOpenAI(retention=self.retention, dump_dir=self.root / "bodies")
        self._run = Running(self.fake)  # type: ignore[arg-type]  # duck-typed: app() only

    def __enter__(self) -> CodexSession:
        self._run.__enter__()
        self.write_config()
        return self

    def __exit__(self, *exc: object) -> None:
        self._run.__exit__(None, None, None)

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- set-up --------------------------------------------------------------------
    def write_config(self, mcp: bool = False) -> None:
        lines = [
            f'model = "{FIRST_MODEL}"',
            'model_provider = "fake"',
            "check_for_update_on_startup = false",
            self.config_extra,
            "[model_providers.fake]",
            'name = "fake"',
            f'base_url = "{self._run.url}/v1"',
            'env_key = "FAKE_OPENAI_API_KEY"',
            'wire_api = "responses"',
            "[features]",
            *(f"{name} = false" for name in _FEATURES_OFF),
        ]
        if mcp:
            lines += [
                "[mcp_servers.tickets]",
                f"command = {json.dumps(sys.executable)}",
                f"args = [{json.dumps(str(MCP_SERVER))}]",
            ]
        (self.codex_home / "config.toml").write_text("\n".join(lines) + "\n")

    def env(self) -> dict[str, str]:
        """Codex's whole environment: nothing of the developer's leaks in, and a proxy
        variable at a dead loopback port catches anything that would reach the network."""
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "CODEX_HOME": str(self.codex_home),
            "FAKE_OPENAI_API_KEY": self.canary,
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "TMPDIR": str(self.root / "tmp"),
        }

    # -- driving -------------------------------------------------------------------
    def turn(self, prompt: str, *args: str, timeout: float = 180) -> CodexTurn:
        assert self.binary is not None
        cmd = [str(self.binary), "exec"]
        if self.thread_id is not None:
            cmd += ["resume", self.thread_id]
        cmd += ["--skip-git-repo-check", "--json", *args, prompt]
        if self.trace_connects:
            out = self.root / f"connects.{len(self.turns)}.txt"
            cmd = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(out), *cmd]
        proc = subprocess.run(
            cmd, cwd=self.work, env=self.env(), capture_output=True, text=True,
            timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        result = CodexTurn(cmd, proc.returncode, proc.stdout, proc.stderr)
        self.turns.append(result)
        if proc.returncode != 0:
            raise RuntimeError(f"codex exited {proc.returncode}: {proc.stderr[-2000:]}")
        for event in result.events():
            if event.get("type") == "thread.started" and self.thread_id is None:
                self.thread_id = str(event.get("thread_id"))
        return result

    # -- what it left ---------------------------------------------------------------
    def rollouts(self) -> list[Path]:
        return sorted(self.codex_home.glob("sessions/*/*/*/rollout-*.jsonl"))

    def connections(self) -> list[str]:
        """The inet addresses Codex and its children connected to (or tried to)."""
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
