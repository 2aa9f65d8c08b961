"""The real opencode CLI against the fake provider APIs: the fake's ground truth against
cachediag's ledger from the database opencode wrote (docs/agents.md, "opencode")."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest

from cachediag.analysis.ledger import LedgerEntry
from cachediag.analysis.openai_cache import analyze_openai_session
from cachediag.analysis.session_analysis import analyze_session
from cachediag.ingest import opencode
from cachediag.model import TTL_SECONDS
from tests.real_agents.opencode_harness import OPENCODE, OpencodeSession
from tests.real_agents.opencode_scenarios import SCENARIOS, run_all
from tests.real_agents.support import assert_loopback_only, scenario_runs

# Both scenarios start together; the anthropic one waits out its 305 s pause.
pytestmark = [pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def opencode_runs() -> Iterator[dict[str, Future[OpencodeSession]]]:
    yield from scenario_runs(OPENCODE, lambda: run_all(list(SCENARIOS)))


def _session(runs: dict[str, Future[OpencodeSession]], name: str) -> OpencodeSession:
    return runs[name].result(timeout=900)


def _entries(s: OpencodeSession) -> tuple[list[LedgerEntry], list[LedgerEntry]]:
    """Main's and the compaction stream's entries of the one session, from XDG_DATA_HOME."""
    logs = opencode.read_default({"XDG_DATA_HOME": str(s.data_home), "HOME": "/nonexistent"})
    assert [log.session_id for log in logs] == [s.session_id]
    (log,) = logs
    assert log.issues == []
    analyze = analyze_session if log.format == opencode.FORMAT else analyze_openai_session
    analysis = analyze(log, 0.0)
    compaction = [e for a in analysis.others for e in a.entries]
    return analysis.main.entries, compaction


def _served(s: OpencodeSession) -> list[dict[str, Any]]:
    """What the fake served but the title call, which opencode never stores."""
    truth = s.truth()
    titles = [t for t in truth if t["title"]]
    # It runs beside the first turn's call, so either may reach the fake first.
    assert len(titles) == 1 and titles[0]["n"] <= 1, "one title call, on the first turn"
    return [t for t in truth if not t["title"]]


def _tokens(t: dict[str, Any]) -> tuple[int, int, int, int]:
    uncached = t["prompt_tokens"] - t["read_tokens"] - t["write_tokens"]
    return (uncached, t["read_tokens"], t["write_tokens"], t["output_tokens"])


def _got(entries: list[LedgerEntry]) -> list[tuple[int, int, int, int]]:
    return [(e.record.input_tokens, e.record.cache_read_tokens, e.record.cache_creation_tokens,
             e.record.output_tokens) for e in entries]  # fmt: skip


def _check(s: OpencodeSession) -> list[tuple[dict[str, Any], LedgerEntry]]:
    served = _served(s)
    main, compaction = _entries(s)
    summaries = [t for t in served if t["compaction"]]
    served = [t for t in served if not t["compaction"]]
    assert _got(main) == [_tokens(t) for t in served]  # every request, once, in order
    assert _got(compaction) == [_tokens(t) for t in summaries]
    assert [e.record.model for e in main] == [t["model"] for t in served]
    return list(zip(served, main, strict=True))


def _expect(t: dict[str, Any], entry: LedgerEntry) -> None:
    outcome = entry.outcome.value
    if t["outcome"] in ("cold", "hit"):
        assert outcome == t["outcome"], (t, outcome)
        return
    assert outcome == "miss", (t, outcome)
    assert entry.diagnosis is not None and entry.evidence is not None
    causes = {c.value for c in entry.diagnosis.causes}
    # The database holds the model and the clock, not the system prompt or the tools.
    named = {"model_changed"} if "model" in t["changed"] else set()
    if "expired" in t["changed"]:
        window = TTL_SECONDS[entry.evidence.ttl_in_force]
        named |= {"ttl_expired_5m"} if entry.evidence.gap_s >= window else set()
    assert causes == (named or {"unknown"}), (t, causes)


ONE_SESSION = [name for name in SCENARIOS if name != "subagent"]


@pytest.mark.parametrize("name", ONE_SESSION)
def test_every_request_and_miss(
    opencode_runs: dict[str, Future[OpencodeSession]], name: str
) -> None:
    s = _session(opencode_runs, name)
    rows = _check(s)
    for t, entry in rows:
        _expect(t, entry)
    misses = [t for t, _ in rows if t["outcome"] == "miss"]
    changed = {c for t in misses for c in t["changed"]}
    # The scenario did what it says (else the checks above prove little).
    if name == "changes":
        # A loaded machine can stretch a turn's gap past the fake's retention: more
        # expired misses than the scripted pause's (each checked above) are allowed.
        extra = [t for t in misses if t["changed"] == ["expired"]][1:]
        assert {"system", "model", "expired"} <= changed and len(misses) - len(extra) == 3
        assert {t["tools"] for t, _ in rows} == {9, 11}  # the MCP server's tools arrived
    elif name == "compact":
        # Each long answer overflows the window: opencode summarises, then continues on
        # the summary; main's request after each summary call is an announced rebuild.
        main, summaries = _entries(s)
        assert len(summaries) >= 2 and not misses
        assert sum(e.announced is not None for e in main) == len(summaries)
    else:
        assert {"model", "expired"} <= changed and len(misses) == 2
        assert any(t["write_tokens"] for t, _ in rows) and rows[1][0]["read_tokens"]


def test_changes_named_causes(opencode_runs: dict[str, Future[OpencodeSession]]) -> None:
    causes = [[c.value for c in e.diagnosis.causes] if e.diagnosis else []
              for _, e in _check(_session(opencode_runs, "changes"))]  # fmt: skip
    # AGENTS.md: not in the database; the fake's 90 s retention is inside OpenAI's 5 min
    # (a slow turn past it is one more unknown).
    named = [c for c in causes if c]
    assert named.count(["model_changed"]) == 1 and len(named) >= 3
    assert all(c in (["unknown"], ["model_changed"]) for c in named)


def test_anthropic_pause_is_a_ttl_expiry(opencode_runs: dict[str, Future[OpencodeSession]]) -> None:
    rows = _check(_session(opencode_runs, "anthropic"))
    last = rows[-1][1]
    assert last.diagnosis is not None
    assert [c.value for c in last.diagnosis.causes] == ["ttl_expired_5m"]
    assert last.diagnosis.source == "inferred"


def test_tool_turn_is_two_calls(opencode_runs: dict[str, Future[OpencodeSession]]) -> None:
    """A turn whose answer called a tool is two model calls; opencode 1.18 writes each as
    its own assistant message of one step (finish ``tool-calls``, then ``stop``)."""
    s = _session(opencode_runs, "changes")
    (log,) = opencode.read_database(s.database)
    ids = [r.message_id for r in log.streams["main"].requests]
    assert len(ids) == len(_served(s)) == len(set(ids))
    conn = sqlite3.connect(f"file:{s.database}?mode=ro", uri=True)
    try:
        finishes = [r[0] for r in conn.execute(
            "SELECT json_extract(data, '$.finish') FROM message"
            " WHERE json_extract(data, '$.role') = 'assistant' ORDER BY time_created"
        )]  # fmt: skip
    finally:
        conn.close()
    assert finishes.count("tool-calls") == 1
    assert finishes[finishes.index("tool-calls") + 1] == "stop"


def test_subagent_child_session(opencode_runs: dict[str, Future[OpencodeSession]]) -> None:
    """The task tool's subagent runs in a child session: two sessions, every call served."""
    s = _session(opencode_runs, "subagent")
    logs = opencode.read_database(s.database)
    assert len(logs) == 2 and s.session_id in {log.session_id for log in logs}
    calls = sorted((r for log in logs for r in log.streams["main"].requests), key=lambda r: r.at)
    got = [(r.input_tokens, r.cache_read_tokens, r.cache_creation_tokens, r.output_tokens)
           for r in calls]  # fmt: skip
    assert got == [_tokens(t) for t in _served(s)]
    assert sorted(t["tools"] for t in _served(s))[0] < 9  # the subagent's own tool set


def test_offline_loopback_only_and_canary(
    opencode_runs: dict[str, Future[OpencodeSession]],
) -> None:
    assert_loopback_only(_session(opencode_runs, "changes"))
    for name in SCENARIOS:
        run = _session(opencode_runs, name)
        assert run.fake.keys == {run.canary}
        assert run.fake.other == []  # nothing but the two model endpoints reached the fake
