"""``cachediag audit``: totals against ccusage, breakdowns, CSV and JSON contracts."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import TypeAdapter

from cachediag.analysis.costs import ModelPrices
from cachediag.analysis.group_keys import DATASET_ONLY, GroupBy
from cachediag.analysis.rollup import audit_session
from cachediag.analysis.session_analysis import analyze_session
from cachediag.cli import main
from cachediag.model import MAIN_STREAM, RequestRecord, SessionLog, StreamKind
from cachediag.pipeline_audit import AuditOptions, run_audit
from cachediag.report.audit_report import AuditReport
from tests.conftest import REAL, ROOT

DATA = ROOT / "tests" / "data"
FIXTURE_TREES = [REAL / "spotter", REAL / "claude-code-viewer"]


def run_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["audit", "--json", "--no-progress", *args])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def parent_session(tree: Path, ccusage_session: dict[str, Any]) -> str:
    """ccusage counts a 2.0-era ``agent-*.jsonl`` beside the sessions as a session of its
    own; its lines name the session they belong to, which is where cachediag counts it."""
    name = ccusage_session["sessionId"]
    path = tree / ccusage_session["projectPath"] / f"{name}.jsonl"
    if not name.startswith("agent-") or not path.is_file():
        return str(name)
    first = json.loads(path.read_text().splitlines()[0])
    return str(first["sessionId"])


def ccusage_by_session(recorded: Path, tree: Path) -> dict[str, dict[str, float]]:
    data = json.loads(recorded.read_text())
    folded: dict[str, dict[str, float]] = {}
    for s in data["sessions"]:
        row = folded.setdefault(
            parent_session(tree, s),
            dict.fromkeys(
                (
                    "inputTokens",
                    "outputTokens",
                    "cacheCreationTokens",
                    "cacheReadTokens",
                    "totalCost",
                ),
                0.0,
            ),
        )
        for key in row:
            row[key] += s[key]
    return folded


def compare_with_ccusage(recorded: Path, tree: Path, paths: list[Path]) -> None:
    theirs = ccusage_by_session(recorded, tree)
    report = run_json("--by", "session", *map(str, paths))
    ours = {g["key"]: g for g in report["groups"]}
    assert set(ours) == set(theirs)
    for session_id, t in theirs.items():
        o = ours[session_id]
        assert (
            o["input_tokens"],
            o["output_tokens"],
            o["cache_creation_tokens"],
            o["cache_read_tokens"],
        ) == (t["inputTokens"], t["outputTokens"], t["cacheCreationTokens"], t["cacheReadTokens"])
        # Both price Anthropic models from the same published prices (5m writes 1.25x,
        # 1h writes 2x, 200k tiers): within 1%.
        assert o["cost_usd"] == pytest.approx(t["totalCost"], rel=0.01), session_id


def test_token_totals_and_costs_equal_ccusage_on_fixtures() -> None:
    # Recorded by scripts/record_ccusage.py (ccusage claude session --json --offline).
    compare_with_ccusage(
        DATA / "ccusage_sessions_fixtures.json", ROOT / "fixtures/real", FIXTURE_TREES
    )


def test_token_totals_and_costs_equal_ccusage_on_corpus(corpus: Path) -> None:
    compare_with_ccusage(
        DATA / "ccusage_sessions_corpus.json", corpus / "claude-code", [corpus / "claude-code"]
    )


@pytest.mark.parametrize("by", [g.value for g in GroupBy if g not in DATASET_ONLY])
def test_groups_add_up_to_totals(by: str) -> None:
    report = run_json("--by", by, *map(str, FIXTURE_TREES))
    TypeAdapter(AuditReport).validate_python(report)
    assert report["by"] == by and report["sessions"] == 6
    for key in ("requests", "input_tokens", "output_tokens", "misses", "expected_rebuilds"):
        assert sum(g[key] for g in report["groups"]) == report["totals"][key]
    assert sum(g["cost_usd"] for g in report["groups"]) == pytest.approx(
        report["totals"]["cost_usd"], abs=1e-5
    )
    assert report["pricing_source"].startswith("genai-prices ")


def test_recache_share_and_top_misses() -> None:
    report = run_json("--top", "2", str(REAL / "spotter"))
    t = report["totals"]
    assert t["recache_share"] == pytest.approx(
        (t["miss_cost_usd"] + t["rebuild_cost_usd"]) / t["cost_usd"], rel=1e-4
    )
    costs = [m["cost_usd"] for m in report["top_misses"]]
    assert len(costs) == 2 and costs == sorted(costs, reverse=True)
    assert t["misses"] > 2  # the list was cut, not short


def test_since_until_filter_requests_by_utc_day() -> None:
    spotter = str(REAL / "spotter")
    # The spotter sessions ran on 2026-02-10 and 2026-02-12 (UTC).
    days = {g["key"] for g in run_json("--by", "day", spotter)["groups"]}
    assert days == {"2026-02-10", "2026-02-12"}
    only = run_json("--by", "day", "--since", "2026-02-11", "--until", "2026-02-12", spotter)
    assert [g["key"] for g in only["groups"]] == ["2026-02-12"]
    none = run_json("--until", "2026-02-09", spotter)
    assert none["sessions"] == 0 and none["totals"]["requests"] == 0


def test_csv_has_a_header_and_one_row_per_group() -> None:
    result = CliRunner().invoke(main, ["audit", "--csv", "--by", "model", *map(str, FIXTURE_TREES)])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert rows and rows[0].keys() >= {
        "model",
        "requests",
        "cost_usd",
        "recache_share",
        "pricing_source",
    }
    assert all(r["pricing_source"].startswith("genai-prices ") for r in rows)
    models = {r["model"] for r in rows}
    assert {"claude-opus-4-6", "claude-sonnet-4-20250514"} <= models
    assert len(models) == len(rows)


def test_schema_describes_the_json() -> None:
    result = CliRunner().invoke(main, ["audit", "--schema"])
    schema = json.loads(result.stdout)
    assert schema["title"] == "AuditReport"
    assert {"pricing_source", "totals", "groups", "whatif"} <= set(schema["required"])


def test_parallel_run_equals_serial_run() -> None:
    options = AuditOptions(top=5)
    serial = run_audit(FIXTURE_TREES, options, workers=1)
    parallel = run_audit(FIXTURE_TREES, options, workers=2)
    assert [s.session_id for s in serial.audit.sessions] == [
        s.session_id for s in parallel.audit.sessions
    ]
    assert serial.audit.totals == parallel.audit.totals
    assert serial.audit.groups == parallel.audit.groups


def write_transcript(path: Path, model: str) -> None:
    lines = [
        {
            "type": "assistant",
            "sessionId": "s1",
            "uuid": f"u{i}",
            "requestId": f"r{i}",
            "timestamp": f"2026-01-05T10:0{i}:00Z",
            "message": {
                "id": f"m{i}",
                "model": model,
                "usage": {
                    "input_tokens": 10,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                    "output_tokens": 5,
                },
            },
        }
        for i in range(2)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_unpriced_model_is_reported_not_counted_as_zero(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    write_transcript(path, "mystery-model-9")
    report = run_json(str(path))
    assert report["unpriced_models"] == ["mystery-model-9"]
    assert report["totals"]["unpriced_requests"] == 2
    assert report["totals"]["recache_share"] is None
    result = CliRunner().invoke(main, ["audit", "--no-progress", str(path)])
    assert "2 requests unpriced (no price for mystery-model-9)" in result.stdout


def test_audit_session_by_hand() -> None:
    # Cold 100K write at 5m, then a 10-minute pause and a full re-write (a TTL miss).
    # Prices: 5m write 1.25, read 0.1 per Mtok.
    # cost: 100K * 1.25 / 1e6 = 0.125 twice = 0.25; miss cost: 100K * (1.25 - 0.1) / 1e6
    # = 0.115; re-caching share 0.115 / 0.25 = 0.46.
    log = SessionLog("s", "s.jsonl", "claude-code", project="p")
    stream = log.stream(MAIN_STREAM, StreamKind.MAIN)
    for at in (0.0, 600.0):
        stream.items.append(
            RequestRecord(
                at=at,
                input_tokens=0,
                cache_read_tokens=0,
                cache_creation_tokens=100_000,
                output_tokens=0,
                model="m",
            )
        )
    prices = ModelPrices(
        input_mtok=1,
        cache_write_5m_mtok=1.25,
        cache_write_1h_mtok=2,
        cache_read_mtok=0.1,
        output_mtok=5,
    )
    result = audit_session(analyze_session(log, 0.0), lambda r: prices)
    assert result.totals.cost_usd == pytest.approx(0.25)
    assert result.totals.miss_cost_usd == pytest.approx(0.115)
    assert result.totals.recache_share == pytest.approx(0.46)
    assert set(result.groups[GroupBy.CAUSE]) == {"no_miss", "ttl_expired_5m"}
    assert result.top_misses[0].cost_usd == pytest.approx(0.115)


def test_analyze_gains_cost_fields() -> None:
    from tests.conftest import SPOTTER_SESSION

    result = CliRunner().invoke(main, ["analyze", "--requests", "--now", "0", str(SPOTTER_SESSION)])
    assert result.exit_code == 0, result.output
    obj = json.loads(result.stdout)
    main_cost = obj["cost"]["main"]
    requests = obj["requests"]
    assert sum(r["cost_usd"] for r in requests) == pytest.approx(main_cost["cost_usd"], abs=1e-5)
    misses = [r for r in requests if r["outcome"] in ("miss", "expected")]
    assert misses and all(r["miss_cost_usd"] > 0 for r in misses)
    assert sum(r["miss_cost_usd"] for r in requests) == pytest.approx(
        main_cost["miss_cost_usd"], abs=1e-5
    )
    assert obj["cost"]["pricing_source"].startswith("genai-prices ")
    assert all("cost" in s for s in obj["streams"])
    table = CliRunner().invoke(main, ["analyze", "--now", "0", str(SPOTTER_SESSION)])
    assert "Cost: $" in table.stdout and "prices: genai-prices" in table.stdout


def test_bad_inputs_are_clear_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["audit", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 1 and missing.stderr.startswith("Error: ")
    not_a_log = tmp_path / "notes.jsonl"
    not_a_log.write_text('{"hello": "world"}\n')
    result = runner.invoke(main, ["audit", "--json", str(not_a_log)])
    assert result.exit_code == 1
    assert "Error: " in result.stderr and "not a log" in result.stderr
    assert "Traceback" not in result.output
    both = runner.invoke(main, ["audit", "--json", "--csv", str(not_a_log)])
    assert both.exit_code == 2


@pytest.mark.parametrize("window", [["--since", "2027-01-01"], ["--until", "2020-01-01"]])
def test_nothing_in_the_window_is_said_not_tabled(window: list[str]) -> None:
    result = CliRunner().invoke(main, ["audit", "--no-progress", *window, str(REAL)])
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and result.stderr == "No sessions in that window.\n"
    # The data outputs still give their (empty) report.
    assert run_json(*window, str(REAL))["totals"]["requests"] == 0
