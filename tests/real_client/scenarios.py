"""The scenarios: each one fresh Claude Code session driven turn by turn.

Every scenario is a function of a started ``Session``; what it expects is not written
here: the tests compare cachediag's account with the fake's ground truth, which the fake
derives from the bodies it received. ``python -m tests.real_client.scenarios DIR`` runs
them all and keeps one sample of each (transcript, capture log, request bodies, ground
truth) under DIR, for whoever works on the readers.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.real_client.harness import Session, claude_binary, versions

# Over Claude Code's 5-minute TTL, with margin for a slow machine's start-up.
PAUSE_S = 310.0
SWITCH_MODEL = "claude-sonnet-4-5"
NO_TOOL_SEARCH = {"ENABLE_TOOL_SEARCH": "false"}


def plain(s: Session) -> None:
    s.trace_connects = shutil.which("strace") is not None
    s.turn("Say hello.")
    s.turn("RUN-BASH: run the echo command.")  # two requests: tool_use, then its result
    s.turn("Thanks, one more answer.")


def mcp_no_tool_search(s: Session) -> None:
    s.turn("Say hello.", env=NO_TOOL_SEARCH)
    s.turn("Now with the MCP tools.", "--mcp-config", str(s.mcp_config()), env=NO_TOOL_SEARCH)


def server_diagnostics(s: Session) -> None:
    """The MCP miss again, with the fake reporting cache_miss_reason as the API can: the
    transcript then carries the server's cause."""
    s.fake.diagnostics = True
    mcp_no_tool_search(s)


def mcp_deferred(s: Session) -> None:
    s.turn("Say hello.")
    s.turn("Now with the MCP tools.", "--mcp-config", str(s.mcp_config()))


def model_switch(s: Session) -> None:
    s.turn("Say hello.")
    s.turn("Another model now.", "--model", SWITCH_MODEL)


def append_no_snapshot(s: Session) -> None:
    s.turn("Say hello.", "--system-prompt-snapshot", "off")
    s.turn(
        "With an extra rule.",
        "--append-system-prompt", "REALCLIENT EXTRA RULE: answer briefly.",
        "--system-prompt-snapshot", "off",
    )  # fmt: skip


def append_snapshot(s: Session) -> None:
    s.turn("Say hello.")
    s.turn("With an extra rule.", "--append-system-prompt", "REALCLIENT EXTRA RULE.")


def compact(s: Session) -> None:
    s.turn("Say hello.")
    s.turn("RUN-BASH: run the echo command.")
    s.turn("/compact")
    s.turn("After the compaction.")


def subagent(s: Session) -> None:
    s.turn("RUN-AGENT: ask a helper agent.")
    s.turn("Thanks.")


def pause(s: Session) -> None:
    s.turn("Say hello.")
    # Real waiting: Claude Code, the proxy and the transcript all use the machine's clock
    # (the fake's own clock could be moved, but then cachediag would see no idle gap).
    time.sleep(PAUSE_S)
    s.turn("After a long pause.")


SCENARIOS: dict[str, Callable[[Session], None]] = {
    "plain": plain,
    "mcp_no_tool_search": mcp_no_tool_search,
    "server_diagnostics": server_diagnostics,
    "mcp_deferred": mcp_deferred,
    "model_switch": model_switch,
    "append_no_snapshot": append_no_snapshot,
    "append_snapshot": append_snapshot,
    "compact": compact,
    "subagent": subagent,
    "pause": pause,
}


@dataclass
class Run:
    """A finished scenario: its session (stopped, files kept) and any error."""

    version: str
    name: str
    session: Session
    proxy_stderr: str = ""
    error: str | None = None


def run(version: str, name: str) -> Run:
    session = Session(version, name)
    out = Run(version, name, session)
    try:
        session.start()
        SCENARIOS[name](session)
    except Exception as exc:  # reported by the test that reads this run
        out.error = f"{type(exc).__name__}: {exc}"
    finally:
        out.proxy_stderr = session.stop()
    return out


def run_all(
    pairs: list[tuple[str, str]], workers: int = 3
) -> tuple[list[ThreadPoolExecutor], dict[tuple[str, str], Future[Run]]]:
    """Start every (version, scenario); the pauses first, so the suite waits for them
    once while the others run. The caller shuts both pools down: an idle worker thread
    left alive would stop ``parallel.map_ordered`` forking for the rest of the run."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="realclient")
    ordered = sorted(pairs, key=lambda p: p[1] != "pause")
    pauses = [p for p in ordered if p[1] == "pause"]
    # The pauses mostly sleep: give them their own threads so they hold no worker.
    side = ThreadPoolExecutor(max_workers=max(1, len(pauses)), thread_name_prefix="pause")
    futures = {p: (side if p[1] == "pause" else pool).submit(run, *p) for p in ordered}
    return [pool, side], futures


def save_sample(r: Run, dest: Path) -> None:
    """One scenario's raw material: transcript(s), capture log, bodies, ground truth."""
    s = r.session
    out = dest / r.version / r.name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    projects = s.config / "projects"
    if projects.is_dir():
        shutil.copytree(projects, out / "projects")
    if s.captures.is_dir():
        shutil.copytree(s.captures, out / "captures")
    if (s.root / "bodies").is_dir():
        shutil.copytree(s.root / "bodies", out / "bodies")
    if s.payloads.exists():
        shutil.copy(s.payloads, out / "statusline-payloads.jsonl")
    meta: dict[str, Any] = {
        "version": r.version,
        "scenario": r.name,
        "session_id": s.session_id,
        "error": r.error,
        "turns": [{"args": t.args, "rc": t.returncode, "stdout": t.stdout} for t in s.turns],
    }
    (out / "truth.json").write_text(json.dumps(s.truth(), indent=1))
    (out / "meta.json").write_text(json.dumps(meta, indent=1))


def main(argv: list[str]) -> int:
    dest = Path(argv[0])
    names = argv[1:] or list(SCENARIOS)
    pairs = [(v, n) for v in versions() if claude_binary(v) for n in names]
    pools, futures = run_all(pairs)
    failed = 0
    for (version, name), fut in futures.items():
        r = fut.result()
        save_sample(r, dest)
        r.session.cleanup()
        failed += r.error is not None
        print(version, name, r.error or "ok", flush=True)
    for pool in pools:
        pool.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
