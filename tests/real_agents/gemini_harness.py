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
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.real_agents.gemini_fake import FakeGemini
from tests.real_agents.support import MCP_SERVER, AgentSession, Cli, Turn, sealed_env

GEMINI = Cli(
    "Gemini CLI", "@google/gemini-cli", "0.61.0", "gemini-cli", "gemini", "CACHEDIAG_GEMINI_ROOT"
)
GEMINI_VERSION = GEMINI.version


@dataclass
class GeminiSession(AgentSession):
    name: str
    retention: float = 3.0
    canary: str = field(default_factory=lambda: "AIza-canary-" + secrets.token_hex(12))

    def __post_init__(self) -> None:
        self.binary = GEMINI.binary()
        if self.binary is None:
            raise FileNotFoundError(f"Gemini CLI {GEMINI_VERSION} is not installed")
        self.make_root("gemini", self.name, "home/.gemini", "work", "tmp")
        self.home = self.root / "home"
        self.work = self.root / "work"
        self.fake: FakeGemini = FakeGemini(retention=self.retention, dump_dir=self.root / "bodies")
        self.serve()
        self.write_settings()

    def __enter__(self) -> GeminiSession:
        self._run.__enter__()
        return self

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
        return sealed_env(
            self.home,
            self.root / "tmp",
            GEMINI_API_KEY=self.canary,
            GOOGLE_GEMINI_BASE_URL=self._run.url,
            GEMINI_CLI_NO_RELAUNCH="true",
        )

    # -- driving -------------------------------------------------------------------
    def turn(self, prompt: str, model: str, *args: str, timeout: float = 180) -> Turn:
        assert self.binary is not None
        cmd = [str(self.binary), "-m", model]
        if self.turns:
            cmd += ["--resume", "latest"]
        cmd += [*args, "-p", prompt]
        return self.run_turn(cmd, "gemini", timeout)

    # -- what it left ---------------------------------------------------------------
    def chat_files(self) -> list[Path]:
        return sorted((self.home / ".gemini").glob("tmp/*/chats/session-*.jsonl"))
