"""Drive the real Claude Code CLI through ``cachediag proxy`` against the local fake API.

One ``Session`` is one fresh Claude Code session in throwaway directories: its own HOME,
CLAUDE_CONFIG_DIR, working folder, fake API, proxy (a subprocess, loopback only, its own
--log-dir) and a canary API key. ``turn()`` runs ``claude -p`` (``--session-id`` on the
first turn, ``--resume`` after), so every turn is a separate process continuing one
session and one transcript, as a user's scripted runs are.
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
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.real_client.fake_api import FakeAnthropic, Running

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VERSIONS_FILE = HERE / "versions.txt"
INSTALL_ROOT = Path(os.environ.get("CACHEDIAG_CLAUDE_CODE_ROOT", ROOT / ".cache" / "claude-code"))
MCP_SERVER = HERE / "mcp_server.py"


def versions() -> list[str]:
    """The Claude Code releases the suite runs on: tests/real_client/versions.txt, which
    .ci/run reads too (one line each; '#' starts a comment)."""
    out = []
    for line in VERSIONS_FILE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def claude_binary(version: str) -> Path | None:
    """The CLI installed by ``npm install --prefix .cache/claude-code/<version>``.

    The npm package's bin/claude.exe is the native binary; npm 11 does not run its
    postinstall script unless allowed, so the platform package's copy is the fallback."""
    base = INSTALL_ROOT / version / "node_modules" / "@anthropic-ai"
    for candidate in (
        base / "claude-code" / "bin" / "claude.exe",
        base / "claude-code-linux-x64" / "claude",
        base / "claude-code-linux-arm64" / "claude",
    ):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


@dataclass
class TurnResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict[str, Any]:
        text = self.stdout.strip().splitlines()
        return json.loads(text[-1]) if text else {}


