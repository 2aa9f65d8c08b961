"""The fake API's own cache and ground truth, without Claude Code (fast, always run):
the real-client suite is only as good as the truth it compares cachediag with."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.real_client.fake_api import FakeAnthropic, Running
from tests.real_client.fake_body import tokens_of

EPH = {"type": "ephemeral"}
TOOLS = [{"name": "Bash", "description": "run " * 300, "input_schema": {"type": "object"}}]


def body(
    turns: int, *, model: str = "claude-x", tools: list[dict[str, Any]] | None = None,
    system: str = "You are a test. " * 2000, billing: str = "cc_version=1.0.abc",
    ttl: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """A Claude Code-shaped body: billing header, system with a breakpoint, and `turns`
    user/assistant pairs with the breakpoint on the last message."""
    cc = {**EPH, "ttl": ttl} if ttl else EPH
    messages: list[dict[str, Any]] = []
    for i in range(turns):
        if i:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": f"a{i}"}]})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {i}"}]})
    messages[-1]["content"][-1]["cache_control"] = cc
    return {
        "model": model,
        "tools": TOOLS if tools is None else tools,
        "system": [
            {"type": "text", "text": f"x-anthropic-billing-header: {billing};"},
            {"type": "text", "text": system, "cache_control": cc},
        ],
        "messages": messages,
        "stream": True,
    }


def test_a_growing_conversation_reads_its_prefix_back_and_writes_only_the_new_part() -> None:
    fake = FakeAnthropic()
    first, _ = fake.serve_call(body(1))
    assert first.outcome == "cold" and first.cache_read_input_tokens == 0
    total = first.cache_creation_input_tokens + first.input_tokens
    second, _ = fake.serve_call(body(2, billing="cc_version=1.0.def"))
    # The billing header's suffix changed: it is not part of the key.
    assert second.outcome == "hit" and second.causes == []
    assert second.cache_read_input_tokens == total
    assert second.cache_creation_input_tokens == sum(
        tokens_of(b)
        for b in (
            {"role": "user", "type": "text", "text": "question 0"},
            {"role": "assistant", "type": "text", "text": "a1"},
            {"role": "user", "type": "text", "text": "question 1"},
        )
    ) - tokens_of({"role": "user", "type": "text", "text": "question 0"})


def test_a_changed_tool_a_changed_system_and_another_model_each_miss_with_their_cause() -> None:
    fake = FakeAnthropic()
    fake.serve_call(body(1))
    tools = [*TOOLS, {"name": "mcp__x__y", "description": "d", "input_schema": {}}]
    miss, _ = fake.serve_call(body(2, tools=tools))
    assert (miss.outcome, miss.causes, miss.changed) == ("miss", ["tools_changed"], "tools")
    assert miss.cache_read_input_tokens == 0
    system, _ = fake.serve_call(body(3, tools=tools, system="Other. " * 5000))
    assert (system.outcome, system.causes) == ("miss", ["system_prompt_changed"])
    other, _ = fake.serve_call(body(4, tools=tools, system="Other. " * 5000, model="claude-y"))
    # One cache per model: the same prefix on another model reads nothing.
    assert other.cache_read_input_tokens == 0
    assert (other.outcome, other.causes) == ("miss", ["model_changed"])


def test_the_ttl_runs_on_the_fakes_clock_and_a_read_refreshes_it() -> None:
    fake = FakeAnthropic()
    fake.serve_call(body(1))
    fake.offset += 200
    assert fake.serve_call(body(2))[0].outcome == "hit"
    fake.offset += 200  # 400 s after the write, 200 s after the read that refreshed it
    assert fake.serve_call(body(3))[0].outcome == "hit"
    fake.offset += 301
    late, _ = fake.serve_call(body(4))
    assert (late.outcome, late.causes, late.cache_read_input_tokens) == (
        "miss", ["ttl_expired_5m"], 0,
    )  # fmt: skip
    hour = FakeAnthropic()
    hour.serve_call(body(1, ttl="1h"))
    hour.offset += 1800
    assert hour.serve_call(body(2, ttl="1h"))[0].outcome == "hit"


def test_the_http_api_streams_the_usage_it_recorded_and_reports_diagnostics() -> None:
    fake = FakeAnthropic(diagnostics=True)
    with Running(fake) as run:

        def post(payload: dict[str, Any]) -> list[dict[str, Any]]:
            req = urllib.request.Request(
                run.url + "/v1/messages?beta=true",
                data=json.dumps(payload).encode(),
                headers={"Content-Type": "application/json", "x-api-key": "sk-test"},
            )
            with urllib.request.urlopen(req, timeout=10) as resp:
                text = resp.read().decode()
            return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]

        post(body(1))
        events = post(body(2, model="claude-y"))
    start = events[0]["message"]
    truth = fake.truth[-1]
    assert start["id"] == truth.msg_id
    assert start["usage"]["cache_creation_input_tokens"] == truth.cache_creation_input_tokens
    assert start["diagnostics"]["cache_miss_reason"]["type"] == "model_changed"
    assert events[-1]["type"] == "message_stop"
    assert fake.api_keys == {"sk-test"}
