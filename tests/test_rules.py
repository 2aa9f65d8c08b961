"""One parametrized test over fixtures/rules: each file pins one accounting rule.

The expected values in ``<name>.expected.json`` are worked out by hand (its ``why``
field gives the arithmetic); hit ratios are given as [numerator, denominator].
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachediag.analysis.session_analysis import analyze_session
from cachediag.ingest.discover import sessions_for_file
from cachediag.ingest.reader import read_session
from cachediag.report.serialize import session_dict
from tests.conftest import RULES

CASES = sorted(RULES.glob("*.expected.json"))
NOW = 1_767_225_600.0 + 30


def analyze(path: Path) -> dict[str, Any]:
    log = read_session(sessions_for_file(path))
    return session_dict(analyze_session(log, NOW), requests=True)


@pytest.mark.parametrize("expected_file", CASES, ids=[p.name.split(".")[0] for p in CASES])
def test_rule(expected_file: Path) -> None:
    expected = json.loads(expected_file.read_text())
    out = analyze(expected_file.with_name(expected_file.name.replace(".expected.json", ".jsonl")))
    requests = out["requests"]
    assert [r["outcome"] for r in requests] == expected["outcomes"]
    if "causes" in expected:
        assert [r["causes"] for r in requests] == expected["causes"]
    if "cause_source" in expected:
        assert [r["cause_source"] for r in requests] == expected["cause_source"]
    if "ttl" in expected:
        assert [r["ttl"] for r in requests] == expected["ttl"]
    if "output_tokens" in expected:
        assert [r["output_tokens"] for r in requests] == expected["output_tokens"]
    if "api_errors" in expected:
        assert out["api_errors"] == expected["api_errors"]
    pc = out["prompt_cache"]
    for key, value in expected["prompt_cache"].items():
        if key == "hit_ratio":
            num, den = value
            assert pc[key] == pytest.approx(num / den, abs=1e-12), key
        else:
            assert pc[key] == value, key


def test_every_cause_a_transcript_can_support_has_a_fixture() -> None:
    names = {p.name.split(".")[0] for p in CASES}
    for cause in (
        "ttl_expired_5m",
        "ttl_expired_1h",
        "model_changed",
        "messages_rewritten",
        "tools_changed",
        "likely_server_side",
        "unknown",
    ):
        assert cause in names
