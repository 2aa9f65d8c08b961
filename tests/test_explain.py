"""``cachediag explain``: one request against its predecessor."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import FIXTURES, RULES, SPOTTER_SESSION

CAPTURES = FIXTURES / "captures"


def _explain(*args: str) -> Any:
    return CliRunner().invoke(main, ["explain", *args])


def _json(*args: str) -> dict[str, Any]:
    result = _explain(*args, "--json")
    assert result.exit_code == 0, result.output
    obj: dict[str, Any] = json.loads(result.stdout)
    return obj


def test_default_is_the_last_miss_with_tool_names() -> None:
    result = _explain(str(CAPTURES / "tools_changed.jsonl"))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "Request 2 of stream main: miss · claude-opus-4-5-20251101 ·"
    assert lines[1] == "  2025-11-30 00:00:52 UTC"
    assert "  cause: tools_changed (from the captured requests)" in lines
    assert "  tools added: WebFetch" in lines
    assert "  tools removed: LS" in lines


def test_costs_worked_by_hand() -> None:
    obj = _json(str(CAPTURES / "tools_changed.jsonl"))
    # Opus 4.5 (pricing.md): $5 in, $6.25 5m write, $0.50 read, $25 out per Mtok.
    # actual: 3*5 + 14,997*6.25 + 120*25 = 96,746.25 -> $0.09674625
    # the miss: 13,000 re-processed written at 6.25 instead of read at 0.50 -> $0.07475
    cost = obj["cost"]
    assert cost["actual_usd"] == pytest.approx(0.096746, abs=1e-6)
    assert cost["miss_usd"] == pytest.approx(0.07475, abs=1e-6)
    assert cost["if_hit_usd"] == pytest.approx(0.096746 - 0.07475, abs=2e-6)
    assert obj["tokens"] == {
        "read": 0,
        "written": 14_997,
        "uncached_input": 3,
        "reprocessed": 13_000,
        "previous_prompt": 13_000,
    }


def test_multi_cause_settings_before_and_after() -> None:
    obj = _json(str(CAPTURES / "multi_model_and_system.jsonl"))
    assert obj["changes"]["model"] == {
        "before": "claude-opus-4-5-20251101",
        "after": "claude-sonnet-4-5-20250929",
    }
    assert obj["changes"]["system_blocks_changed"] == [1]
    assert obj["changes"]["system_char_delta"] == 25


@pytest.mark.parametrize(
    ("name", "field", "before", "after"),
    [
        ("effort_changed", "effort", "default", "low"),
        ("thinking_mode_changed", "thinking_mode", "enabled", "off"),
        ("thinking_display_changed", "thinking_display", "default", "omitted"),
        ("fast_mode_changed", "fast_mode", "default", "fast"),
        ("defer_loading_changed", "defer_loading", False, True),
    ],
)
def test_setting_changes(name: str, field: str, before: object, after: object) -> None:
    obj = _json(str(CAPTURES / f"{name}.jsonl"))
    assert obj["changes"][field] == {"before": before, "after": after}


def test_betas_and_rewrites() -> None:
    betas = _json(str(CAPTURES / "betas_changed.jsonl"))["changes"]["betas"]
    assert betas == {"added": ["context-1m-2025-08-07"], "removed": []}
    rewritten = _json(str(CAPTURES / "messages_rewritten.jsonl"))["changes"]
    assert rewritten["first_rewritten_message"] == 0
    assert rewritten["first_rewritten_role"] == "user"


def test_ttl_and_gap() -> None:
    obj = _json(str(CAPTURES / "pause_under_1h_miss.jsonl"))
    # 1,200 s under a 1h TTL: alive, so the miss is not an expiry.
    assert (obj["ttl_in_force"], obj["idle_s"], obj["ttl_expired"]) == ("1h", 1200.0, False)
    assert obj["request"]["causes"] == ["likely_server_side"]


def test_message_id_and_request_index() -> None:
    by_id = _json(str(CAPTURES / "model_changed.jsonl"), "--message-id", "msg_main_3")
    assert by_id["request"]["index"] == 3
    assert by_id["request"]["outcome"] == "hit"
    assert by_id["changes"] == {}
    first = _json(str(CAPTURES / "model_changed.jsonl"), "--request", "0")
    assert first["previous_index"] is None


def test_transcript_without_bodies() -> None:
    result = _explain(str(SPOTTER_SESSION))
    assert result.exit_code == 0, result.output
    assert "request bodies not in this log" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--request", "9"], "has 4 requests (0-3); no request 9"),
        (["--message-id", "msg_nope"], "no message id 'msg_nope'"),
        (["--stream", "nope"], "no stream 'nope'"),
    ],
)
def test_errors(args: list[str], message: str) -> None:
    result = _explain(str(CAPTURES / "model_changed.jsonl"), *args)
    assert result.exit_code == 1
    assert message in result.stderr


def test_no_miss_says_so_in_one_line() -> None:
    result = _explain(str(CAPTURES / "pause_under_1h_hit.jsonl"))
    assert result.exit_code == 0, result.output
    assert result.stdout == "no miss or rebuild in stream main (4 requests)\n"
    assert "--request N" in result.stderr


def test_no_miss_falls_back_to_the_last_expected_rebuild() -> None:
    result = _explain(str(RULES / "compaction_expected.jsonl"))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Request 1 of stream main: expected ·")
    assert "  expected rebuild, announced by a compaction" in result.stdout
    assert "re-cache cost of the rebuild $" in result.stdout


def test_a_hit_is_not_priced_as_a_miss() -> None:
    result = _explain(str(CAPTURES / "pause_under_1h_hit.jsonl"), "--request", "1")
    assert result.exit_code == 0, result.output
    assert "more" not in result.stdout
    assert "re-processed" not in result.stdout
    assert "(a hit)" in result.stdout
