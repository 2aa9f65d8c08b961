"""The Codex rollout reader and OpenAI's cache ledger on a rollout the real Codex CLI
0.169.0 wrote (tests/real_agents, scenario ``changes``), against the fake API's ground
truth of that run and ccusage 20.0.24's ``codex session --json`` on the same home."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cachediag.analysis.costs import request_cost_usd
from cachediag.analysis.openai_cache import analyze_openai_session, readable_prefix
from cachediag.ingest.agents import AGENTS, read_agent_sessions, session_files
from cachediag.ingest.codex import read_rollout
from cachediag.pipeline import Run, default_paths
from cachediag.pricing import lookup_prices

DATA = Path(__file__).parent / "data"
HOME = DATA / "codex_home_changes"
TRUTH = json.loads((DATA / "codex_truth_changes.json").read_text())
CCUSAGE = json.loads((DATA / "ccusage20_codex_changes.json").read_text())


def _rollout() -> Path:
    (path,) = sorted(HOME.glob("sessions/*/*/*/rollout-*.jsonl"))
    return path


def test_discovery_codex_home_and_default(tmp_path: Path) -> None:
    assert session_files("codex", {"CODEX_HOME": str(HOME)}) == [_rollout()]
    # No CODEX_HOME: ~/.codex under $HOME.
    home = tmp_path / "u"
    shutil.copytree(HOME, home / ".codex")
    found = session_files("codex", {"HOME": str(home)})
    assert [p.name for p in found] == [_rollout().name]
    assert AGENTS["codex"].home({"HOME": "/nowhere"}) == Path("/nowhere/.codex")
    assert session_files("codex", {"HOME": str(tmp_path / "none")}) == []


def test_every_served_request_with_its_tokens() -> None:
    (log,) = read_agent_sessions("codex", {"CODEX_HOME": str(HOME)})
    assert log.issues == [] and log.session_id in _rollout().name
    records = {r.message_id: r for s in log.streams.values() for r in s.requests}
    assert sorted(records) == sorted(t["response_id"] for t in TRUTH)
    for t in TRUTH:
        r = records[t["response_id"]]
        got = (r.input_tokens + r.cache_read_tokens, r.cache_read_tokens, r.output_tokens)
        assert got == (t["input_tokens"], t["cached_tokens"], t["output_tokens"])
        assert r.model == t["model"]
        assert r.stream == ("compaction" if t["compaction"] else "main")


def test_outcomes_and_causes_match_the_fake() -> None:
    analysis = analyze_openai_session(read_rollout(_rollout()))
    entries = {e.record.message_id: e for s in analysis.streams for e in s.entries}
    said = []
    for t in TRUTH:
        e = entries[t["response_id"]]
        causes = [c.value for c in e.diagnosis.causes] if e.diagnosis else []
        said.append((t["outcome"], t["changed"], e.outcome.value, causes))
    assert said == [
        ("cold", [], "cold", []),
        ("hit", [], "hit", []),
        ("miss", ["effort"], "miss", ["effort_changed"]),
        ("hit", [], "hit", []),  # AGENTS.md arrived as a new user item: no prefix change
        # model_instructions_file replaced the instructions: the rollout holds no trace.
        ("miss", ["instructions"], "miss", ["unknown"]),
        ("miss", ["tools"], "miss", ["tools_changed"]),  # the MCP server's tools
        # The fake's 8 s retention ran out: inside OpenAI's 5 minutes, server-side.
        ("miss", ["expired"], "miss", ["likely_server_side"]),
        ("compaction", [], "cold", []),  # sent without tools: its own stream
        ("rebuild", ["compacted", "model", "effort", "instructions", "tools"], "expected", []),
        # No effort in turn_context: each model's default (low, then medium) from
        # Codex's model catalog.
        ("miss", ["model", "effort"], "miss", ["model_changed", "effort_changed"]),
        ("hit", [], "hit", []),
    ]


@pytest.mark.parametrize("scenario", ["changes", "pause"])
def test_tokens_and_costs_equal_ccusage_per_session(scenario: str) -> None:
    """ccusage 20.0.24 reads the same tokens: it skips the duplicate token_count a
    compaction writes and the all-zero one after it (docs/agents.md)."""
    home = DATA / f"codex_home_{scenario}"
    ccusage = json.loads((DATA / f"ccusage20_codex_{scenario}.json").read_text())
    (log,) = read_agent_sessions("codex", {"CODEX_HOME": str(home)})
    records = [r for s in log.streams.values() for r in s.requests]
    (row,) = ccusage["sessions"]
    assert row["sessionFile"] == Path(log.source).stem
    assert sum(r.input_tokens for r in records) == row["inputTokens"]
    assert sum(r.cache_read_tokens for r in records) == row["cacheReadTokens"]
    assert sum(r.output_tokens for r in records) == row["outputTokens"]
    cost = 0.0
    for r in records:
        prices = lookup_prices(r.model or "", r.at)
        assert prices is not None, r.model
        cost += request_cost_usd(r, prices)
    assert cost == pytest.approx(row["costUSD"], rel=1e-9)


def test_pause_past_retention_is_a_ttl_expiry() -> None:
    """The recorded pause run: 310 s on gpt-5.5 (in-memory retention, 5 minutes)."""
    truth = json.loads((DATA / "codex_truth_pause.json").read_text())
    (log,) = read_agent_sessions("codex", {"CODEX_HOME": str(DATA / "codex_home_pause")})
    entries = analyze_openai_session(log, 0.0).main.entries
    assert [t["outcome"] for t in truth] == ["cold", "hit", "miss"]
    assert [e.outcome.value for e in entries] == ["cold", "hit", "miss"]
    last = entries[-1]
    assert last.diagnosis is not None and last.evidence is not None
    assert [c.value for c in last.diagnosis.causes] == ["ttl_expired_5m"]
    assert last.evidence.gap_s > 300 and last.record.message_id == truth[-1]["response_id"]


def test_token_count_only_rollout_skips_the_compaction_duplicates(tmp_path: Path) -> None:
    """A rollout without token_usage_record (older releases): calls from token_count,
    neither the duplicate at the compaction's start nor the all-zero one counted."""
    lines = [ln for ln in _rollout().read_text().splitlines()
             if '"type":"token_usage_record"' not in ln]  # fmt: skip
    path = tmp_path / _rollout().name
    path.write_text("\n".join(lines) + "\n")
    log = read_rollout(path)
    main, comp = log.streams["main"].requests, log.streams["compaction"].requests
    assert (len(main), len(comp)) == (len(TRUTH) - 1, 1)
    assert sum(r.total_tokens for r in main + comp) == sum(t["input_tokens"] for t in TRUTH)
    # ccusage 20.0.24 on this same file (recorded): it skips the duplicate too.
    recorded = json.loads((DATA / "ccusage20_codex_token_count_only.json").read_text())
    (row,) = recorded["sessions"]
    records = main + comp
    assert sum(r.input_tokens for r in records) == row["inputTokens"]
    assert sum(r.cache_read_tokens for r in records) == row["cacheReadTokens"]
    assert sum(r.output_tokens for r in records) == row["outputTokens"]


