"""Request/response pairs under other key spellings, SSE details, the fingerprint's rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.ingest.capture import parse_sse
from cachediag.ingest.fingerprint import betas_from_headers, fingerprint_request
from cachediag.ingest.threads import continuation_score

SYSTEM = [{"type": "text", "text": "You are a coding agent."}]
TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def _body(n_messages: int, **extra: Any) -> dict[str, Any]:
    msgs = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
        for i in range(n_messages)
    ]
    return {
        "model": "claude-sonnet-4-5",
        "system": SYSTEM,
        "tools": TOOLS,
        "messages": msgs,
        **extra,
    }


def _usage(read: int, creation: int) -> dict[str, int]:
    return {
        "input_tokens": 2,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": creation,
        "output_tokens": 9,
    }


# Three requests: cold 6,000; hit reading 6,000; then temperature changes and nothing is
# read: min(8,002, 9,002) - 0 = 8,002 re-processed, a miss.
PAIRS = [(1, 0, 6_000, {}), (3, 6_000, 2_000, {}), (5, 0, 9_000, {"temperature": 0})]


def _pair_lines(style: str) -> str:
    rows = []
    for i, (n, read, creation, extra) in enumerate(PAIRS):
        body = _body(n, **extra)
        response = {"id": f"msg_{i}", "type": "message", "usage": _usage(read, creation)}
        at = 1764460800 + 10 * i
        if style == "request_body":
            rows.append(
                {
                    "request_body": body,
                    "response_body": response,
                    "timestamp": at,
                    "request_headers": [["anthropic-beta", "a-1"]],
                }
            )
        elif style == "string_bodies":
            rows.append(
                {
                    "request": {
                        "url": "https://proxy.local/v1/messages",
                        "body": json.dumps(body),
                        "timestamp": at,
                    },
                    "response": {"body": json.dumps(response), "timestamp": at + 1},
                }
            )
        else:
            rows.append(
                {"req": body, "res": response, "started_at": f"2025-11-30T00:00:{10 * i:02d}Z"}
            )
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.mark.parametrize("style", ["request_body", "string_bodies", "req_res_iso_time"])
def test_pair_logs_under_other_key_names(style: str, tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(_pair_lines(style))
    result = CliRunner().invoke(main, ["analyze", "--json", "--requests", "--now", "0", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    obj = json.loads(result.stdout)
    assert obj["format"] == "api-capture"
    assert [r["outcome"] for r in obj["requests"]] == ["cold", "hit", "miss"]
    assert obj["requests"][2]["causes"] == ["extra_body_changed"]
    assert obj["requests"][2]["reprocessed_tokens"] == 8_002


def test_sse_delta_overrides_and_carries_edits_and_diagnostics() -> None:
    start = {"type": "message_start", "message": {"id": "m", "usage": _usage(100, 5)}}
    delta = {
        "type": "message_delta",
        "usage": {"output_tokens": 77, "cache_read_input_tokens": 90},
        "context_management": {"applied_edits": [{"type": "clear_tool_uses"}]},
        "diagnostics": {"cache_miss_reason": {"type": "messages_changed"}},
    }
    text = "".join(
        f"event: x\ndata: {json.dumps(e)}\n\n" for e in (start, delta, {"type": "message_stop"})
    )
    message, finished = parse_sse(text)
    assert finished
    assert message["usage"]["output_tokens"] == 77
    assert message["usage"]["cache_read_input_tokens"] == 90
    assert message["usage"]["cache_creation_input_tokens"] == 5
    assert message["context_management"]["applied_edits"] == [{"type": "clear_tool_uses"}]
    assert message["diagnostics"]["cache_miss_reason"]["type"] == "messages_changed"


def test_fingerprint_ignores_markup_and_keeps_no_text() -> None:
    plain = _body(3)
    marked = _body(3)
    marked["messages"][2] = {
        "role": "user",
        "content": [{"type": "text", "text": "m2", "cache_control": {"type": "ephemeral"}}],
    }
    plain["messages"][2] = {"role": "user", "content": [{"type": "text", "text": "m2"}]}
    a, b = fingerprint_request(plain, ()), fingerprint_request(marked, ())
    assert a.message_hashes == b.message_hashes
    assert "coding agent" not in repr(a) and "m2" not in repr(a)
    assert a.system_chars == len("You are a coding agent.")
    assert a.tools is not None and a.tools[0][0] == "Bash"


def test_betas_are_sorted_names_from_one_header_only() -> None:
    headers = {"Anthropic-Beta": "b-2, a-1", "authorization": "Bearer secret"}
    assert betas_from_headers(headers) == ("a-1", "b-2")


def test_first_message_rewrite_stays_in_its_conversation() -> None:
    before = fingerprint_request(_body(5), ())
    rewritten = _body(7)
    rewritten["messages"][0]["content"] = "new reminder"
    score = continuation_score(before, fingerprint_request(rewritten, ()))
    # messages 1-4 still match at their positions; system and tools are the same agent's.
    assert score == (4, 2)


def test_another_agent_quoting_one_message_is_not_a_continuation() -> None:
    before = fingerprint_request(_body(5), ())
    other = _body(1)
    other["system"] = [{"type": "text", "text": "Summarise titles."}]
    other["tools"] = []
    assert continuation_score(before, fingerprint_request(other, ())) is None


def test_openai_chat_capture_names_tool_changes(tmp_path: Path) -> None:
    def tool(name: str) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "parameters": {}}}

    rows = []
    # prompts 5,000 / 6,000 / 7,000; the third drops "grep", adds "fetch", reads nothing:
    # min(6,000, 7,000) - 0 = 6,000 re-processed.
    for i, (tools, cached) in enumerate(
        [(["bash", "grep"], 0), (["bash", "grep"], 4_992), (["bash", "fetch"], 0)]
    ):
        body = {
            "model": "gpt-5",
            "tools": [tool(t) for t in tools],
            "messages": [{"role": "user", "content": f"m{j}"} for j in range(2 * i + 1)],
        }
        usage = {
            "prompt_tokens": 5_000 + 1_000 * i,
            "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        rows.append(
            {
                "request": {
                    "url": "https://api.openai.com/v1/chat/completions",
                    "timestamp": 1764460800 + 10 * i,
                    "body": body,
                },
                "response": {
                    "timestamp": 1764460801 + 10 * i,
                    "body": {"id": f"c{i}", "usage": usage},
                },
            }
        )
    path = tmp_path / "openai.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(main, ["analyze", "--json", "--requests", "--now", "0", str(path)])
    assert result.exit_code == 0, result.output
    last = json.loads(result.stdout)["requests"][2]
    assert (last["outcome"], last["causes"]) == ("miss", ["tools_changed"])
    assert (last["tools_added"], last["tools_removed"]) == (1, 1)
    assert (last["tools_added_names"], last["tools_removed_names"]) == (["fetch"], ["grep"])
    assert last["reprocessed_tokens"] == 6_000