@dataclass
class Session:
    version: str
    name: str
    keep: bool = False
    root: Path = field(init=False)
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    canary: str = field(default_factory=lambda: "sk-ant-canary-" + secrets.token_hex(12))
    turns: list[TurnResult] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # what cachediag printed about it
    trace_connects: bool = False  # run each turn under strace -e connect

    def __post_init__(self) -> None:
        self.binary = claude_binary(self.version)
        if self.binary is None:
            raise FileNotFoundError(f"Claude Code {self.version} is not installed")
        self.root = Path(tempfile.mkdtemp(prefix=f"rc-{self.name}-"))
        self.home = self.root / "home"
        self.config = self.root / "config"
        self.work = self.root / "work"
        self.captures = self.root / "captures"
        self.state = self.root / "state"  # XDG dirs of the cachediag commands run on it
        self.payloads = self.root / "statusline-payloads.jsonl"
        for d in (self.home, self.config, self.work, self.state):
            d.mkdir(parents=True)
        self.fake = FakeAnthropic(dump_dir=self.root / "bodies")
        self._fake_run = Running(self.fake)
        self.proxy: subprocess.Popen[str] | None = None
        self.base_url = ""
        self.write_settings()

    # -- set-up --------------------------------------------------------------------
    def write_settings(self, extra: dict[str, Any] | None = None) -> None:
        """settings.json: a statusLine command that keeps every payload Claude Code pipes
        to it (only the interactive UI runs it), and permission for the scripted Bash."""
        tee = f"cat >> {self.payloads}; printf '\\n' >> {self.payloads}; echo realclient"
        settings: dict[str, Any] = {
            "statusLine": {"type": "command", "command": tee},
            "permissions": {"allow": ["Bash(echo realclient)", "Bash(echo:*)"]},
        }
        settings.update(extra or {})
        (self.config / "settings.json").write_text(json.dumps(settings, indent=1))

    def start(self) -> Session:
        self._fake_run.__enter__()
        env = {**os.environ, "XDG_STATE_HOME": str(self.state / "xdg-state")}
        self.proxy = subprocess.Popen(
            [sys.executable, "-m", "cachediag", "proxy", "--listen", "127.0.0.1:0",
             "--upstream", self._fake_run.url, "--log-dir", str(self.captures)],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
        )  # fmt: skip
        assert self.proxy.stderr is not None
        ready = self.proxy.stderr.readline()
        if "ANTHROPIC_BASE_URL=" not in ready:
            self.proxy.kill()
            rest = self.proxy.stderr.read()
            raise RuntimeError(f"the proxy did not start: {ready}{rest[-3000:]}")
        self.base_url = ready.split("ANTHROPIC_BASE_URL=")[1].strip()
        return self

    def stop(self) -> str:
        """Stop the proxy (SIGTERM: it finishes its writes) and the fake; its stderr."""
        rest = ""
        if self.proxy is not None and self.proxy.poll() is None:
            self.proxy.terminate()
            try:
                _, rest = self.proxy.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.proxy.kill()
                _, rest = self.proxy.communicate()
        self._fake_run.__exit__(None, None, None)
        return rest or ""

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- driving -------------------------------------------------------------------
    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """Claude Code's whole environment: nothing of the developer's or CI's leaks in,
        and everything that could reach the network is off or pointed at loopback."""
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.config),
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": self.canary,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            # A proxy variable would send calls elsewhere; a dead loopback one for the rest.
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "TMPDIR": str(self.root / "tmp"),
        }
        (self.root / "tmp").mkdir(exist_ok=True)
        env.update(extra or {})
        return env

    def turn(
        self, prompt: str, *args: str, env: dict[str, str] | None = None, timeout: float = 180
    ) -> TurnResult:
        assert self.binary is not None
        first = not self.turns
        cmd = [str(self.binary), "-p", prompt, "--output-format", "json"]
        cmd += ["--session-id", self.session_id] if first else ["--resume", self.session_id]
        cmd += list(args)
        if self.trace_connects:
            # Every connect() of Claude Code and its children, to prove none leaves loopback.
            out = self.root / f"connects.{len(self.turns)}.txt"
            cmd = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(out), *cmd]
        proc = subprocess.run(
            cmd, cwd=self.work, env=self.env(env), capture_output=True, text=True,
            timeout=timeout, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        result = TurnResult(cmd, proc.returncode, proc.stdout, proc.stderr)
        self.turns.append(result)
        if proc.returncode != 0:
            raise RuntimeError(
                f"claude {' '.join(cmd[1:4])} exited {proc.returncode}: "
                f"{proc.stderr[-2000:]} {proc.stdout[-2000:]}"
            )
        return result

    def mcp_config(self) -> Path:
        path = self.root / "mcp.json"
        server = {"type": "stdio", "command": sys.executable, "args": [str(MCP_SERVER)]}
        path.write_text(json.dumps({"mcpServers": {"realclient": server}}))
        return path

    def advance_clock(self, seconds: float) -> None:
        req = urllib.request.Request(
            self._fake_run.url + "/_fake/advance",
            data=json.dumps({"seconds": seconds}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()

    # -- what it left ---------------------------------------------------------------
    def transcript(self) -> Path:
        found = sorted(self.config.glob(f"projects/*/{self.session_id}.jsonl"))
        if not found:
            raise FileNotFoundError(f"no transcript for {self.session_id} in {self.config}")
        return found[0]

    def connections(self) -> list[str]:
        """The inet addresses Claude Code connected to (or tried to), from strace."""
        found = []
        for path in sorted(self.root.glob("connects.*.txt")):
            for line in path.read_text(errors="replace").splitlines():
                m = re.search(
                    r'sin6?_addr=inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"', line
                )
                if m and "connect(" in line:
                    found.append(m.group(1) or m.group(2))
        return found

    def transcript_text(self) -> str:
        """The session's transcript and its subagents' (the session's own folder)."""
        main = self.transcript()
        files = [main, *sorted(main.with_suffix("").rglob("*.jsonl"))]
        return "\n".join(p.read_text() for p in files)

    def capture_files(self) -> list[Path]:
        """The proxy's day files (the folder also holds its marker file)."""
        return sorted(p for p in self.captures.glob("*.jsonl") if p.is_file())

    def truth(self) -> list[dict[str, Any]]:
        return [t.as_json() for t in self.fake.truth]
