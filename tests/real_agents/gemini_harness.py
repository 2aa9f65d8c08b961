"""Drive the real Gemini CLI offline against the local fake Gemini API.

One ``GeminiSession`` is one fresh Gemini CLI chat in throwaway directories: its own HOME
(``~/.gemini/settings.json`` with API-key auth, usage statistics, telemetry, auto-update
and folder trust off), working folder, fake API (``GOOGLE_GEMINI_BASE_URL``) and a canary
``GEMINI_API_KEY``. ``turn()`` runs ``gemini -m MODEL -p PROMPT`` (then with
``--resume latest``), so each turn is a separate non-interactive process continuing one
session, as scripted use does. With ``trace_connects`` each turn runs under
``strace -e connect`` to prove no connection leaves loopback.
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

from tests.real_agents.gemini_fake import FakeGemini
from tests.real_client.fake_api import Running

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
GEMINI_VERSION = "0.61.0"
INSTALL_ROOT = Path(os.environ.get("CACHEDIAG_GEMINI_ROOT", ROOT / ".cache" / "gemini-cli"))
MCP_SERVER = ROOT / "tests" / "real_client" / "mcp_server.py"


def gemini_binary(version: str = GEMINI_VERSION) -> Path | None:
    """The CLI installed by ``npm install --prefix .cache/gemini-cli/<version> ...``."""
    path = INSTALL_ROOT / version / "node_modules" / ".bin" / "gemini"
    return path if path.exists() and os.access(path, os.X_OK) else None


def install_hint(version: str = GEMINI_VERSION) -> str:
    return (
        f"npm install --prefix .cache/gemini-cli/{version} --no-audit --no-fund "
        f"@google/gemini-cli@{version}"
    )


@dataclass
class GeminiTurn:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


@dataclass
class GeminiSession:
    name: str
    retention: float = 3.0
    keep: bool = False
    trace_connects: bool = False
    canary: str = field(default_factory=lambda: "AIza-canary-" + secrets.token_hex(12))
    turns: list[GeminiTurn] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.binary = gemini_binary()
        if self.binary is None:
            raise FileNotFoundError(f"Gemini CLI {GEMINI_VERSION} is not installed")
        self.root = Path(tempfile.mkdtemp(prefix=f"ra-gemini-{self.name}-"))
        self.home = self.root / "home"
        self.work = self.root / "work"
        for d in (self.home / ".gemini", self.work, self.root / "tmp"):
            d.mkdir(parents=True)
        self.fake = FakeGemini(retention=self.retention, dump_dir=self.root / "bodies")
        self._run = Running(self.fake)  # type: ignore[arg-type]  # duck-typed: app() only
        self.write_settings()

    def __enter__(self) -> GeminiSession:
        self._run.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._run.__exit__(None, None, None)

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- set-up --------------------------------------------------------------------
    def write_settings(self, mcp: bool = False, compression_threshold: float | None = None) -> None:
        settings: dict[str, Any] = {
            "security": {
                "auth": {"selectedType": "gemini-api-key"},
                "folderTrust": {"enabled": False},
            },
            "privacy": {"usageStatisticsEnabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "telemetry": {"enabled": False},
        }
        if compression_threshold is not None:
            # A fraction of the model's context window; 0.61 compresses past it.
            settings["model"] = {"compressionThreshold": compression_threshold}
        if mcp:
            settings["mcpServers"] = {
                "tickets": {"command": sys.executable, "args": [str(MCP_SERVER)], "trust": True}
            }
        (self.home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=1))

    def write_instructions(self, text: str) -> None:
        (self.work / "GEMINI.md").write_text(text)

    def env(self) -> dict[str, str]:
        """The CLI's whole environment: nothing of the developer's leaks in, and a proxy
        variable at a dead loopback port catches anything that would reach the network."""
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "GEMINI_API_KEY": self.canary,
            "GOOGLE_GEMINI_BASE_URL": self._run.url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "TMPDIR": str(self.root / "tmp"),
        }

    # -- driving -------------------------------------------------------------------
    def turn(self, prompt: str, model: str, *args: str, timeout: float = 180) -> GeminiTurn:
        assert self.binary is not None
        cmd = [str(self.binary), "-m", model]
        if self.turns:
            cmd += ["--resume", "latest"]
        cmd += [*args, "-p", prompt]
        if self.trace_connects:
            out = self.root / f"connects.{len(self.turns)}.txt"
            cmd = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(out), *cmd]
        proc = subprocess.run(
            cmd, cwd=self.work, env=self.env(), capture_output=True, text=True,
            timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        result = GeminiTurn(cmd, proc.returncode, proc.stdout, proc.stderr)
        self.turns.append(result)
        if proc.returncode != 0:
            raise RuntimeError(f"gemini exited {proc.returncode}: {proc.stderr[-2000:]}")
        return result

    # -- what it left ---------------------------------------------------------------
    def chat_files(self) -> list[Path]:
        return sorted((self.home / ".gemini").glob("tmp/*/chats/session-*.jsonl"))

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
