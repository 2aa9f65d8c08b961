"""Usage-only logs and cachediag's own records (formats.md §3), fixtures in fixtures/usage/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import FIXTURES

USAGE = FIXTURES / "usage"


def _analyze(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["analyze", "--json", "--requests", "--now", "0", str(path)])
    assert result.exit_code == 0, result.output
    obj: dict[str, Any] = json.loads(result.stdout)
    return obj


def _outcomes(obj: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(r["outcome"], r["causes"]) for r in obj["requests"]]


def test_anthropic_messages() -> None:
    obj = _analyze(USAGE / "anthropic_messages.jsonl")
    assert obj["format"] == "api-usage"
    # reads 0 + 8,000 + 0 + 9,500 + 0; writes 8,000 + 1,000 + 9,500 + 500 + 10,500
    assert obj["totals"]["cache_read_tokens"] == 17_500
    assert obj["totals"]["cache_creation_tokens"] == 29_500
    assert _outcomes(obj) == [
        ("cold", []),
        ("hit", []),
        ("miss", ["ttl_expired_5m"]),  # 380 s idle > 300 s
        ("hit", []),
        ("miss", ["system_prompt_changed"]),  # the API's system_changed
    ]
    assert obj["requests"][4]["cause_source"] == "server"
    assert obj["requests"][2]["cause_source"] == "inferred"


@pytest.mark.parametrize("name", ["openai_chat.jsonl", "openai_responses.jsonl"])
def test_openai_cached_tokens_are_inside_the_prompt(name: str) -> None:
    obj = _analyze(USAGE / name)
    second = obj["requests"][1]
    # prompt 6,000 of which 4,992 cached: 4,992 read, 6,000 - 4,992 = 1,008 uncached.
    assert second["cache_read_tokens"] == 4_992
    assert second["input_tokens"] == 1_008
    assert second["cache_creation_tokens"] == 0


def test_openai_hit_ratio() -> None:
    pc = _analyze(USAGE / "openai_chat.jsonl")["prompt_cache"]
    # reads 0 + 4,992 + 5,888 = 10,880 of prompts 5,000 + 6,000 + 7,000 = 18,000
    assert pc["hit_ratio"] == pytest.approx(10_880 / 18_000)


@pytest.mark.parametrize("name", ["stream.sse", "sse_events.jsonl"])
def test_sse_streams(name: str) -> None:
    obj = _analyze(USAGE / name)
    # message_delta's cumulative output (40, 60) overrides message_start's 1.
    assert [r["output_tokens"] for r in obj["requests"]] == [40, 60]
    assert obj["totals"]["cache_creation_tokens"] == 5_000 + 700
    assert _outcomes(obj) == [("cold", []), ("hit", [])]


def test_normalised_records_name_claude_code_internal_causes() -> None:
    obj = _analyze(USAGE / "records.jsonl")
    assert obj["format"] == "cachediag-records"
    pc = obj["prompt_cache"]
    assert pc["miss_causes"] == {"auto_mode_changed": 1, "overage_changed": 1}
    assert _outcomes(obj)[5:] == [
        # compaction announced 5 s before; read 5,000 of min(13,505, 8,005): expected.
        ("expected", []),
        # no fingerprint, same model, 10 s idle, nothing read: cannot be told apart.
        ("miss", ["unknown"]),
    ]
    assert obj["requests"][5]["reprocessed_tokens"] == 8_005 - 5_000
    assert pc["misses"] == 3
    assert pc["expected_rebuilds"] == 1


def test_schema_validates_the_records_fixture() -> None:
    jsonschema = pytest.importorskip("jsonschema")

    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    for line in (USAGE / "records.jsonl").read_text().splitlines():
        jsonschema.validate(json.loads(line), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"at": 1, "input_tokens": -1, "cache_read_tokens": 0, "cache_creation_tokens": 0},
            schema,
        )


def test_invalid_record_is_skipped_without_quoting_it(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"at": 1, "input_tokens": 1, "cache_read_tokens": 0, "cache_creation_tokens": 0}\n'
        '{"at": 2, "input_tokens": "hunter2", "cache_read_tokens": 0, '
        '"cache_creation_tokens": 0}\n'
    )
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", "0", str(path)])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["skipped_lines"] == 1
    assert ":2: not a valid cachediag record (input_tokens" in result.stderr
    assert "hunter2" not in result.stderr


def test_gemini_and_bedrock() -> None:
    obj = _analyze(USAGE / "gemini_bedrock.jsonl")
    # Bedrock: inputTokens are the uncached part, reads and writes apart.
    assert [
        (r["input_tokens"], r["cache_read_tokens"], r["cache_creation_tokens"])
        for r in obj["requests"]
    ] == [(12, 0, 7_000), (15, 7_000, 400)]
    # Gemini: promptTokenCount 9,000 includes 8,192 cached -> 808 uncached; grouped by
    # model, so it is a stream of its own beside the Bedrock conversation.
    (gemini,) = obj["streams"]
    assert gemini["id"] == "gemini-2.5-pro"
    assert gemini["prompt_cache"]["hit_ratio"] == pytest.approx(8_192 / 9_000)