def test_bad_lines_counted_and_skipped(tmp_path: Path) -> None:
    text = _rollout().read_text().splitlines()
    text.insert(3, "{not json")
    usage = {"input_tokens": 5, "cached_input_tokens": 9}
    bad = {
        "timestamp": "2026-12-02T04:39:10Z",
        "type": "token_usage_record",
        "payload": {"usage": usage},
    }
    text.insert(5, json.dumps(bad))
    path = tmp_path / "rollout-bad.jsonl"
    path.write_text("\n".join(text) + "\n")
    log = read_rollout(path)
    assert [(i.line, i.reason) for i in log.issues] == [
        (4, log.issues[0].reason),
        (6, "cached_input_tokens exceed input_tokens"),
    ]
    assert sum(len(s.requests) for s in log.streams.values()) == len(TRUTH)


def test_not_a_rollout(tmp_path: Path) -> None:
    path = tmp_path / "rollout-x.jsonl"
    path.write_text('{"hello": 1}\n')
    log = read_rollout(path)
    assert [(i.line, i.reason) for i in log.issues] == [(1, "not a Codex rollout line")]


@pytest.mark.parametrize(
    ("tokens", "readable"), [(0, 0), (1023, 0), (1024, 1024), (1151, 1024), (1152, 1152)]
)
def test_openai_readable_prefix(tokens: int, readable: int) -> None:
    assert readable_prefix(tokens) == readable


