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
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.real_agents.opencode_fake import FakeProvider
from tests.real_agents.support import MCP_SERVER, AgentSession, Cli, Turn, sealed_env

OPENCODE = Cli(
    "opencode", "opencode-ai", "1.18.33", "opencode", "opencode", "CACHEDIAG_OPENCODE_ROOT"
)
OPENCODE_VERSION = OPENCODE.version
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


@dataclass
class OpencodeSession(AgentSession):
    name: str
    provider: str = "fakeoa"
    retention: float = 300.0
    context_limit: int = 200000
    """The models' context window in the config: a small one makes opencode compact."""
    canary: str = field(default_factory=lambda: "sk-canary-" + secrets.token_hex(12))
    session_id: str | None = None

    def __post_init__(self) -> None:
        self.binary = OPENCODE.binary()
        if self.binary is None:
            raise FileNotFoundError(f"opencode {OPENCODE_VERSION} is not installed")
        self.make_root(
            "opencode", self.name, "home", "config", "data", "state", "cache", "work", "tmp"
        )
        self.home = self.root / "home"
        self.work = self.root / "work"
        self.fake: FakeProvider = FakeProvider(
            retention=self.retention, dump_dir=self.root / "bodies"
        )
        self.serve()

    def __enter__(self) -> OpencodeSession:
        self._run.__enter__()
        self.write_config()
        return self

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
        return sealed_env(
            self.home,
            self.root / "tmp",
            XDG_CONFIG_HOME=str(self.root / "config"),
            XDG_DATA_HOME=str(self.data_home),
            XDG_STATE_HOME=str(self.root / "state"),
            XDG_CACHE_HOME=str(self.root / "cache"),
            FAKE_API_KEY=self.canary,
            **_QUIET,
        )

    # -- driving -------------------------------------------------------------------
    def turn(self, prompt: str, *args: str, timeout: float = 180) -> Turn:
        assert self.binary is not None
        cmd = [str(self.binary), "run", "--format", "json"]
        if self.session_id is not None:
            cmd += ["--session", self.session_id]
        cmd += [*args, prompt]
        result = self.run_turn(cmd, "opencode", timeout)
        for event in result.events():
            sid = event.get("sessionID")
            if isinstance(sid, str) and self.session_id is None:
                self.session_id = sid
        return result
