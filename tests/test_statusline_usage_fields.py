"""The status line's usage fields from a view: Claude Code's figures first, cachediag's
beside them when they differ, anything of the wrong type left out, nothing raised."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cachediag.history.clock import epoch
from cachediag.statusline import render, usage_fields

NOW = 1_774_700_000.0


def view(payload: dict[str, Any] | None = None, usage: dict[str, Any] | None = None) -> Any:
    return {"now": NOW, "payload": payload or {}, "usage": usage or {}, "prompt_cache": None}


def line(template: str, v: Any) -> str:
    return render.render_line(v, template)


def test_model_is_claude_codes_name_else_the_id_else_ours() -> None:
    both = {"model": {"id": "claude-opus-4-5", "display_name": "Opus 4.5"}}
    assert line("{model}", view(both)) == "Opus 4.5"
    assert line("{model}", view({"model": {"display_name": "Opus 4.5"}})) == "Opus 4.5"
    assert line("{model}", view({"model": {"id": "claude-opus-4-5", "display_name": 3}})) == (
        "claude-opus-4-5"
    )
    assert line("{model}", view({}, {"model": "claude-haiku-4-5"})) == "claude-haiku-4-5"
    # A name cannot drive the terminal, nor run long.
    shown = line("{model}", view({"model": {"display_name": "\x1b[31mOpus" + "x" * 80}}))
    assert "\x1b" not in shown and len(shown) <= usage_fields.MODEL_CHARS


@pytest.mark.parametrize(
    ("theirs", "ours", "shown"),
    [
        (1.2345, None, "$1.23"),
        (None, 0.5, "$0.50"),
        (1.2345, 1.2301, "$1.23"),  # the same to the cent: one figure
        (1.2345, 1.10, "$1.23 (log $1.10)"),
        (0.004, None, "<$0.01"),
        ("1.5", 2.0, "$2.00"),  # a string is not a cost: ours is shown
        (-1, None, "cache ?"),
        (float("nan"), None, "cache ?"),
    ],
)
def test_session_cost_is_claude_codes_and_ours_where_they_differ(
    theirs: Any, ours: Any, shown: str
) -> None:
    payload = {} if theirs is None else {"cost": {"total_cost_usd": theirs}}
    usage = {} if ours is None else {"session_cost_usd": ours}
    assert line("{session_cost}", view(payload, usage)) == shown


def test_today_and_block() -> None:
    usage = {
        "today_cost_usd": 12.345,
        "block": {"cost_usd": 3.5, "ends_at": NOW + 2 * 3600 + 5 * 60 + 30, "active": True},
    }
    v = view({}, usage)
    assert line("{today_cost} · {block_cost} · {block_left}", v) == (
        "today $12.35 · block $3.50 · 2h05m left"
    )
    v["usage"]["block"]["ends_at"] = NOW + 59
    assert line("{block_left}", v) == "0m left"
    v["usage"]["block"]["active"] = False
    assert line("{block_cost} · {block_left}", v) == "block $3.50"
    assert line("{today_cost} · {block_cost}", view({}, {"block": "x"})) == "cache ?"


def test_context_from_claude_code_else_from_the_transcript() -> None:
    payload: dict[str, Any] = {
        "model": {"id": "claude-sonnet-4-5"},
        "context_window": {
            "current_usage": {
                "input_tokens": 10,
                "cache_creation_input_tokens": 1_990,
                "cache_read_input_tokens": 48_000,
                "output_tokens": 900,
            },
            "context_window_size": 200_000,
        },
    }
    assert line("{context_tokens} · {context_pct}", view(payload)) == "ctx 50.0k · ctx 25%"
    payload["context_window"]["used_percentage"] = 31.9
    assert line("{context_pct}", view(payload)) == "ctx 31%"
    ours = view({"model": {"id": "claude-sonnet-4-5[1m]"}}, {"context_tokens": 250_000})
    assert line("{context_tokens} · {context_pct}", ours) == "ctx 250k · ctx 25%"
    assert line("{context_tokens} · {context_pct}", view({}, {"context_tokens": 250_000})) == (
        "ctx 250k · ctx 100%"
    )
    assert line("{context_pct}", view({"context_window": {"current_usage": "x"}})) == "cache ?"


def test_rate_limits_with_their_reset() -> None:
    payload = {
        "rate_limits": {
            "five_hour": {"used_percentage": 42.7, "resets_at": NOW + 3600 + 120},
            "seven_day": {"used_percentage": 15, "resets_at": "2026-04-03T00:00:00Z"},
        }
    }
    shown = line("{rate_5h} · {rate_7d}", view(payload))
    assert shown.startswith("5h 42% (1h02m) · 7d 15% (")
    assert line("{rate_5h}", view({"rate_limits": {"five_hour": {"used_percentage": "42"}}})) == (
        "cache ?"
    )
    assert line("{rate_5h}", view({"rate_limits": {"five_hour": {"used_percentage": 80}}})) == (
        "5h 80%"
    )


def test_colours_only_when_asked() -> None:
    payload = {"rate_limits": {"five_hour": {"used_percentage": 95}}}
    assert render.render_line(view(payload), "{rate_5h}", True) == "\x1b[31m5h 95%\x1b[0m"
    assert render.render_line(view(payload), "{rate_5h}", False) == "5h 95%"


@given(
    st.datetimes(
        min_value=dt.datetime(1971, 1, 1),
        max_value=dt.datetime(2200, 1, 1),
        timezones=st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=-7, minutes=-30))]),
    )
)
def test_epoch_reads_iso_times_as_datetime_does(when: dt.datetime) -> None:
    when = when.replace(microsecond=0)
    assert epoch(when.isoformat()) == when.timestamp()
    assert epoch(when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")) == when.timestamp()


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=20), inner, max_size=4),
    max_leaves=15,
)  # fmt: skip
TEMPLATE = " · ".join(
    "{" + f + "}"
    for f in (
        "model", "session_cost", "today_cost", "block_cost", "block_left", "context_tokens",
        "context_pct", "rate_5h", "rate_7d",
    )
)  # fmt: skip


@given(
    st.dictionaries(
        st.sampled_from(["model", "cost", "context_window", "rate_limits"]), JSONISH, max_size=4
    ),
    st.dictionaries(
        st.sampled_from(["session_cost_usd", "today_cost_usd", "block", "context_tokens"]),
        JSONISH,
        max_size=4,
    ),
)
def test_no_payload_breaks_the_line(payload: dict[str, Any], usage: dict[str, Any]) -> None:
    shown = render.render_line(view(payload, usage), TEMPLATE, True, 80)
    assert shown and "\n" not in shown
