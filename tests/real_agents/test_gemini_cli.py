"""The real Gemini CLI (0.61.0) offline against the fake Gemini API: cachediag's ledger from
the files the CLI wrote agrees with the fake's ground truth (tests/real_agents/gemini_*)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from cachediag.analysis.gemini_cache import analyze_gemini_session
from cachediag.analysis.ledger import LedgerEntry
from cachediag.ingest.gemini_files import read_gemini_home
from tests.real_agents import gemini_scenario
from tests.real_agents.gemini_harness import GEMINI, GeminiSession
from tests.real_agents.support import assert_loopback_only, scenario_runs

# What the file can show of each part the fake says changed, and the names it allows.
EVIDENCED = {
    "model": {"model_changed"},
    "contents": {"messages_rewritten", "system_prompt_changed"},
    "expired": {"ttl_expired_5m"},
}


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, Future[GeminiSession]]]:
    """Both scenarios, started together (the 310 s pause alongside the rest)."""

    def start() -> tuple[ThreadPoolExecutor, dict[str, Future[GeminiSession]]]:
        pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gemini-scenario")
        return pool, {
            "main": pool.submit(gemini_scenario.run, gemini_scenario.new_session()),
            "pause": pool.submit(gemini_scenario.run_pause, gemini_scenario.new_pause_session()),
        }

    yield from scenario_runs(GEMINI, start)


@pytest.fixture(scope="module")
def session(runs: dict[str, Future[GeminiSession]]) -> GeminiSession:
    return runs["main"].result()


def _entries(session: GeminiSession) -> list[LedgerEntry]:
    [log] = read_gemini_home(session.home)
    assert log.issues == [] and log.unreadable == []
    analysis = analyze_gemini_session(log, retention_s=gemini_scenario.RETENTION_S)
    return analysis.main.entries


def test_nothing_leaves_loopback(session: GeminiSession) -> None:
    assert_loopback_only(session)
    assert session.fake.keys == {session.canary}
    assert session.fake.other == []  # no call but the model's


def test_every_main_request_is_in_the_ledger_with_its_tokens(session: GeminiSession) -> None:
    truth = [t for t in session.truth() if t["kind"] == "stream"]
    entries = _entries(session)
    assert len(truth) == 8  # the scenario's turns plus the tool call's answer
    got = [
        (e.record.model, e.record.total_tokens, e.record.cache_read_tokens,
         e.record.output_tokens)
        for e in entries
    ]  # fmt: skip
    want = [
        (t["model"], t["prompt_tokens"], t["cached_tokens"],
         t["output_tokens"] + t["thoughts_tokens"])
        for t in truth
    ]  # fmt: skip
    assert got == want


def _allowed(truth: dict[str, Any]) -> set[str]:
    named = set().union(*(EVIDENCED.get(part, set()) for part in truth["changed"]))
    return named or {"unknown"}


def test_every_miss_is_found_and_named_only_from_evidence(session: GeminiSession) -> None:
    truth = [t for t in session.truth() if t["kind"] == "stream"]
    entries = _entries(session)
    for t, e in zip(truth, entries, strict=True):
        outcome = e.outcome.value
        assert outcome == t["outcome"], (t, outcome)
        if outcome != "miss":
            continue
        assert e.diagnosis is not None
        causes = {c.value for c in e.diagnosis.causes}
        assert causes <= _allowed(t), (t["changed"], causes)
    changed = [t["changed"] for t in truth if t["outcome"] == "miss"]
    # The scenario's changes, as the fake saw them (the fixture test pins the causes);
    # the CLI's own system instruction may change with them (its skills list comes in
    # no fixed order from one process to the next).
    for part in ("model", "tools", "contents", "expired"):
        assert any(part in c for c in changed), (part, changed)


def test_a_resume_in_a_new_minute_is_one_session(session: GeminiSession) -> None:
    files = session.chat_files()
    assert len(files) >= 2  # the pause crossed a minute
    assert len(read_gemini_home(session.home)) == 1


def _has_agent_option() -> bool:
    out = subprocess.run(
        [sys.executable, "-m", "cachediag", "analyze", "--help"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return "--agent" in out.stdout


def test_analyze_agent_gemini_reads_the_home(session: GeminiSession) -> None:
    if not _has_agent_option():
        pytest.skip("cachediag analyze has no --agent yet (issue 29, the CLI part)")
    env = {**os.environ, "HOME": str(session.home)}
    env.pop("GEMINI_CLI_HOME", None)
    out = subprocess.run(
        [sys.executable, "-m", "cachediag", "analyze", "--agent", "gemini", "--json",
         "--requests", "--no-captures"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    # One session, however many files the CLI wrote for it.
    [row] = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert row["format"] == "gemini-cli"
    truth = [t for t in session.truth() if t["kind"] == "stream"]
    got = [
        (r["input_tokens"] + r["cache_read_tokens"], r["cache_read_tokens"])
        for r in row["requests"]
    ]
    assert got == [(t["prompt_tokens"], t["cached_tokens"]) for t in truth]
    # Gemini's ledger (default retention), as the library runs it.
    [log] = read_gemini_home(session.home)
    want = [
        (e.outcome.value, [c.value for c in e.diagnosis.causes] if e.diagnosis else [])
        for e in analyze_gemini_session(log).main.entries
    ]
    assert [(r["outcome"], r["causes"]) for r in row["requests"]] == want


def test_a_pause_past_five_minutes_is_named_by_the_default_retention(
    runs: dict[str, Future[GeminiSession]],
) -> None:
    ran = runs["pause"].result()
    truth = [t for t in ran.truth() if t["kind"] == "stream"]
    assert [t["outcome"] for t in truth] == ["cold", "miss"] and "expired" in truth[1]["changed"]
    [log] = read_gemini_home(ran.home)
    entries = analyze_gemini_session(log).main.entries  # no retention override
    assert [e.outcome.value for e in entries] == ["cold", "miss"]
    diagnosis = entries[1].diagnosis
    assert diagnosis is not None and [c.value for c in diagnosis.causes] == ["ttl_expired_5m"]
