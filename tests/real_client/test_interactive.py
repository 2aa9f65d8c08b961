"""The interactive Claude Code UI in tmux, with `cachediag statusline` as its statusLine.

Claude Code draws the status line itself from what the command prints; capture-pane shows
what the user sees. The statusLine command also keeps every payload Claude Code pipes to it
(they are the real shape that tests/real_client/views.payload_for imitates for -p runs).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from tests.real_client.harness import Session, versions
from tests.real_client.scenarios import Run
from tests.real_client.test_real_client import require_cli
from tests.real_client.views import files_under

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        os.environ.get("CACHEDIAG_PURE_PYTHON") == "1",
        reason="the real-client suite runs once per CI run (in the compiled pass)",
    ),
]

SWITCH_TO = "claude-sonnet-4-5"
PROMPT = "\u276f"  # the input box's prompt character
ONE_MISS = re.compile(r"\b1 miss\b")
LINE = re.compile(r"cache (\d+%|cold|warm)[^\n]*")


class Pane:
    def __init__(self, name: str) -> None:
        self.name = name

    def text(self) -> str:
        out = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        )
        return out.stdout

    def send(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def type_line(self, text: str) -> None:
        # Typed text and Enter apart: the UI takes a pasted burst ending in Enter as text.
        self.send("-l", text)
        time.sleep(0.5)
        self.send("Enter")


def wait_for(what: str, check: Callable[[], Any], pane: Pane, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}; the pane shows:\n{pane.text()}")


def payloads(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a payload still being written
    return out


@pytest.fixture
def tmux() -> Iterator[None]:
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is not installed, but .ci/run installs it")
        pytest.skip("tmux is not installed")
    yield


@pytest.mark.parametrize("version", versions())
def test_claude_code_draws_cachediags_line_after_a_turn_and_after_model(
    version: str, tmux: None, all_runs: dict[tuple[str, str], Future[Run]]
) -> None:
    """(all_runs: the scenarios start first and run meanwhile.)"""
    require_cli(version)
    s = Session(version, "interactive")
    name = f"realclient-{os.getpid()}-{version.replace('.', '-')}"
    try:
        s.start()
        status = (
            f"tee -a {shlex.quote(str(s.payloads))} | "
            f"{shlex.quote(sys.executable)} -m cachediag statusline --no-color; "
            f"printf '\\n' >> {shlex.quote(str(s.payloads))}"
        )
        s.write_settings({"statusLine": {"type": "command", "command": status}})
        # What the first-run dialogs would ask: theme, this API key, trusting the folder.
        (s.config / ".claude.json").write_text(
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "customApiKeyResponses": {"approved": [s.canary[-20:]], "rejected": []},
                    "projects": {
                        str(s.work): {
                            "hasTrustDialogAccepted": True,
                            "hasCompletedProjectOnboarding": True,
                        }
                    },
                }
            )
        )
        env = s.env({"TERM": "xterm-256color", "COLUMNS": "200"})
        assignments = [f"{k}={shlex.quote(v)}" for k, v in env.items()]
        claude = [shlex.quote(str(s.binary)), "--session-id", s.session_id]
        command = " ".join(["env", "-i", *assignments, *claude])
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", name, "-x", "200", "-y", "50", "-c",
             str(s.work), command + "; sleep 600"],
            check=True,
        )  # fmt: skip
        pane = Pane(name)
        wait_for("the prompt", lambda: PROMPT in pane.text(), pane)
        first = wait_for("the first status payload", lambda: payloads(s.payloads), pane)[0]
        # Before the first response: no transcript yet, no prompt_cache object.
        assert first.get("prompt_cache") is None
        assert not Path(first["transcript_path"]).exists() or first["transcript_path"]

        pane.type_line("Say hello.")
        after_turn = wait_for(
            "cachediag's line after the first turn",
            lambda: (m := LINE.search(pane.text())) and s.fake.truth and m.group(0),
            pane,
        )
        pane.type_line(f"/model {SWITCH_TO}")
        # The UI asks before dropping a warm cache; the first choice switches.
        wait_for("the model switch", lambda: "Switch model?" in pane.text() or
                 "Set model to" in pane.text(), pane)  # fmt: skip
        if "Switch model?" in pane.text():
            pane.send("Enter")
        wait_for("the switch to apply", lambda: "Set model to" in pane.text(), pane)
        after_model = LINE.search(pane.text())
        pane.type_line("After the switch.")
        wait_for(
            "the turn on the new model",
            lambda: any(t.model == SWITCH_TO and t.stream == "main" for t in s.fake.truth),
            pane,
        )
        final = wait_for(
            "the line after the switched turn",
            lambda: (m := LINE.search(pane.text())) and ONE_MISS.search(m.group(0)) and m.group(0),
            pane,
        )
        screen = pane.text()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        s.stop()
    seen = payloads(s.payloads)
    save = Path(os.environ.get("REALCLIENT_SAMPLES", "/tmp/realclient-samples"))
    if save.parent.is_dir():
        out = save / f"interactive-{version}"
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(s.payloads, out / "statusline-payloads.jsonl")
        (out / "screen.txt").write_text(screen)
        (out / "truth.json").write_text(json.dumps([t.as_json() for t in s.fake.truth], indent=1))
    truth = s.fake.truth
    assert [t.model for t in truth][-1] == SWITCH_TO
    assert truth[-1].outcome == "miss"
    assert "cache" in after_turn and "?" not in after_turn, after_turn
    assert after_model is not None, screen
    # The status line ran in Claude Code's environment (the canary key in it): its state.
    written = files_under(s.home / ".cache" / "cachediag", s.captures)
    assert written
    for path in written:
        assert s.canary.encode() not in path.read_bytes(), path
    s.cleanup()
    # Claude Code's own object (2.1.251+) is what cachediag shows when it is sent.
    own = [p["prompt_cache"] for p in seen if p.get("prompt_cache")]
    assert own and own[-1]["requests"] == 2 and own[-1]["misses"] == 1, own[-1:]
    assert ONE_MISS.search(final), final
    # Claude Code names no cause for this miss when the API reports none (its object's
    # last_miss_cause is null): cachediag names it from the transcript.
    assert "last: model_changed" in final, final
