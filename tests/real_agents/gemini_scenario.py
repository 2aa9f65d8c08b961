"""The Gemini CLI scenario: one session, every turn a separate ``gemini -p`` process.

1. flash, with a tool call (two main-stream requests in one process);
2. flash again (a hit);
3. pro (a model switch), 4. pro again;
5. GEMINI.md changed; 6. an MCP server added (two more tools);
7. a pause past the fake's retention that also crosses into a new minute, so the CLI
   starts a second chat file for the same session.
"""

from __future__ import annotations

import time

from tests.real_agents.gemini_fake import TOOL_MARKER
from tests.real_agents.gemini_harness import GeminiSession

FLASH = "gemini-2.5-flash"
PRO = "gemini-2.5-pro"
RETENTION_S = 8.0
RULES = "Project rules v{n}: answer briefly and name the files you read. "


def _pause_into_next_minute(at_least: float) -> None:
    now = time.time()
    to_next_minute = 60.0 - now % 60.0 + 1.0
    time.sleep(max(at_least, to_next_minute))


def run(session: GeminiSession) -> GeminiSession:
    session.write_instructions(RULES.format(n=1) * 300)
    with session:
        session.turn(f"list the folder {TOOL_MARKER}", FLASH, "--approval-mode", "yolo")
        session.turn("turn two", FLASH)
        session.turn("turn three on pro", PRO)
        session.turn("turn four on pro", PRO)
        session.write_instructions(RULES.format(n=2) * 300)
        session.turn("turn five after GEMINI.md changed", PRO)
        session.write_settings(mcp=True)
        session.turn("turn six with an MCP server", PRO)
        _pause_into_next_minute(RETENTION_S + 4.0)
        session.turn("turn seven after a pause", PRO)
    return session


def new_session(keep: bool = False) -> GeminiSession:
    return GeminiSession("scenario", retention=RETENTION_S, keep=keep, trace_connects=True)


PAUSE_S = 310.0
"""Past the 5 minutes cachediag assumes for Gemini's retention (and the fake's, here)."""


def run_pause(session: GeminiSession) -> GeminiSession:
    """Two flash turns 310 s apart, the fake keeping entries 300 s: cachediag's own
    retention, with no override, names the expiry."""
    session.write_instructions(RULES.format(n=1) * 300)
    with session:
        session.turn("before the pause", FLASH)
        time.sleep(PAUSE_S)
        session.turn("after the pause", FLASH)
    return session


def new_pause_session(keep: bool = False) -> GeminiSession:
    return GeminiSession("pause", retention=300.0, keep=keep)
