"""The advice as each command shows it: fitted to the session's version, within 80
columns, and the same words as the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cachediag.analysis.advice import AdviceContext, advice_for
from cachediag.cli import main
from tests.conftest import FIXTURES, SPOTTER_SESSION

TOOLS = FIXTURES / "captures" / "tools_changed.jsonl"


def _run(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args), env={"COLUMNS": "80", "TZ": "UTC"})
    assert result.exit_code == 0, result.output
    return result


def _versioned(tmp_path: Path, version: str) -> Path:
    """The spotter session (Claude Code 2.1.39, two 5-minute TTL misses) as if it had
    run on ``version``."""
    data = SPOTTER_SESSION.read_bytes().replace(
        b'"version":"2.1.39"', f'"version":"{version}"'.encode()
    )
    out = tmp_path / SPOTTER_SESSION.name
    out.write_bytes(data)
    return out


def _narrow(text: str) -> None:
    wide = [line for line in text.splitlines() if len(line) > 80]
    assert not wide, wide


@pytest.mark.parametrize(("version", "named"), [("2.1.332", True), ("2.1.242", False)])
def test_analyze_names_the_ttl_setting_only_where_the_version_has_it(
    tmp_path: Path, version: str, named: bool
) -> None:
    out = _run("analyze", str(_versioned(tmp_path, version))).stdout
    assert "What to do" in out and "ttl_expired_5m (2):" in out
    assert ("promptCacheTtl" in out) is named
    if not named:
        assert f"Claude Code {version} has no TTL setting" in out
    _narrow(out)


def test_explain_text_and_json_carry_the_tables_words() -> None:
    text = _run("explain", str(TOOLS)).stdout
    assert "What to do:" in text and "ENABLE_TOOL_SEARCH" in text
    _narrow(text)
    obj = json.loads(_run("explain", str(TOOLS), "--json").stdout)
    [advice] = obj["advice"]
    expected = advice_for("tools_changed", AdviceContext(stream_kind="main", ttl_in_force="5m"))
    assert advice == {
        "cause": "tools_changed",
        "produced_by": expected.produced_by,
        "action": expected.action,
        "actionable": True,
        "settings": ["ENABLE_TOOL_SEARCH"],
        "docs": expected.doc,
    }


def test_explain_of_a_hit_has_no_advice() -> None:
    obj = json.loads(_run("explain", str(TOOLS), "--json", "--request", "1").stdout)
    assert obj["advice"] == []


def test_watch_hint_under_each_miss(tmp_path: Path) -> None:
    out = _run("watch", "--once", "--misses-only", str(_versioned(tmp_path, "2.1.332"))).stdout
    lines = out.splitlines()
    misses = [i for i, line in enumerate(lines) if " MISS " in line]
    assert misses
    hints = [line for line in lines if line.lstrip().startswith("-> ")]
    assert len(hints) == len(misses)
    assert any('`promptCacheTtl: "1h"`' in h for h in hints)
    _narrow(out)


def test_audit_says_how_and_never_keep_alive_without_how() -> None:
    out = _run("audit", "--by", "cause", str(SPOTTER_SESSION.parent)).stdout
    assert "What to do" in out
    assert "before each 5-minute expiry" not in out
    if "keep the cache alive through pauses" in out:
        assert "Claude Code sends no keep-alive requests" in out
    _narrow(out)


def test_log_text_in_a_cause_is_sanitised() -> None:
    from cachediag.report.advice_view import advice_lines

    lines = advice_lines([advice_for("evil\x1b[31m")], 80)
    assert all("\x1b" not in line for line in lines)


def test_explain_advice_validates_against_the_contract() -> None:
    from cachediag.report.contract import Advice

    for capture in ("tools_changed", "model_changed", "pause_under_1h_miss"):
        obj = json.loads(
            _run("explain", str(FIXTURES / "captures" / f"{capture}.jsonl"), "--json").stdout
        )
        assert obj["advice"], capture
        for item in obj["advice"]:
            Advice.model_validate(item)  # extra="forbid": no field the model lacks


def test_a_resumed_session_is_named_in_the_rewrite_advice() -> None:
    from cachediag.analysis.advice_context import resumed

    seen = advice_for("messages_rewritten", AdviceContext(version="2.1.332", resumed=True))
    assert "This session was resumed" in seen.action and seen.knobs == ()
    assert "resumed" not in advice_for("messages_rewritten").action

    class _Log:
        replayed_responses = 3

    class _Analysis:
        log = _Log()

    assert resumed(_Analysis()) is True  # type: ignore[arg-type]
    _Log.replayed_responses = 0
    assert resumed(_Analysis()) is None  # type: ignore[arg-type]
