"""The agent table of ingest.agents."""

from __future__ import annotations


def test_agent_of_names_each_readers_formats() -> None:
    from cachediag.ingest import codex, gemini, opencode
    from cachediag.ingest.agents import agent_of

    assert agent_of(codex.FORMAT) == "codex"
    assert agent_of(gemini.FORMAT) == "gemini"
    assert agent_of(opencode.FORMAT) == agent_of(opencode.AUTO_FORMAT) == "opencode"
    for claude_format in ("claude-code", "api-capture", "claude-code-otel", "api-usage"):
        assert agent_of(claude_format) == "claude"


def test_ledger_formats_are_the_readers_formats() -> None:
    from cachediag.analysis import ledgers
    from cachediag.analysis.gemini_cache import analyze_gemini_session
    from cachediag.analysis.openai_cache import analyze_openai_session
    from cachediag.analysis.session_analysis import analyze_session
    from cachediag.ingest import codex, gemini, opencode

    assert {codex.FORMAT, opencode.AUTO_FORMAT} == ledgers.OPENAI_FORMATS
    assert {gemini.FORMAT} == ledgers.GEMINI_FORMATS
    assert ledgers.ledger_for(codex.FORMAT) is analyze_openai_session
    assert ledgers.ledger_for(gemini.FORMAT) is analyze_gemini_session
    assert ledgers.ledger_for(opencode.FORMAT) is analyze_session  # Anthropic's split


def test_agent_named_by_file_name() -> None:
    from cachediag.ingest.agents import agent_named

    assert agent_named("rollout-2026-12-02T04-51-55-01a2.jsonl") == "codex"
    assert agent_named("session-2026-12-02T04-51-ab12cd34.jsonl") == "gemini"
    assert agent_named("opencode.db") == "opencode"
    assert agent_named("0b5e0c8e-1111-2222-3333-444455556666.jsonl") is None
    assert agent_named("agent-a1b2.jsonl") is None
