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
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.real_agents.fake_openai import FakeOpenAI
from tests.real_agents.support import MCP_SERVER, AgentSession, Cli, Turn, sealed_env

CODEX = Cli("Codex CLI", "@openai/codex", "0.169.0", "codex", "codex", "CACHEDIAG_CODEX_ROOT")
CODEX_VERSION = CODEX.version
FIRST_MODEL = "gpt-5.5"

# Everything that reaches github.com or chatgpt.com on start is switched off (issue 29).
_FEATURES_OFF = ("plugins", "remote_plugin", "plugin_sharing", "apps", "in_app_updates")


@dataclass
class CodexSession(AgentSession):
    name: str
    retention: float = 2.0
    config_extra: str = ""
    canary: str = field(default_factory=lambda: "sk-canary-" + secrets.token_hex(12))
    thread_id: str | None = None

    def __post_init__(self) -> None:
        self.binary = CODEX.binary()
        if self.binary is None:
            raise FileNotFoundError(f"Codex {CODEX_VERSION} is not installed")
        self.make_root("codex", self.name, "home", "codex-home", "work", "tmp")
        self.home = self.root / "home"
        self.codex_home = self.root / "codex-home"
        self.work = self.root / "work"
        self.fake: FakeOpenAI = FakeOpenAI(retention=self.retention, dump_dir=self.root / "bodies")
        self.serve()

    def __enter__(self) -> CodexSession:
        self._run.__enter__()
        self.write_config()
        return self

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
        return sealed_env(
            self.home,
            self.root / "tmp",
            CODEX_HOME=str(self.codex_home),
            FAKE_OPENAI_API_KEY=self.canary,
        )

    # -- driving -------------------------------------------------------------------
    def turn(self, prompt: str, *args: str, timeout: float = 180) -> Turn:
        assert self.binary is not None
        cmd = [str(self.binary), "exec"]
        if self.thread_id is not None:
            cmd += ["resume", self.thread_id]
        cmd += ["--skip-git-repo-check", "--json", *args, prompt]
        result = self.run_turn(cmd, "codex", timeout)
        for event in result.events():
            if event.get("type") == "thread.started" and self.thread_id is None:
                self.thread_id = str(event.get("thread_id"))
        return result

    # -- what it left ---------------------------------------------------------------
    def rollouts(self) -> list[Path]:
        return sorted(self.codex_home.glob("sessions/*/*/*/rollout-*.jsonl"))
