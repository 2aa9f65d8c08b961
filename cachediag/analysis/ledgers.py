"""Which provider's ledger a session is counted by: the format its reader wrote decides.

Claude Code's ledger (``session_analysis``) for every Anthropic log; OpenAI's for Codex
rollouts and opencode's rows in OpenAI's cached-only form; Gemini's for Gemini CLI's
chats. The other ledgers are imported when a session needs one, so a Claude Code run
loads none of them.
"""

from __future__ import annotations

from collections.abc import Callable

from cachediag.analysis.session_analysis import SessionAnalysis, analyze_session
from cachediag.model import SessionLog

Analyzer = Callable[[SessionLog, float], SessionAnalysis]

OPENAI_FORMATS = frozenset({"codex-rollout", "opencode-auto"})
"""``ingest.codex.FORMAT`` and ``ingest.opencode.AUTO_FORMAT`` (tests hold them equal)."""
GEMINI_FORMATS = frozenset({"gemini-cli"})
"""``ingest.gemini.FORMAT``."""


def ledger_for(log_format: str) -> Analyzer:
    if log_format in OPENAI_FORMATS:
        from cachediag.analysis.openai_cache import analyze_openai_session

        return analyze_openai_session
    if log_format in GEMINI_FORMATS:
        from cachediag.analysis.gemini_cache import analyze_gemini_session

        return analyze_gemini_session
    return analyze_session


def analyze_log(log: SessionLog, now: float) -> SessionAnalysis:
    """``log`` analysed by the ledger of the provider that served it."""
    return ledger_for(log.format)(log, now)
