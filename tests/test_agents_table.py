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