def test_pipeline_reads_codex_home_folder_and_refuses_non_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(HOME))
    codex = frozenset({"codex"})
    (by_home,) = Run(agents=codex).sessions(default_paths(codex), None, 0.0)
    (by_folder,) = Run(agents=codex).sessions([HOME], None, 0.0)
    assert by_home.log.source == by_folder.log.source == str(_rollout())
    assert by_home.main.ledger.misses == 5 and by_home.main.ledger.expected_rebuilds == 1
    readme = tmp_path / "README.md"
    readme.write_text("# not a log\n")
    run = Run(agents=codex)
    assert list(run.sessions([readme, tmp_path / "gone"], None, 0.0)) == []
    assert run.errors == [f"{readme}: not a codex session log (line 1: {run_reason(readme)})"]
    assert [(i.source, i.reason) for i in run.unreadable] == [
        (str(tmp_path / "gone"), "no such file or directory")
    ]


def run_reason(path: Path) -> str:
    log = read_rollout(path)
    return log.issues[0].reason


def test_unpriced_model_is_flagged_not_guessed(tmp_path: Path) -> None:
    """A model genai-prices does not know (Codex's own codex-auto-review) costs nothing
    made up: the request is counted unpriced."""
    from cachediag.pricing import price_function, pricing_source
    from cachediag.report.serialize import session_dict

    text = _rollout().read_text().replace('"model":"gpt-5.6-terra"', '"model":"codex-auto-review"')
    assert "codex-auto-review" in text
    path = tmp_path / "rollout-unpriced.jsonl"
    path.write_text(text)
    analysis = analyze_openai_session(read_rollout(path), 0.0)
    assert lookup_prices("codex-auto-review", 0.0) is None
    cost = session_dict(
        analysis, requests=True, price_of=price_function(None), pricing_source=pricing_source(None)
    )["cost"]
    unpriced = sum(1 for t in TRUTH if t["model"] == "gpt-5.6-terra")
    assert cost["unpriced_requests"] == unpriced == 2
    priced = [t for t in TRUTH if t["model"] != "gpt-5.6-terra"]
    assert cost["cost_usd"] < CCUSAGE["totals"]["costUSD"] and len(priced) == len(TRUTH) - 2


def test_agents_table_names_the_readers_format() -> None:
    from cachediag.ingest import codex

    assert AGENTS["codex"].format == codex.FORMAT
    assert read_rollout(_rollout()).format == codex.FORMAT


def test_without_world_state_no_tools_claim_and_no_server_guess(tmp_path: Path) -> None:
    """A rollout without world_state lines lists no tools: the MCP server's miss cannot be
    named, and with tools unseen nothing says the server lost the prefix: unknown."""
    lines = [ln for ln in _rollout().read_text().splitlines() if '"type":"world_state"' not in ln]
    path = tmp_path / "rollout-no-world-state.jsonl"
    path.write_text("\n".join(lines) + "\n")
    analysis = analyze_openai_session(read_rollout(path), 0.0)
    causes = [[c.value for c in e.diagnosis.causes] for e in analysis.main.entries if e.diagnosis]
    assert causes == [
        ["effort_changed"], ["unknown"], ["unknown"], ["unknown"],
        ["model_changed", "effort_changed"],
    ]  # fmt: skip
