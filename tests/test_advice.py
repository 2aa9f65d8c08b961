"""The advice table: every cause has advice, and the advice fits what the log showed."""

from __future__ import annotations

import pytest

from cachediag.analysis.advice import (
    KNOBS,
    TABLE,
    AdviceContext,
    advice_for,
    has_knob,
    parse_version,
)
from cachediag.analysis.causes import Cause


def test_every_cause_has_an_entry() -> None:
    assert set(TABLE) == set(Cause)
    for cause, entry in TABLE.items():
        assert entry.cause is cause
        assert entry.produced_by and entry.action
        assert all(k in KNOBS for k in entry.knobs)
        assert entry.doc is None or entry.doc.startswith("https://")


@pytest.mark.parametrize("cause", [c for c, e in TABLE.items() if not e.actionable])
def test_no_action_is_said_plainly(cause: Cause) -> None:
    advice = advice_for(cause)
    assert not advice.actionable and advice.knobs == ()
    assert any(w in advice.action for w in ("Nothing", "No ")), advice.action


def test_unknown_cause_read_back() -> None:
    advice = advice_for("made_up_by_someone")
    assert not advice.actionable and advice.knobs == ()


def test_versions() -> None:
    assert parse_version("2.1.243") == (2, 1, 243)
    assert parse_version("2.1.243-beta") == (2, 1, 243)
    assert parse_version("x") is None and parse_version(None) is None
    knob = KNOBS["promptCacheTtl"]
    assert has_knob("2.1.243", knob) and has_knob("2.2.0", knob) and has_knob(None, knob)
    assert not has_knob("2.1.242", knob) and not has_knob("1.9.999", knob)


@pytest.mark.parametrize(
    ("ctx", "knob"),
    [
        (AdviceContext(version="2.1.332", stream_kind="main"), "promptCacheTtl"),
        (
            AdviceContext(version="2.1.332", stream_kind="subagent"),
            "subagentPromptCacheTtl,experimental.cacheTtl",
        ),
        (
            AdviceContext(version="2.1.332", stream_kind="subagent", agent_type="reviewer"),
            "experimental.cacheTtl",
        ),
        # 2.1.245 has the settings but not an agent's own TTL.
        (
            AdviceContext(version="2.1.245", stream_kind="subagent", agent_type="reviewer"),
            "subagentPromptCacheTtl",
        ),
    ],
)
def test_ttl_advice_names_the_setting_for_the_stream(ctx: AdviceContext, knob: str) -> None:
    advice = advice_for("ttl_expired_5m", ctx)
    assert advice.knobs == tuple(knob.split(","))
    assert f'`{advice.knobs[0]}: "1h"`' in advice.action
    assert all(f"`{k}`" in advice.action for k in advice.knobs[1:])
    assert "(Claude Code" not in advice.action  # the version is known: no caveat


def test_ttl_advice_without_version_says_from_which() -> None:
    advice = advice_for("ttl_expired_5m", AdviceContext())
    assert advice.knobs == ("promptCacheTtl",)
    assert "(Claude Code 2.1.243+)" in advice.action


@pytest.mark.parametrize("cause", [str(c) for c in Cause])
def test_older_version_names_no_newer_knob(cause: str) -> None:
    for ctx in (
        AdviceContext(version="2.1.200"),
        AdviceContext(version="2.1.200", stream_kind="subagent", agent_type="x"),
        AdviceContext(version="2.1.200", defer_loading=False, resumed=True),
    ):
        advice = advice_for(cause, ctx)
        assert advice.knobs == ()
        for knob in KNOBS.values():
            assert knob.name not in advice.action, (cause, knob.name)


def test_tool_search_deferral_from_the_log() -> None:
    on = advice_for("tools_changed", AdviceContext(version="2.1.332", defer_loading=True))
    off = advice_for("tools_changed", AdviceContext(version="2.1.332", defer_loading=False))
    assert "Tool search was on" in on.action and on.knobs == ()
    assert off.knobs == ("ENABLE_TOOL_SEARCH",)


def test_resume_is_named_when_seen() -> None:
    seen = advice_for("system_prompt_changed", AdviceContext(version="2.1.332", resumed=True))
    assert seen.action.count("This session was resumed") == 1
    assert seen.knobs == ("--system-prompt-snapshot",)


def test_policy_how_names_the_ttl_settings() -> None:
    from cachediag.analysis.advice import policy_how

    for policy, ttl in (("1h", "1h"), ("evidence", "1h"), ("5m", "5m")):
        how = policy_how(policy)
        assert how is not None
        assert f'`promptCacheTtl: "{ttl}"`' in how and "subagentPromptCacheTtl" in how
        assert "(Claude Code 2.1.243+)" in how
        older = policy_how(policy, "2.1.100")
        assert older is not None and "promptCacheTtl" not in older
    assert policy_how("as_happened") is None and policy_how("keep_alive") is None


def test_the_ttl_in_force_is_named_where_it_decides() -> None:
    inside = advice_for("likely_server_side", AdviceContext(ttl_in_force="1h"))
    assert "inside the 1h TTL in force" in inside.action and not inside.actionable
    assert "TTL in force" not in advice_for("likely_server_side").action
