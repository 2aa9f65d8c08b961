"""The Codex scenarios: each one fresh thread, several ``codex exec`` turns.

``python -m tests.real_agents.codex_scenarios DIR`` runs them and keeps each one's
CODEX_HOME, request bodies and ground truth under ``DIR/<scenario>/``.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from tests.real_agents.codex_harness import CodexSession

HIGH = ("-c", 'model_reasoning_effort="high"')


def changes(s: CodexSession) -> None:
    """Every change in one thread: a tool call, effort, AGENTS.md, an instructions file,
    an MCP server, a pause past the fake's retention, a model switch that makes Codex
    compact, another model switch."""
    s.trace_connects = True
    s.turn("hello")
    s.turn("turn two")
    s.turn("RUN-SHELL: a tool call, two requests in one turn")
    s.turn("effort change", *HIGH)
    (s.work / "AGENTS.md").write_text("# Rules\nAnswer briefly.\n")
    s.turn("agents md written", *HIGH)
    # Codex records no trace of this in the rollout: the miss can only be ``unknown``.
    instructions = s.root / "instructions.md"
    instructions.write_text("You are a test agent. Answer in one line.\n" * 600)
    own = (*HIGH, "-c", f"model_instructions_file={json.dumps(str(instructions))}")
    s.turn("instructions file", *own)
    s.write_config(mcp=True)
    s.turn("mcp server added", *own)
    time.sleep(s.retention + 2.0)
    s.turn("after a pause", *own)
    s.trace_connects = False
    s.turn("switch to a model of another family", "-m", "gpt-5.6-sol")
    s.turn("switch within the family", "-m", "gpt-5.6-terra")
    s.turn("one more", "-m", "gpt-5.6-terra")


def pause(s: CodexSession) -> None:
    """A pause past the 5-minute retention cachediag assumes for gpt-5.5 (and the fake's)."""
    s.turn("hello")
    s.turn("turn two")
    time.sleep(310)
    s.turn("after five minutes")


SCENARIOS: dict[str, tuple[Callable[[CodexSession], None], float]] = {
    "changes": (changes, 8.0),
    "pause": (pause, 300.0),
}


def run_scenario(name: str, keep: bool = False) -> CodexSession:
    script, retention = SCENARIOS[name]
    session = CodexSession(name, retention=retention, keep=keep)
    with session:
        script(session)
    return session


def run_all(
    names: list[str], keep: bool = False
) -> tuple[ThreadPoolExecutor, dict[str, Future[CodexSession]]]:
    pool = ThreadPoolExecutor(max_workers=len(names) or 1)
    return pool, {n: pool.submit(run_scenario, n, keep) for n in names}


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    names = argv[1:] or list(SCENARIOS)
    pool, futures = run_all(names, keep=True)
    with pool:
        for name, fut in futures.items():
            session = fut.result()
            dest = out / name
            shutil.copytree(session.root, dest, dirs_exist_ok=True, symlinks=True)
            (dest / "truth.json").write_text(json.dumps(session.truth(), indent=1))
            session.cleanup()
            print(dest)


if __name__ == "__main__":
    main(sys.argv[1:])
