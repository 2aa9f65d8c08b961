"""The real claude-trace capture, bad capture records, and what never reaches the output."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import FIXTURES, REAL

TRACE = REAL / "claude-trace" / "test-traffic.jsonl"
CAPTURES = FIXTURES / "captures"
SECRETS = ("sk-ant-oat01-FAKE-SECRET-TOKEN-0000", "hunter2", "Fix the login bug", "req_0001")


def _usage_sums(path: Path) -> dict[str, int]:
    """Sum every response's usage straight from the file, the simplest possible way."""
    sums = {"requests": 0, "input": 0, "read": 0, "creation": 0, "output": 0}
    for line in path.read_text().splitlines():
        response = json.loads(line)["response"]
        if response.get("body") is not None:
            usage = response["body"]["usage"]
        else:
            usage = {}
            for row in response["body_raw"].splitlines():
                if not row.startswith("data:"):
                    continue
                event = json.loads(row[5:])
                if event["type"] == "message_start":
                    usage = dict(event["message"]["usage"])
                elif event["type"] == "message_delta":
                    usage.update(event["usage"])
        sums["requests"] += 1
        sums["input"] += usage["input_tokens"]
        sums["read"] += usage["cache_read_input_tokens"]
        sums["creation"] += usage["cache_creation_input_tokens"]
        sums["output"] += usage["output_tokens"]
    return sums


def _run(*args: str, data: bytes | None = None) -> Any:
    return CliRunner().invoke(main, list(args), input=data)


def test_real_capture_totals_equal_the_sum_of_its_responses() -> None:
    result = _run("analyze", "--json", "--now", "0", str(TRACE))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    obj = json.loads(result.stdout)
    want = _usage_sums(TRACE)
    assert want["requests"] == 64
    assert obj["totals"] == {
        "requests": want["requests"],
        "input_tokens": want["input"],
        "cache_read_tokens": want["read"],
        "cache_creation_tokens": want["creation"],
        "output_tokens": want["output"],
    }


def test_real_capture_streams() -> None:
    obj = json.loads(_run("analyze", "--json", "--now", "0", str(TRACE)).stdout)
    # 17 Sonnet requests (records 5-34 every other one, 57, 60, 63). Record 34 is the
    # compaction agent: another system prompt, one tool (Read), the conversation quoted
    # from message 1 on. Records 57/60/63 carry on the main thread's system and tools
    # after it: 17 - 1 = 16 main requests, the first after compaction an expected rebuild.
    pc = obj["prompt_cache"]
    assert pc["requests"] == 16
    assert pc["expected_rebuilds"] == 1
    assert pc["misses"] == 0
    by_kind: dict[str, list[int]] = {}
    for s in obj["streams"]:
        by_kind.setdefault(s["kind"], []).append(s["prompt_cache"]["requests"])
    assert by_kind["compaction"] == [1]
    assert "subagent" not in by_kind
    # The 18 identical one-message quota checks are one stream, not the main one.
    assert max(by_kind["side_call"]) == 18
    assert sum(by_kind["side_call"]) == 64 - 16 - 1


def _capture_line(request: dict[str, Any] | str, response: Any, url: str | None = None) -> str:
    req: dict[str, Any] = {
        "timestamp": 1764460800.0,
        "method": "POST",
        "url": url or "https://api.anthropic.com/v1/messages",
        "headers": {"authorization": "Bearer sk-ant-oat01-FAKE-SECRET"},
        "body": request,
    }
    return json.dumps({"request": req, "response": response}) + "\n"


GOOD_BODY = {"model": "claude-opus-4-5", "messages": [{"role": "user", "content": "hunter2"}]}
GOOD_USAGE = {
    "input_tokens": 5,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "output_tokens": 7,
}


def test_bad_capture_records_are_counted_and_skipped(tmp_path: Path) -> None:
    truncated = (
        "event: message_start\ndata: "
        + json.dumps({"type": "message_start", "message": {"id": "m", "usage": GOOD_USAGE}})
        + "\n\n"
    )
    lines = [
        _capture_line(
            GOOD_BODY,
            {
                "timestamp": 1764460801.0,
                "status_code": 200,
                "body": {"id": "m1", "usage": GOOD_USAGE},
            },
        ),
        _capture_line(GOOD_BODY, {"timestamp": 1764460802.0, "body_raw": truncated}),
        _capture_line(GOOD_BODY, {"timestamp": 1764460803.0, "body": {"id": "m2"}}),
        _capture_line("hunter2 is not JSON", {"timestamp": 1764460804.0, "body": {}}),
        _capture_line(
            GOOD_BODY,
            {"timestamp": 1764460805.0, "body": {"input_tokens": 9}},
            url="https://api.anthropic.com/v1/messages/count_tokens",
        ),
        _capture_line(GOOD_BODY, None),
        '{"request": {"body": {"messages": [{"content": "hunter2"',
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(lines))
    result = _run("analyze", "--json", "--now", "0", str(path))
    assert result.exit_code == 0, result.output
    obj = json.loads(result.stdout)
    assert obj["format"] == "api-capture"
    assert obj["prompt_cache"]["requests"] == 1
    assert obj["skipped_lines"] == 5
    # The count_tokens call is not a model request: passed over quietly, but counted.
    assert obj["non_model_calls"] == 1
    assert "not a model request" not in result.stderr
    for reason in ("truncated", "no usage", "not a JSON object", "never got an answer"):
        assert reason in result.stderr
    assert "hunter2" not in result.stderr + result.stdout
    assert "FAKE-SECRET" not in result.stderr + result.stdout


def test_error_responses_count_as_api_errors(tmp_path: Path) -> None:
    path = tmp_path / "err.jsonl"
    path.write_text(
        _capture_line(
            GOOD_BODY, {"timestamp": 1764460801.0, "status_code": 529, "body": {"type": "error"}}
        )
    )
    obj = json.loads(_run("analyze", "--json", "--now", "0", str(path)).stdout)
    assert obj["api_errors"] == 1
    assert obj["skipped_lines"] == 0


def test_not_a_log_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "config.jsonl"
    path.write_text('{"name": "x", "secret": "hunter2"}\n')
    result = _run("analyze", str(path))
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ")
    assert "hunter2" not in result.stderr


@pytest.mark.parametrize("path", sorted(CAPTURES.glob("*.jsonl")), ids=lambda p: p.stem)
def test_no_prompt_text_or_header_value_in_any_output(path: Path) -> None:
    outputs = [
        _run("analyze", "--now", "0", str(path)),
        _run("analyze", "--json", "--requests", "--now", "0", str(path)),
        _run("explain", "--request", "2", str(path)),
        _run("explain", "--request", "2", "--json", str(path)),
    ]
    for result in outputs:
        assert result.exit_code == 0, result.output
        text = result.stdout + result.stderr
        # JSON lines are compact ("index":2), explain's JSON is indented ("index": 2).
        assert re.search(r'Request 2|"index": ?2\b|Prompt cache', text)
        for secret in SECRETS:
            assert secret not in text


def test_shared_corpus_capture_reads_cleanly(corpus: Path) -> None:
    path = corpus / "claude-trace" / "test-traffic.jsonl"
    result = _run("analyze", "--json", "--now", "0", str(path))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert json.loads(result.stdout)["totals"]["requests"] == _usage_sums(path)["requests"]
