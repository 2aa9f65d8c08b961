"""OpenAI and OpenRouter: every cause from the bodies, the server's own diagnostics, the
TTL in force, a change of provider and the provider's own cost.

The logs in fixtures/providers/ are written by their generate.py: four main requests
(cold, hit, the changed one, hit) with a side call on a small model before each. Token
rule, used in the arithmetic below (OpenAI counts cached tokens inside the prompt):

    prompt of main request k = 10,000 + 1,000 * (2k + 1) -> 11,000, 13,000, 15,000, 17,000
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
from tests.test_captures import _analyze

PROVIDERS = FIXTURES / "providers"
CAPTURE, USAGE = "api-capture", "api-usage"

# fixture -> (format, outcome of request 2, its causes, cause_source, other details).
# Each body-level change exists for Chat Completions ("chat_") and Responses.
BODY_CHANGES = (
    "system_prompt_changed",
    "tools_changed",
    "model_changed",
    "effort_changed",
    "text_format_changed",
    "verbosity_changed",
    "service_tier_changed",
    "prompt_cache_key_changed",
    "messages_rewritten",
    "extra_body_changed",
)
# list_dir was removed and web_fetch added before request 2.
TOOLS_SWAPPED = {
    "tools_added": 1,
    "tools_removed": 1,
    "tools_added_names": ["web_fetch"],
    "tools_removed_names": ["list_dir"],
}
EXPECTED: dict[str, tuple[str, str, list[str], str | None, dict[str, Any]]] = {
    **{
        f"{api}_{cause}": (CAPTURE, "miss", [cause], "capture", {})
        for api in ("chat", "responses")
        for cause in BODY_CHANGES
    },
    # Only the input changed: instructions and tools (10,000 tokens) were still read.
    "chat_messages_rewritten": (
        CAPTURE,
        "miss",
        ["messages_rewritten"],
        "capture",
        {"reprocessed_tokens": 3_000, "first_rewritten_message": 0, "first_rewritten_role": "user"},
    ),
    "responses_messages_rewritten": (
        CAPTURE,
        "miss",
        ["messages_rewritten"],
        "capture",
        {"reprocessed_tokens": 3_000, "first_rewritten_message": 0, "first_rewritten_role": "user"},
    ),
    "responses_system_prompt_changed": (
        CAPTURE,
        "miss",
        ["system_prompt_changed"],
        "capture",
        {"system_char_delta": 25},
    ),
    "chat_system_prompt_changed": (
        CAPTURE,
        "miss",
        ["system_prompt_changed"],
        "capture",
        {"system_char_delta": 25},
    ),
    "responses_tools_changed": (
        CAPTURE,
        "miss",
        ["tools_changed"],
        "capture",
        TOOLS_SWAPPED,
    ),
    "chat_tools_changed": (
        CAPTURE,
        "miss",
        ["tools_changed"],
        "capture",
        TOOLS_SWAPPED,
    ),
    # Nothing changed, 10 s idle: the clock cannot explain it.
    "chat_likely_server_side": (CAPTURE, "miss", ["likely_server_side"], "capture", {}),
    "responses_likely_server_side": (CAPTURE, "miss", ["likely_server_side"], "capture", {}),
    # temperature is a sampling setting, not part of the cached prefix.
    "chat_temperature_only": (CAPTURE, "miss", ["likely_server_side"], "capture", {}),
    "responses_temperature_only": (CAPTURE, "miss", ["likely_server_side"], "capture", {}),
    # GPT-5.6 keeps entries 30 min (2,000 s > 1,800 s; 1,000 s < 1,800 s read everything).
    "responses_ttl_expired_30m": (CAPTURE, "miss", ["ttl_expired_30m"], "capture", {"ttl": "30m"}),
    "responses_pause_under_30m_hit": (CAPTURE, "hit", [], None, {"ttl": "30m"}),
    # Earlier models keep them 5-10 minutes in memory (400 s > 300 s), a day with 24h
    # retention (7,200 s is no expiry; 90,000 s > 86,400 s is).
    "chat_ttl_expired_5m": (CAPTURE, "miss", ["ttl_expired_5m"], "capture", {"ttl": "5m"}),
    "chat_retention_24h_pause_2h": (
        CAPTURE,
        "miss",
        ["likely_server_side"],
        "capture",
        {"ttl": "24h"},
    ),
    "chat_ttl_expired_24h": (CAPTURE, "miss", ["ttl_expired_24h"], "capture", {"ttl": "24h"}),
    # previous_response_id: only the new turn is sent; still one conversation.
    "responses_chained_hits": (CAPTURE, "hit", [], None, {}),
    # A server-held conversation (``conversation``): only new items are sent.
    "responses_conversation_hits": (CAPTURE, "hit", [], None, {}),
    "responses_conversation_tools_changed": (
        CAPTURE,
        "miss",
        ["tools_changed"],
        "capture",
        {"tools_added": 1, "tools_added_names": ["web_fetch"]},
    ),
    "responses_chained_model_changed": (CAPTURE, "miss", ["model_changed"], "capture", {}),
    # The server's own diagnostics (GPT-5.6+), with the bodies agreeing.
    "diag_model_changed": (
        CAPTURE,
        "miss",
        ["model_changed"],
        "server",
        {"server_causes": ["model_changed"]},
    ),
    "diag_prompt_cache_key_changed": (
        CAPTURE,
        "miss",
        ["prompt_cache_key_changed"],
        "server",
        {"server_causes": ["prompt_cache_key_changed"]},
    ),
    "diag_tools_changed": (
        CAPTURE,
        "miss",
        ["tools_changed"],
        "server",
        {"server_causes": ["tools_changed"], "tools_added": 1, "tools_added_names": ["web_fetch"]},
    ),
    "diag_text_format_changed": (
        CAPTURE,
        "miss",
        ["text_format_changed"],
        "server",
        {"server_causes": ["text_format_changed"]},
    ),
    "diag_reasoning_effort_changed": (
        CAPTURE,
        "miss",
        ["effort_changed"],
        "server",
        {"server_causes": ["effort_changed"]},
    ),
    "diag_verbosity_changed": (
        CAPTURE,
        "miss",
        ["verbosity_changed"],
        "server",
        {"server_causes": ["verbosity_changed"]},
    ),
    "diag_service_tier_changed": (
        CAPTURE,
        "miss",
        ["service_tier_changed"],
        "server",
        {"server_causes": ["service_tier_changed"]},
    ),
    "diag_input_changed": (
        CAPTURE,
        "miss",
        ["messages_rewritten"],
        "server",
        {"server_causes": ["messages_rewritten"], "reprocessed_tokens": 3_000},
    ),
    # The server compacted the context itself: an announced rebuild, not a miss.
    "diag_context_compacted": (
        CAPTURE,
        "expected",
        [],
        None,
        {"announced": "compaction", "reprocessed_tokens": 13_000},
    ),
    # "No divergence" from the server, nothing changed in the bodies, 10 s idle.
    "diag_cache_hit": (CAPTURE, "miss", ["likely_server_side"], "server", {}),
    # The server could not compare: the bodies still say what changed.
    "diag_comparison_response_not_found": (CAPTURE, "miss", ["tools_changed"], "capture", {}),
    "diag_unavailable": (CAPTURE, "miss", ["tools_changed"], "capture", {}),
    # Response objects alone: the server's word is all there is.
    "diag_tools_changed_responses": (
        USAGE,
        "miss",
        ["tools_changed"],
        "server",
        {"server_causes": ["tools_changed"]},
    ),
    "diag_service_tier_changed_responses": (
        USAGE,
        "miss",
        ["service_tier_changed"],
        "server",
        {"server_causes": ["service_tier_changed"]},
    ),
    "diag_context_compacted_responses": (USAGE, "expected", [], None, {"announced": "compaction"}),
    "diag_unavailable_responses": (USAGE, "miss", ["unknown"], "inferred", {}),
    # OpenRouter: sticky routing fell back from Anthropic to Amazon Bedrock.
    "openrouter_provider_changed": (
        CAPTURE,
        "miss",
        ["provider_changed"],
        "inferred",
        {"provider": "Amazon Bedrock", "cost_source": "provider"},
    ),
    "openrouter_provider_changed_responses": (
        USAGE,
        "miss",
        ["provider_changed"],
        "inferred",
        {"provider": "Amazon Bedrock", "cost_source": "provider"},
    ),
    # The same, logged event by event: only the last chunk carries usage and cost.
    "openrouter_provider_changed_chunks": (
        USAGE,
        "miss",
        ["provider_changed"],
        "inferred",
        {"provider": "Amazon Bedrock", "cost_source": "provider"},
    ),
    "diag_tools_changed_events": (
        USAGE,
        "miss",
        ["tools_changed"],
        "server",
        {"server_causes": ["tools_changed"]},
    ),
    # cache_control ttl 1h through OpenRouter: 1,200 s idle is inside the hour.
    "openrouter_1h_pause_20m": (
        CAPTURE,
        "miss",
        ["likely_server_side"],
        "capture",
        {"ttl": "1h", "cost_source": "provider"},
    ),
    "openrouter_byok_hits": (
        CAPTURE,
        "hit",
        [],
        None,
        {"provider": "Anthropic", "cost_source": "provider"},
    ),
}


def test_every_provider_fixture_has_an_expectation() -> None:
    assert {p.stem for p in PROVIDERS.glob("*.jsonl")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_provider_cause(name: str) -> None:
    fmt, outcome, causes, source, details = EXPECTED[name]
    obj = _analyze(PROVIDERS / f"{name}.jsonl", "--requests")
    pc = obj["prompt_cache"]
    assert obj["format"] == fmt
    assert pc["requests"] == 4
    assert pc["misses"] == (outcome == "miss")
    assert pc["expected_rebuilds"] == (outcome == "expected")
    # An unnamed miss (unknown) is not counted by cause.
    assert pc["miss_causes"] == {c: 1 for c in causes if c != "unknown"}
    request = obj["requests"][2]
    assert request["outcome"] == outcome
    assert request["causes"] == causes
    assert request["cause_source"] == source
    if outcome != "hit":
        assert request["reprocessed_tokens"] == details.get("reprocessed_tokens", 13_000)
    for key, value in details.items():
        assert request[key] == value, key
    # The side calls on the small model never disturb the main conversation.
    assert all(s["prompt_cache"]["misses"] == 0 for s in obj["streams"])
    assert all(r["model"] != "gpt-5-nano" for r in obj["requests"])


def test_openai_cached_tokens_are_inside_the_prompt() -> None:
    obj = _analyze(PROVIDERS / "responses_tools_changed.jsonl", "--requests")
    first, second, missed = obj["requests"][:3]
    # 11,000 prompt, nothing read, 10,997 written: 3 uncached.
    assert (first["input_tokens"], first["cache_read_tokens"]) == (3, 0)
    assert first["cache_creation_tokens"] == 10_997
    assert (second["cache_read_tokens"], second["input_tokens"]) == (11_000, 3)
    assert missed["cache_creation_tokens"] == 14_997


def test_comparison_and_previous_response_ids_are_not_a_change() -> None:
    # Every Responses request names the previous response; chained ones send only the
    # new turn: neither is a body change, so a hit stays a hit.
    for name in ("responses_chained_hits", "responses_pause_under_30m_hit"):
        obj = _analyze(PROVIDERS / f"{name}.jsonl")
        assert obj["prompt_cache"]["misses"] == 0
        assert obj["prompt_cache"]["hits"] == 3


def test_server_counts_are_kept_as_evidence() -> None:
    obj = _analyze(PROVIDERS / "diag_input_changed.jsonl", "--requests")
    evidence = obj["requests"][2]["evidence"]
    assert evidence["server_reason"] == "input_changed"
    # The baseline's 13,000-token prompt: 10,000 reusable, 3,000 missed.
    assert evidence["server_missed_tokens"] == 3_000
    assert evidence["server_reusable_tokens"] == 10_000
    result = CliRunner().invoke(main, ["explain", str(PROVIDERS / "diag_input_changed.jsonl")])
    assert "server said: input_changed, 3,000 tokens not reused, 10,000 reusable" in result.stdout


def test_records_carry_openai_dimensions_and_the_provider(tmp_path: Path) -> None:
    def line(at: float, read: int, **extra: Any) -> str:
        fp = {"model": "gpt-5.6", "message_hashes": ["a"], "verbosity": "medium"}
        fp |= extra.pop("fp", {})
        rec = {"at": at, "input_tokens": 13_000 - read, "cache_read_tokens": read}
        rec |= {"cache_creation_tokens": 0, "ttl": "30m", "fingerprint": fp, **extra}
        return json.dumps(rec) + "\n"

    path = tmp_path / "records.jsonl"
    path.write_text(
        line(0, 0, provider="A", reported_cost_usd=0.5)
        + line(10, 12_000, provider="A")
        + line(20, 0, provider="A", fp={"verbosity": "low"})
        + line(30, 12_000, provider="A", fp={"verbosity": "low"})
        + line(40, 0, provider="B", fp={"verbosity": "low"})
    )
    obj = _analyze(path, "--requests")
    assert [r["causes"] for r in obj["requests"]] == [
        [],
        [],
        ["verbosity_changed"],
        [],
        ["provider_changed"],
    ]
    assert obj["prompt_cache"]["ttl"] == "30m"
    assert obj["requests"][0]["cost_usd"] == 0.5
    assert obj["requests"][0]["cost_source"] == "provider"


def test_provider_cost_is_used_and_said() -> None:
    obj = _analyze(PROVIDERS / "openrouter_byok_hits.jsonl", "--requests")
    # BYOK: OpenRouter's 5% fee plus the upstream provider's bill. Request 0 writes
    # 10,997 tokens: (3 * 3 + 10,997 * 3.75 + 120 * 15) / 1e6 upstream.
    upstream = (3 * 3 + 10_997 * 3.75 + 120 * 15) / 1e6
    first = obj["requests"][0]
    assert first["cost_usd"] == pytest.approx(upstream * 1.05, abs=1e-7)
    assert first["cost_source"] == "provider"
    assert obj["cost"]["reported_cost_requests"] == 4
    result = CliRunner().invoke(
        main, ["analyze", "--now", "0", str(PROVIDERS / "openrouter_byok_hits.jsonl")]
    )
    assert "4 at the provider's reported cost" in result.stdout


def test_provider_switch_explained() -> None:
    result = CliRunner().invoke(
        main, ["explain", str(PROVIDERS / "openrouter_provider_changed.jsonl")]
    )
    assert result.exit_code == 0, result.output
    assert "cause: provider_changed (inferred from the log)" in result.stdout
    assert "provider: Anthropic -> Amazon Bedrock" in result.stdout
    assert "cost reported by the provider" in result.stdout


def test_nothing_secret_is_printed() -> None:
    for path in sorted(PROVIDERS.glob("*.jsonl")):
        for command in (["analyze", "--json", "--requests", "--now", "0"], ["explain"]):
            result = CliRunner().invoke(main, [*command, str(path)])
            assert "hunter2" not in result.output
            assert "sk-proj" not in result.output
            assert "repo-login-fix" not in result.output  # prompt_cache_key is hashed


def test_ttl_what_if_leaves_openai_streams_as_they_happened() -> None:
    # 5m and 1h are Anthropic's choice; OpenAI's TTL is the provider's (or 24h retention),
    # so its 400 s expiry is not "saved" by a 1h policy it could not have used.
    result = CliRunner().invoke(
        main, ["audit", "--json", str(PROVIDERS / "chat_ttl_expired_5m.jsonl")]
    )
    assert result.exit_code == 0, result.output
    whatif = json.loads(result.stdout)["whatif"]
    assert {p["cost_usd"] for p in whatif["policies"]} == {whatif["policies"][0]["cost_usd"]}
    assert {p["misses"] for p in whatif["policies"]} == {1}
    assert whatif["best"] == "as_happened"
