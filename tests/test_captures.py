"""Request/response captures: every cause of prompt-cache.md §4 from the bodies themselves.

The fixtures in fixtures/captures/ are written by their generate.py: four main-thread
requests (cold, hit, the changed one, hit) with Haiku side calls before each, half the
responses JSON and half SSE. Their token rule, used in the arithmetic below:

    prompt of main request k = 10,000 + 1,000 * (2k + 1)
    -> 11,000, 13,000, 15,000, 17,000
    a miss at request 2 re-processes min(13,000, 15,000) - read = 13,000 - read
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import FIXTURES

CAPTURES = FIXTURES / "captures"

# fixture -> (misses, expected rebuilds, miss_causes, details expected on request 2)
EXPECTED: dict[str, tuple[int, int, dict[str, int], dict[str, Any]]] = {
    "system_prompt_changed": (
        1,
        0,
        {"system_prompt_changed": 1},
        # "Always answer in French. " is 25 characters, added to system block 1.
        {"system_char_delta": 25, "system_blocks_changed": [1]},
    ),
    "tools_changed": (
        1,
        0,
        {"tools_changed": 1},
        {
            "tools_added": 1,
            "tools_removed": 1,
            "tools_added_names": ["WebFetch"],
            "tools_removed_names": ["LS"],
        },
    ),
    "model_changed": (1, 0, {"model_changed": 1}, {}),
    "fast_mode_changed": (1, 0, {"fast_mode_changed": 1}, {}),
    "cache_scope_or_ttl_changed": (1, 0, {"cache_scope_or_ttl_changed": 1}, {}),
    "betas_changed": (1, 0, {"betas_changed": 1}, {}),
    "effort_changed": (1, 0, {"effort_changed": 1}, {}),
    "thinking_mode_changed": (1, 0, {"thinking_mode_changed": 1}, {}),
    "thinking_display_changed": (1, 0, {"thinking_display_changed": 1}, {}),
    "extra_body_changed": (1, 0, {"extra_body_changed": 1}, {}),
    "defer_loading_changed": (1, 0, {"defer_loading_changed": 1}, {}),
    "messages_rewritten": (
        1,
        0,
        {"messages_rewritten": 1},
        # The first message (the user's context reminder) was rewritten; the 10,000
        # tokens of tools + system were still read: 13,000 - 10,000 = 3,000 re-processed.
        {"first_rewritten_message": 0, "first_rewritten_role": "user", "reprocessed_tokens": 3_000},
    ),
    # 400 s > 300 s of the 5m TTL; 4,000 s > 3,600 s of the 1h TTL.
    "ttl_expired_5m": (1, 0, {"ttl_expired_5m": 1}, {}),
    "ttl_expired_1h": (1, 0, {"ttl_expired_1h": 1}, {}),
    # 10 s idle, nothing changed, nothing read.
    "likely_server_side": (1, 0, {"likely_server_side": 1}, {}),
    "multi_model_and_system": (
        1,
        0,
        {"model_changed": 1, "system_prompt_changed": 1},
        {"system_char_delta": 25},
    ),
    # 1,200 s idle under a 1h TTL: the full prefix was read, a hit.
    "pause_under_1h_hit": (0, 0, {}, {"outcome": "hit"}),
    # The same pause with nothing read: not an expiry (1,200 s < 3,600 s).
    "pause_under_1h_miss": (1, 0, {"likely_server_side": 1}, {}),
    # applied_edits in the response: an announced rebuild, inside the TTL.
    "context_edit_rebuild": (
        0,
        1,
        {},
        {"outcome": "expected", "announced": "context_edit", "reprocessed_tokens": 3_000},
    ),
    "server_reason": (
        1,
        0,
        {"tools_changed": 1},
        {
            "cause_source": "server",
            "server_causes": ["tools_changed"],
            "tools_added": 1,
            "tools_added_names": ["WebFetch"],
        },
    ),
}


def _analyze(path: Path, *extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", "0", *extra, str(path)])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    obj: dict[str, Any] = json.loads(result.stdout)
    return obj


def test_every_capture_fixture_has_an_expectation() -> None:
    assert {p.stem for p in CAPTURES.glob("*.jsonl")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture_cause(name: str) -> None:
    misses, expected_rebuilds, causes, details = EXPECTED[name]
    obj = _analyze(CAPTURES / f"{name}.jsonl", "--requests")
    pc = obj["prompt_cache"]
    assert obj["format"] == "api-capture"
    assert pc["requests"] == 4
    assert pc["misses"] == misses
    assert pc["expected_rebuilds"] == expected_rebuilds
    assert pc["miss_causes"] == causes
    request = obj["requests"][2]
    if misses:
        assert request["outcome"] == "miss"
        assert sorted(request["causes"]) == sorted(causes)
        assert request["reprocessed_tokens"] == details.get("reprocessed_tokens", 13_000)
        # Named from the bodies (the clock's causes too: only bodies rule out the rest).
        assert request["cause_source"] == details.get("cause_source", "capture")
    for key, value in details.items():
        assert request[key] == value, key
    # The side calls (a quota check stream, topic checks) never disturb the main thread.
    assert all(s["prompt_cache"]["misses"] == 0 for s in obj["streams"])


def test_hit_ratio_and_totals_by_hand() -> None:
    obj = _analyze(CAPTURES / "system_prompt_changed.jsonl")
    # reads: 0 + 11,000 + 0 + 15,000 = 26,000 of prompts 11,000+13,000+15,000+17,000 = 56,000
    assert obj["prompt_cache"]["hit_ratio"] == pytest.approx(26_000 / 56_000)
    # main: 4 requests; side calls: 4 quota checks (8 input each) and 4 topic checks (96).
    assert obj["totals"]["requests"] == 12
    assert obj["totals"]["input_tokens"] == 4 * 3 + 4 * 8 + 4 * 96
    assert obj["prompt_cache"]["last_miss_cause"] == {
        "causes": ["system_prompt_changed"],
        "system_char_delta": 25,
    }


def test_tools_counts_in_the_prompt_cache_object() -> None:
    pc = _analyze(CAPTURES / "tools_changed.jsonl")["prompt_cache"]
    assert pc["last_miss_cause"] == {
        "causes": ["tools_changed"],
        "tools_added": 1,
        "tools_removed": 1,
    }


def test_side_calls_are_their_own_streams() -> None:
    obj = _analyze(CAPTURES / "model_changed.jsonl")
    kinds = sorted((s["kind"], s["prompt_cache"]["requests"]) for s in obj["streams"])
    # 4 identical quota checks form one stream; each topic check asks something new.
    assert kinds == [("side_call", 1)] * 4 + [("side_call", 4)]


def test_capture_read_from_stdin(tmp_path: Path) -> None:
    data = (CAPTURES / "tools_changed.jsonl").read_bytes()
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", "0", "-"], input=data)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["prompt_cache"]["miss_causes"] == {"tools_changed": 1}


def test_parallel_subagents_get_a_stream_each() -> None:
    # Main: 3 requests, then two Task subagents (same system prompt and tools, other
    # prompts, identical tool turns) interleaved 3 requests each, then 2 more main ones.
    obj = _analyze(CAPTURES / "streams" / "parallel_subagents.jsonl", "--requests")
    assert obj["prompt_cache"]["requests"] == 5
    assert obj["prompt_cache"]["misses"] == 0
    subagents = [s for s in obj["streams"] if s["kind"] == "subagent"]
    assert [s["prompt_cache"]["requests"] for s in subagents] == [3, 3]
    assert all(s["prompt_cache"]["misses"] == 0 for s in subagents)
    ids = [[r["message_id"] for r in s["requests"]] for s in subagents]
    assert sorted(ids) == [[f"msg_sub_{n}_{k}" for k in range(3)] for n in "ab"]
