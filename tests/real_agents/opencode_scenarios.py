"""The opencode scenarios of the real-agent suite: each is a list of turns in one session.

``changes`` (chat completions, fake retention 90 s; each turn is a new process, 5-15 s
apart, more on a loaded machine): hello (with opencode's title call); a hit; AGENTS.md
written (the system prompt changes: a miss the database cannot explain); a turn whose
answer calls the ``read`` tool (two model calls, two assistant messages); an MCP server
added (its two tools sort in after most built-in ones, so less than the miss rule's
2,000 tokens is reprocessed: a hit); ``-m fakeoa/gpt-5.4`` (a miss: ``model_changed``);
a pause past the fake's retention, inside OpenAI's (a miss: ``unknown`` on the database's
evidence); a hit. Its first three turns run under ``strace -e connect``.

``anthropic`` (Messages, fake retention 300 s, as Anthropic's 5 minutes): hello; a hit;
``-m fakean/claude-opus-4-5`` (``model_changed``); a real 305 s pause (``ttl_expired_5m``).

``compact`` (chat completions, a 9,000-token context window): three long turns; each
answer overflows the window, so opencode summarises (a call without tools, its own
stream), then continues on the summary, whose system prompt and tools are still read.

``subagent`` (chat completions): hello; a turn whose answer calls the ``task`` tool, so a
``general`` subagent runs one call in a child session (``parent_id``), then the answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from tests.real_agents.opencode_harness import OpencodeSession

CHANGES_RETENTION = 90.0
PAUSE_S = 305.0


def changes(keep: bool = False) -> OpencodeSession:
    s = OpencodeSession("changes", "fakeoa", retention=CHANGES_RETENTION, keep=keep)
    s.trace_connects = True
    with s:
        s.turn("Say hello for the test.")
        s.turn("Reply briefly again.")
        (s.work / "AGENTS.md").write_text("# Project rules\n\nAnswer in one short sentence.\n")
        s.turn("Rules are in place now.")
        s.trace_connects = False
        s.turn(f"Read the notes. USE_TOOL:{s.work / 'AGENTS.md'}")
        s.write_config(mcp=True)
        s.turn("A tickets server is configured now.")
        s.turn("Same question on another model.", "-m", "fakeoa/gpt-5.4")
        time.sleep(CHANGES_RETENTION + 5)
        s.turn("Back after a pause.", "-m", "fakeoa/gpt-5.4")
        s.turn("And once more.", "-m", "fakeoa/gpt-5.4")
    return s


def anthropic(keep: bool = False) -> OpencodeSession:
    s = OpencodeSession("anthropic", "fakean", retention=300.0, keep=keep)
    with s:
        s.turn("Say hello for the test.")
        s.turn("Reply briefly again.")
        s.turn("Same question on another model.", "-m", "fakean/claude-opus-4-5")
        time.sleep(PAUSE_S)
        s.turn("Back after a long pause.", "-m", "fakean/claude-opus-4-5")
    return s


def compact(keep: bool = False) -> OpencodeSession:
    s = OpencodeSession("compact", "fakeoa", retention=300.0, context_limit=9000, keep=keep)
    with s:
        for i in range(3):
            s.turn(f"Turn {i}: reply briefly. " + "padding words " * 150)
    return s


def subagent(keep: bool = False) -> OpencodeSession:
    s = OpencodeSession("subagent", "fakeoa", retention=300.0, keep=keep)
    with s:
        s.turn("Say hello for the test.")
        s.turn("Delegate this. USE_TASK")
    return s


SCENARIOS: dict[str, Callable[[], OpencodeSession]] = {
    "changes": changes,
    "anthropic": anthropic,
    "compact": compact,
    "subagent": subagent,
}


def run_all(names: list[str]) -> tuple[ThreadPoolExecutor, dict[str, Future[OpencodeSession]]]:
    pool = ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="opencode-scenario")
    return pool, {name: pool.submit(SCENARIOS[name]) for name in names}


if __name__ == "__main__":  # a kept run: python -m tests.real_agents.opencode_scenarios NAME
    import json
    import sys

    for name in sys.argv[1:] or list(SCENARIOS):
        session = SCENARIOS[name]()
        print(name, session.root, session.session_id)
        print(json.dumps(session.truth(), indent=0))
