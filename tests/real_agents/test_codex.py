"""The real Codex CLI against the fake Responses API: the fake's ground truth against
cachediag's ledger from the rollouts Codex wrote (docs/agents.md)."""

from __future__ import annotations

import itertools
import json
from concurrent.futures import Future
from typing import Any

import pytest

from cachediag.analysis.ledger import LedgerEntry
from cachediag.analysis.openai_cache import analyze_openai_session
from cachediag.ingest.agents import read_agent_sessions
from cachediag.model import TTL_SECONDS
from tests.real_agents.codex_harness import CodexSession
from tests.real_agents.support import assert_loopback_only

# The scenarios start together; the pause test waits for its 310 s pause.
pytestmark = [pytest.mark.timeout(1800)]

# What each change the fake knows of must be named, when the rollout holds the evidence.
NAMED = {"model": "model_changed", "effort": "effort_changed", "tools": "tools_changed",
         "instructions": "system_prompt_changed"}  # fmt: skip


def _session(runs: dict[str, Future[CodexSession]], name: str) -> CodexSession:
    return runs[name].result(timeout=900)


def _ledger(s: CodexSession) -> dict[str, tuple[str, LedgerEntry]]:
    """Every ledger entry by response id, with its stream, from CODEX_HOME alone."""
    logs = read_agent_sessions("codex", {"CODEX_HOME": str(s.codex_home)})
    assert len(logs) == 1, [log.source for log in logs]
    assert logs[0].issues == []
    analysis = analyze_openai_session(logs[0])
    out = {}
    for stream in analysis.streams:
        for entry in stream.entries:
            assert entry.record.message_id is not None
            out[entry.record.message_id] = (stream.log.id, entry)
    return out


def _check_against_truth(s: CodexSession) -> list[tuple[dict[str, Any], str, LedgerEntry]]:
    truth = s.truth()
    ledger = _ledger(s)
    assert sorted(ledger) == sorted(t["response_id"] for t in truth)  # every request, once
    rows = []
    for t in truth:
        stream, entry = ledger[t["response_id"]]
        r = entry.record
        assert (r.input_tokens + r.cache_read_tokens, r.cache_read_tokens, r.output_tokens) == (
            t["input_tokens"], t["cached_tokens"], t["output_tokens"],
        ), t  # fmt: skip
        assert r.model == t["model"]
        rows.append((t, stream, entry))
    return rows


def _expect(t: dict[str, Any], stream: str, entry: LedgerEntry) -> None:
    outcome = entry.outcome.value
    if t["outcome"] == "compaction":
        assert (stream, outcome) == ("compaction", "cold"), t
        return
    assert stream == "main"
    if t["outcome"] in ("cold", "hit"):
        assert outcome == t["outcome"], (t, outcome)
        return
    if t["outcome"] == "rebuild":
        assert outcome == "expected", (t, outcome)
        return
    assert outcome == "miss", (t, outcome)
    assert entry.diagnosis is not None
    causes = {c.value for c in entry.diagnosis.causes}
    if t["changed"] == ["instructions"]:
        # A model_instructions_file leaves no trace in the rollout: nothing to name it by,
        # and the earlier prefix (the tools) was still read, so not the server's doing.
        assert causes == {"unknown"}, (t, causes)
        return
    named = {NAMED[c] for c in t["changed"] if c in NAMED}
    if "expired" in t["changed"]:
        # The fake's retention against the one cachediag assumes for the model: past it
        # a TTL expiry, inside it OpenAI's best-effort cache lost the prefix early.
        assert entry.evidence is not None
        window = TTL_SECONDS[entry.evidence.ttl_in_force]
        named |= {"ttl_expired_5m" if entry.evidence.gap_s >= window else "likely_server_side"}
    assert named, t  # every miss the fake knows of has a name the rollout can hold...
    # ...and some the rollout cannot show (a default effort under another model): never
    # a wrong name, so the ledger's causes are within the truth's.
    assert causes <= named | {"unknown"}, (t, causes)
    assert causes & named or causes == {"unknown"}, (t, causes)


def test_changes_every_request_and_miss(codex_runs: dict[str, Future[CodexSession]]) -> None:
    s = _session(codex_runs, "changes")
    rows = _check_against_truth(s)
    for t, stream, entry in rows:
        _expect(t, stream, entry)
    outcomes = [t["outcome"] for t, _, _ in rows]
    # The scenario did what it says (else the checks above prove little).
    assert outcomes.count("miss") >= 4 and "compaction" in outcomes and "rebuild" in outcomes
    changed = {c for t, _, _ in rows for c in t["changed"]}
    assert {"model", "effort", "tools", "expired", "instructions"} <= changed
    assert len(s.turns) + 2 == len(rows)  # the tool call's second request, the compaction


def test_changes_named_causes(codex_runs: dict[str, Future[CodexSession]]) -> None:
    s = _session(codex_runs, "changes")
    named = set()
    for _, _, entry in _check_against_truth(s):
        if entry.diagnosis is not None:
            named |= {c.value for c in entry.diagnosis.causes}
            assert entry.diagnosis.source == "inferred"
    assert {"model_changed", "effort_changed", "tools_changed", "likely_server_side"} <= named


def test_pause_is_a_ttl_expiry(codex_runs: dict[str, Future[CodexSession]]) -> None:
    s = _session(codex_runs, "pause")
    rows = _check_against_truth(s)
    for t, stream, entry in rows:
        _expect(t, stream, entry)
    last = rows[-1][2]
    assert last.diagnosis is not None
    assert [c.value for c in last.diagnosis.causes] == ["ttl_expired_5m"]


def test_offline_loopback_only_and_canary(codex_runs: dict[str, Future[CodexSession]]) -> None:
    s = _session(codex_runs, "changes")
    assert_loopback_only(s)
    assert s.fake.keys == {s.canary}
    assert s.fake.other == []  # nothing but POST /v1/responses reached the fake


@pytest.mark.parametrize("name", ["changes"])
def test_rollout_traps_present(codex_runs: dict[str, Future[CodexSession]], name: str) -> None:
    """The traps docs/agents.md describes are in what this release writes: the duplicate
    token_count at a compaction's start and the all-zero last_token_usage after it."""
    s = _session(codex_runs, name)
    (path,) = s.rollouts()
    lasts = []
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        payload = obj.get("payload") or {}
        if payload.get("type") == "token_count" and payload.get("info"):
            lasts.append(payload["info"]["last_token_usage"])
    zero = [u for u in lasts if u["input_tokens"] == 0 and u["output_tokens"] == 0]
    dupes = [a for a, b in itertools.pairwise(lasts) if a == b]
    assert len(zero) == 1 and len(dupes) == 1
