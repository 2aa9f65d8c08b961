"""``cachediag prompt``: per-block fingerprints, the breakdown, the hygiene findings."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.analysis.breakdown import apportion, break_down, layout_of
from cachediag.analysis.hygiene import FindingKind, find_findings
from cachediag.analysis.minimums import cache_minimum
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.cli import main
from cachediag.ingest.capture import read_capture
from cachediag.ingest.fingerprint import canonical_json, content_hash, fingerprint_request
from cachediag.ingest.records import to_item
from cachediag.pipeline import Run
from cachediag.pricing import price_function
from cachediag.report.prompt_contract import PromptReport
from tests.conftest import FIXTURES, REAL, SPOTTER_SESSION

PROMPT = FIXTURES / "prompt"
CAPTURES = FIXTURES / "captures"
TRACE = REAL / "claude-trace" / "test-traffic.jsonl"
SECRET_TEXT = "PROMPT-SECRET-hunter2-do-not-print"
SECRET_HEADER = "sk-ant-oat01-FAKE-SECRET-TOKEN-0000"


def _session(path: Path) -> SessionAnalysis:
    sessions = list(Run().sessions([path], None, time.time()))
    assert len(sessions) == 1
    return sessions[0]


def _findings(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    price_of = price_function()
    out = {}
    for stream in _session(path).streams:
        found = find_findings(stream.entries, price_of)
        out[stream.log.id] = [
            (f.kind, f.where.section, f.where.index, f.where.block, f.first_request, f.requests)
            for f in found
        ]
    return out


@pytest.mark.parametrize("path", sorted(PROMPT.glob("*.jsonl")), ids=lambda p: p.stem)
def test_planted_problems_are_found_exactly(path: Path) -> None:
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    want = [
        (e["kind"], e["section"], e["index"], e["block"], e["first_request"], e["requests"])
        for e in expected
    ]
    found = _findings(path)
    assert sorted(found.pop("main")) == sorted(want)
    # Side-call streams of these captures carry nothing to find.
    assert all(not f for f in found.values()), found


def test_every_finding_kind_has_a_fixture() -> None:
    planted = {e["kind"] for p in PROMPT.glob("*.expected.json") for e in json.loads(p.read_text())}
    assert planted == {k.value for k in FindingKind}


@pytest.mark.parametrize(
    "path",
    [*sorted(CAPTURES.glob("*.jsonl")), *sorted((CAPTURES / "streams").glob("*.jsonl"))],
    ids=lambda p: p.stem,
)
def test_cause_fixtures_are_clean(path: Path) -> None:
    # Well-placed breakpoints; their one change is a miss cause (explain's job), not waste.
    assert all(not f for f in _findings(path).values())


def test_real_capture_findings_are_all_real() -> None:
    price_of = price_function()
    session = _session(TRACE)
    assert find_findings(session.main.entries, price_of) == []
    kinds = set()
    for stream in session.others:
        for f in find_findings(stream.entries, price_of):
            kinds.add(f.kind)
            # Claude Code marks the system prompt of its Haiku side calls, which are a few
            # hundred tokens long: the API cached nothing, as the usage shows.
            assert f.kind == FindingKind.BELOW_MIN_CACHEABLE
            assert f.where.section == "system" and f.where.index == 0
            for entry in stream.entries:
                assert entry.record.cached_tokens == 0
                assert entry.record.total_tokens < 2048
            row = cache_minimum(stream.entries[0].record.model)
            assert row is not None and row.tokens == 2048
    assert kinds == {FindingKind.BELOW_MIN_CACHEABLE}


def test_sections_add_up_to_the_providers_count_on_the_real_capture() -> None:
    session = _session(TRACE)
    checked = 0
    for stream in session.streams:
        for entry in stream.entries:
            layout = layout_of(entry.record.fingerprint)
            assert layout is not None
            b = break_down(layout, entry.record)
            r = entry.record
            assert sum(s.tokens for s in b.sections) == r.total_tokens
            assert sum(s.read_tokens for s in b.sections) == r.cache_read_tokens
            assert sum(s.written_tokens for s in b.sections) == r.cache_creation_tokens
            assert sum(s.uncached_tokens for s in b.sections) == r.input_tokens
            checked += 1
    assert checked == 64  # every record of the capture is a model request


def test_the_rebuild_reads_exactly_tools_and_system() -> None:
    # Request 13 of the main thread read 13,515 tokens after the compaction: the tools
    # and both system blocks, up to the system[1] breakpoint, and nothing of the messages.
    entry = _session(TRACE).main.entries[13]
    layout = layout_of(entry.record.fingerprint)
    assert layout is not None
    b = break_down(layout, entry.record)
    read = {s.label: s.read_tokens for s in b.sections}
    assert read["turn 1 (message 0)"] == 0
    assert read["tools (17)"] + read["system[0]"] + read["system[1]"] == 13_515
    assert b.breakpoints[1].place.label() == "system[1]"
    assert b.breakpoints[1].prefix_tokens == 13_515


def test_apportion_keeps_the_total() -> None:
    assert apportion([0.4, 0.4, 0.2], 1) == [1, 0, 0]
    assert sum(apportion([1.5, 2.5, 3.0], 7)) == 7
    assert apportion([], 0) == []


def _body() -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "system": [
            {
                "type": "text",
                "text": "You are terse.",
                "cache_control": {"type": "ephemeral", "ttl": "1h"},
            }
        ],
        "tools": [{"name": "Bash", "description": "Run it.", "input_schema": {}}],
        "messages": [
            {"role": "user", "content": f"hi {SECRET_TEXT}"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "ok"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"c": "ls"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [
                            {"type": "text", "text": "a.txt"},
                            {"type": "image", "source": {"data": "QUJD"}},
                        ],
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
        ],
    }


def test_block_prints_hold_sizes_types_and_breakpoints_but_no_text() -> None:
    body = _body()
    fp = fingerprint_request(body, ())
    assert SECRET_TEXT not in repr(fp) and "terse" not in repr(fp)
    assert fp.system_blocks is not None and fp.tool_blocks is not None
    assert fp.system_blocks[0].cache_control == "ephemeral;ttl=1h"
    assert fp.system_blocks[0].chars == len("You are terse.")
    assert fp.tool_blocks[0].name == "Bash" and fp.tool_blocks[0].hash == fp.tools[0][1]  # type: ignore[index]
    assert fp.message_blocks is not None
    user, assistant, result = fp.message_blocks
    assert [(b.type, b.chars) for b in user] == [("text", len(f"hi {SECRET_TEXT}"))]
    assert [b.type for b in assistant] == ["text", "tool_use"]
    assert assistant[1].name == "Bash"
    assert result[0].type == "tool_result" and result[0].name == "Bash"
    assert (result[0].chars, result[0].media, result[0].cache_control) == (5, 1, "ephemeral")
    assert fp.cache_control == ""


def test_old_fields_and_hashes_are_unchanged() -> None:
    body = _body()
    fp = fingerprint_request(body, ())
    # The hashes of schema 1: whole messages without cache_control, so old captures and
    # records still compare with new ones.
    stripped = json.loads(json.dumps(body["messages"]))
    stripped[2]["content"][0].pop("cache_control")
    assert fp.message_hashes == tuple(content_hash(m) for m in stripped)
    assert fp.system_hashes == (content_hash(body["system"][0]),)
    assert fp.system_chars == len("You are terse.")


def test_records_round_trip_and_old_records_still_read() -> None:
    from cachediag.proxy.recording import fingerprint_dict  # what the proxy writes

    fp = fingerprint_request(_body(), ())
    line = {
        "schema_version": 2,
        "at": 1.0,
        "input_tokens": 10,
        "cache_read_tokens": 0,
        "cache_creation_tokens": 0,
        "fingerprint": fingerprint_dict(fp),
    }
    item = to_item(json.loads(canonical_json(line)), 1)  # the proxy's line writer
    assert getattr(item, "fingerprint", None) == fp
    # Blocks written as objects (easier for people converting their own logs) read too.
    as_objects = json.loads(json.dumps(line))
    as_objects["fingerprint"]["system_blocks"] = [
        {"hash": h, "chars": c, "type": t, "cache_control": cc}
        for h, c, t, cc, _, _ in as_objects["fingerprint"]["system_blocks"]
    ]
    assert getattr(to_item(as_objects, 1), "fingerprint", None) == fp
    old = {
        "at": 1.0,
        "input_tokens": 1,
        "cache_read_tokens": 0,
        "cache_creation_tokens": 0,
        "fingerprint": {"message_hashes": ["a"], "message_roles": ["user"]},
    }
    record = to_item(old, 2)
    assert layout_of(getattr(record, "fingerprint", None)) is None


def test_a_resent_message_shares_its_block_prints() -> None:
    # The memory of a 200k-token capture: the conversation resent on every request is
    # fingerprinted once and shared, not copied per request.
    session = read_capture(TRACE.read_bytes().splitlines(True), str(TRACE), "t")
    main_requests = session.streams["main"].requests
    a, b = (r.fingerprint for r in main_requests[5:7])
    assert a is not None and b is not None and a.message_blocks and b.message_blocks
    assert a.message_blocks[1] is b.message_blocks[1]
    # Equal prints are stored once even where the message around them changed.
    assert a.system_blocks is not None and b.system_blocks is not None
    assert a.system_blocks[0] == b.system_blocks[0]
    assert a.system_blocks[0] is b.system_blocks[0]


def _prompt(*args: str) -> Any:
    return CliRunner().invoke(main, ["prompt", *args])


def test_cli_rich_view_fits_80_columns_and_hides_text() -> None:
    result = _prompt(str(PROMPT / "stable_after_breakpoint.jsonl"))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Request 3 of stream main (claude-sonnet-4-5-20250929)")
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert "stable_after_breakpoint at system[1], since request 1" in result.stdout
    assert "-> Put a breakpoint after the content" in result.stdout
    assert SECRET_TEXT not in result.output and SECRET_HEADER not in result.output
    assert "lorem" not in result.output


def test_cli_json_follows_its_contract() -> None:
    result = _prompt(str(TRACE), "--json")
    assert result.exit_code == 0, result.output
    obj = json.loads(result.stdout)
    report = PromptReport.model_validate(obj)
    assert report.stream == "main" and report.breakdown.request == 15
    totals = report.breakdown.provider_tokens
    assert sum(s.tokens for s in report.breakdown.sections) == totals.total == 21_940
    assert report.findings == []


def test_cli_json_findings_costliest_first() -> None:
    result = _prompt(str(PROMPT / "volatile_in_prefix.jsonl"), "--request", "1", "--json")
    assert result.exit_code == 0, result.output
    obj = json.loads(result.stdout)
    PromptReport.model_validate(obj)
    (finding,) = obj["findings"]
    assert finding["kind"] == "volatile_in_prefix"
    assert finding["where"] == {"section": "system", "index": 1, "block": None}
    # Three misses; each could have read the previous prompt (2,000 tools + 6,000 system
    # + 1,000 per message pair) and read only tools + system[0] (3,000): 6,000 + 7,000 +
    # 8,000 re-written at $3.75 - $0.30 per million (Sonnet 4.5, 5m writes over reads).
    assert finding["tokens"] == 6_000 + 7_000 + 8_000
    assert finding["cost_usd"] == pytest.approx(finding["tokens"] * 3.45e-6, abs=1e-6)
    assert finding["misses"] == 3


def test_unknown_finding_kinds_read_back() -> None:
    obj = json.loads(_prompt(str(PROMPT / "no_breakpoint.jsonl"), "--json").stdout)
    obj["findings"][0]["kind"] = "someone_elses_kind"
    assert PromptReport.model_validate(obj).findings[0].kind == "someone_elses_kind"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([str(SPOTTER_SESSION)], "has no request body in this log"),
        ([str(TRACE), "--request", "99"], "has 16 requests (0-15); no request 99"),
        ([str(TRACE), "--stream", "nope"], "no stream 'nope'"),
        ([str(TRACE), "--request", "1", "--message-id", "x"], "not both"),
    ],
)
def test_errors(args: list[str], message: str) -> None:
    result = _prompt(*args)
    assert result.exit_code != 0
    assert message in result.output


def test_schema_command_prints_the_prompt_contract() -> None:
    result = CliRunner().invoke(main, ["schema", "--prompt"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["title"] == "PromptReport"


def test_fixtures_are_what_the_generator_writes(tmp_path: Path) -> None:
    copy = tmp_path / "prompt"
    copy.mkdir()
    (copy / "generate.py").write_text((PROMPT / "generate.py").read_text())
    captures = tmp_path / "captures"
    captures.mkdir()
    (captures / "generate.py").write_text((CAPTURES / "generate.py").read_text())
    subprocess.run([sys.executable, str(copy / "generate.py")], check=True)
    for path in sorted(PROMPT.glob("*.json*")):
        assert (copy / path.name).read_text() == path.read_text(), path.name


def test_all_streams_lists_every_other_streams_findings() -> None:
    result = _prompt(str(TRACE), "--all-streams", "--json")
    assert result.exit_code == 0, result.output
    report = PromptReport.model_validate(json.loads(result.stdout))
    assert report.other_streams is not None
    assert len(report.other_streams) == len(_session(TRACE).streams) - 1
    kinds = {f.kind for s in report.other_streams for f in s.findings}
    assert kinds == {"below_min_cacheable"}
    view = _prompt(str(TRACE), "--all-streams")
    assert "Other streams: 28, 26 with findings (details: --stream ID)" in view.stdout
    assert all(len(line) <= 80 for line in view.stdout.splitlines())


def test_a_file_that_is_not_a_log_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text("not json\n")
    result = _prompt(str(bad))
    assert result.exit_code == 1
    assert "line 1 is not a JSON object" in result.output


def test_a_bad_line_inside_a_capture_is_skipped_and_counted(tmp_path: Path) -> None:
    capture = tmp_path / "capture.jsonl"
    lines = (PROMPT / "clean.jsonl").read_text().splitlines()
    capture.write_text("\n".join([lines[0], "{oops", *lines[1:]]) + "\n")
    result = _prompt(str(capture))
    assert result.exit_code == 0, result.output
    assert "Request 4 of stream main" in result.stdout
    assert "skipped 1 line(s)" in result.stderr and ":2:" in result.stderr


@pytest.mark.parametrize("path", sorted(PROMPT.glob("*.jsonl")), ids=lambda p: p.stem)
def test_records_with_block_prints_find_the_same(path: Path, tmp_path: Path) -> None:
    # The capture proxy's log: one cachediag record per request, fingerprints only.
    from cachediag.ingest.capture import read_call
    from cachediag.proxy.recording import fingerprint_dict

    lines = []
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        capture = json.loads(raw)
        r = read_call(capture, number).record
        assert r.fingerprint is not None
        line = {
            "schema_version": 2,
            "at": r.at,
            "sent_at": capture["request"]["timestamp"],
            "input_tokens": r.input_tokens,
            "cache_read_tokens": r.cache_read_tokens,
            "cache_creation_tokens": r.cache_creation_tokens,
            "cache_creation_5m": r.cache_creation_5m_tokens,
            "cache_creation_1h": r.cache_creation_1h_tokens,
            "output_tokens": r.output_tokens,
            "model": r.model,
            "message_id": r.message_id,
            "fingerprint": fingerprint_dict(r.fingerprint),
        }
        lines.append(canonical_json(line).decode())
    records = tmp_path / "records.jsonl"
    records.write_text("\n".join(lines) + "\n")
    assert SECRET_TEXT not in records.read_text()
    assert _findings(records) == _findings(path)
