"""cachediag's tokens and costs per Gemini CLI session against ccusage 20.0.24.

tests/data/ccusage20_gemini_session.json is ``HOME=tests/data/gemini_home ccusage gemini
session --json --offline`` (npm ccusage@20.0.24). ccusage agrees on the session (the three
files are one), its uncached input, cache reads and cost (thoughts at the output price);
its ``outputTokens`` leave the thinking tokens out while its ``totalTokens`` count them,
so cachediag's output (thinking included, as billed) is ccusage's output plus thoughts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachediag.analysis.costs import total_costs
from cachediag.analysis.gemini_cache import analyze_gemini_session
from cachediag.ingest.gemini import GeminiRequest
from cachediag.ingest.gemini_files import read_gemini_home
from cachediag.pricing import price_function

DATA = Path(__file__).parent / "data"


def test_tokens_and_cost_per_session_equal_ccusage_20() -> None:
    pinned = json.loads((DATA / "ccusage20_gemini_session.json").read_text())
    logs = {log.session_id: log for log in read_gemini_home(DATA / "gemini_home")}
    assert set(logs) == {s["sessionId"] for s in pinned["sessions"]}
    for row in pinned["sessions"]:
        log = logs[row["sessionId"]]
        entries = analyze_gemini_session(log, now=2e9).main.entries
        reqs = [e.record for e in entries]
        assert all(isinstance(r, GeminiRequest) for r in reqs)
        thoughts = sum(r.thoughts_tokens for r in reqs if isinstance(r, GeminiRequest))
        assert thoughts > 0  # the difference below is tested, not vacuous
        assert sum(r.input_tokens for r in reqs) == row["inputTokens"]
        assert sum(r.cache_read_tokens for r in reqs) == row["cacheReadTokens"]
        assert sum(r.cache_creation_tokens for r in reqs) == row["cacheCreationTokens"] == 0
        # ccusage's outputTokens omit thinking; its total and cost do not.
        assert sum(r.output_tokens for r in reqs) == row["outputTokens"] + thoughts
        assert sum(r.total_tokens + r.output_tokens for r in reqs) == row["totalTokens"]
        costs = total_costs(entries, price_function())
        assert costs.unpriced_requests == 0
        assert costs.cost_usd == pytest.approx(row["totalCost"], rel=1e-9)
        assert {r.model for r in reqs} == set(row["modelsUsed"])


def test_an_unknown_model_is_unpriced_not_free() -> None:
    [log] = read_gemini_home(DATA / "gemini_home")
    entries = analyze_gemini_session(log, now=2e9).main.entries
    for entry in entries:
        entry.record.model = "gemini-9-unreleased"
    costs = total_costs(entries, price_function())
    assert costs.unpriced_requests == len(entries) and costs.cost_usd == 0.0
