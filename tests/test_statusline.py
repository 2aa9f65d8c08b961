"""The status line in process: numbers, fields, fallbacks, costs, imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cachediag.analysis.costs import ModelPrices
from cachediag.pricing.slots import DayPrices
from cachediag.statusline import fast, install, prices, refresh, render, view
from tests.conftest import ROOT
from tests.statusline_support import (
    T0,
    THREE,
    cache_home,
    run_line,
    write,
)

OPUS_4_6 = DayPrices(slots=(ModelPrices(5, 6.25, 10, 0.5, 25),))
"""Opus 4.6's prices all day, as the price cache would hold them after a first lookup."""

pytestmark = pytest.mark.usefixtures(cache_home.__name__)


def test_line_from_transcript(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    line = run_line({"transcript_path": str(t)}, "--no-color", "--now", str(T0 + 1000 + 100))
    # hit ratio = reads / (reads + writes + input) = 20000 / (20000 + 41500 + 30) = 32.5%;
    # the last request wrote 5m cache at T0+1000, so 300 - 100 s = 3:20 are left.
    assert line == "m-1 · cache 32% · warm 3:20 · 1 miss · last: ttl_expired_5m"


def test_cost_of_misses_from_looked_up_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def fake(model: str, day: int) -> DayPrices:
        calls.append(model)
        return DayPrices(slots=(ModelPrices(5.0, 6.25, 10.0, 0.5, 25.0),))

    monkeypatch.setattr(prices, "day_prices", fake)
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    payload = {"transcript_path": str(t)}
    obj = json.loads(run_line(payload, "--json", "--now", str(T0 + 2000)))
    # The miss could have read min(20510, 21010) = 20510 tokens and read 0; all 20510 were
    # written at $6.25/M instead of read at $0.50/M: 20510 * 5.75e-6 = $0.1179325, shown to
    # the micro-dollar as every JSON cost.
    assert obj["cachediag"]["miss_cost_usd"] == round(0.1179325, 6) == 0.117932
    assert run_line(payload, "--no-color", "--now", str(T0 + 2000)) == (
        "m-1 · $0.27 · cache 32% · cold · 1 miss ($0.12) · last: ttl_expired_5m"
    )
    # The session cost: 30 input, 41500 written (5m), 20000 read and 15 output tokens at
    # $5, $6.25, $0.50 and $25 per million: $0.2699.
    # Looked up once for the state's misses and once as the index priced the rows, then
    # taken from the state file and the index.
    assert calls == ["m-1", "m-1"]


def test_unknown_price_is_omitted_not_zero(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    obj = json.loads(run_line({"transcript_path": str(t)}, "--json", "--now", str(T0)))
    assert obj["cachediag"]["miss_cost_usd"] is None
    assert obj["cachediag"]["unpriced_models"] == ["m-1"]
    assert "$" not in run_line({"transcript_path": str(t)}, "--no-color")


def test_claude_codes_prompt_cache_is_kept_as_sent(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    sent = {"hit_ratio": 0.5, "requests": 9, "misses": 4, "expires_at": None, "odd": [1]}
    obj = json.loads(run_line({"transcript_path": str(t), "prompt_cache": sent}, "--json"))
    assert obj["prompt_cache"] == sent
    assert obj["cachediag"]["source"] == "claude-code"
    line = run_line({"prompt_cache": sent}, "--no-color", "--format", "{hit} {misses} {source}")
    assert line == "cache 50% 4 misses claude-code"


@pytest.mark.parametrize(
    "stdin",
    [b"", b"garbage", b"[1, 2]", b'{"transcript_path": 5}', b'{"transcript_path": "/nope"}'],
)
def test_fallbacks(stdin: bytes) -> None:
    assert run_line(stdin, "--no-color") == "cache ?"
    obj = json.loads(run_line(stdin, "--json"))
    assert obj["prompt_cache"] is None


def test_failure_is_logged_not_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_home: Path
) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(fast, "build_view", boom)
    assert run_line({"transcript_path": "x"}) == "cache ?"
    log = (cache_home / "statusline.log").read_text()
    assert "RuntimeError" in log and "fast.py" in log
    assert run_line(b"{}", "--bogus") == "cache ?"
    assert "unknown argument '--bogus'" in (cache_home / "statusline.log").read_text()


def test_a_value_error_quoting_log_content_is_logged_without_it(
    monkeypatch: pytest.MonkeyPatch, cache_home: Path
) -> None:
    # int() and fromisoformat() quote what they failed on, which may be transcript text.
    def leaky(*args: Any, **kwargs: Any) -> None:
        int("SECRET-CANARY-7f3a")

    monkeypatch.setattr(fast, "build_view", leaky)
    assert run_line({"transcript_path": "x"}) == "cache ?"
    log = (cache_home / "statusline.log").read_text()
    assert "ValueError" in log and "SECRET-CANARY" not in log


def test_format_template_and_colour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    payload = {"transcript_path": str(t)}
    now = str(T0 + 70)
    # {last} is empty before the first miss and drops with the text before it;
    # hit ratio = 20000 / (20000 + 20500 + 20) = 49.4%.
    line = run_line(payload, "--no-color", "--now", now, "--format", "[{last} | {hit}|{ttl}]")
    assert line == "[cache 49%|ttl 5m]"
    assert run_line(payload, "--no-color", "--format", "{{{requests}}}") == "{2 req}"
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert "\x1b[" in run_line(payload, "--now", now)
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run_line(payload, "--now", now)
    assert "\x1b[" in run_line(payload, "--now", now, "--color")
    # A bad template is a fallback, not half a line.
    assert run_line(payload, "--format", "{nope}") == "cache ?"


def test_render_guards_every_field() -> None:
    view = {
        "now": 0.0,
        "prompt_cache": {
            "hit_ratio": True,
            "requests": "3",
            "misses": -1,
            "expires_at": float("inf"),
            "last_miss_cause": {"causes": [None, 3, "model_changed"], "tools_added": "x"},
            "ttl": 5,
        },
        "subagents": {"streams": "2"},
        "miss_cost_usd": "1",
    }
    assert render.render_line(view) == f"cache {render.NONE} · last: model_changed"


WARM_PATH_FORBIDDEN = ("click", "rich", "pydantic", "genai_prices", "jq", "watchdog", "orjson")


def imported(stderr: bytes) -> set[str]:
    """Module names from ``python -X importtime`` output."""
    return {
        line.split("|")[-1].strip()
        for line in stderr.decode().splitlines()
        if line.startswith("import time:")
    }


def test_warm_path_imports_only_the_standard_library(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache_home.parent)}
    stdin = json.dumps({"transcript_path": str(t)}).encode()
    cmd = [sys.executable, "-X", "importtime", "-m", "cachediag", "statusline"]
    first = subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True)
    warm = subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True)
    assert warm.stdout == first.stdout

    warm_mods = imported(warm.stderr)
    assert "cachediag.statusline.fast" in warm_mods
    heavy = {m for m in warm_mods if m.split(".")[0] in WARM_PATH_FORBIDDEN}
    assert not heavy
    # Nor the reader and ledger, which only a changed transcript needs.
    assert "cachediag.analysis.ledger" not in warm_mods
    assert "cachediag.analysis.ledger" in imported(first.stderr)
    # A first run is a full recompute: it may load price data for a model it has never
    # priced (once: the price lands in the state and in the pricing disk cache), nothing
    # else heavy.
    cold_forbidden = set(WARM_PATH_FORBIDDEN[:6]) - {
        "genai_prices",
        "pydantic",
    }  # pydantic: genai's
    assert not {m for m in imported(first.stderr) if m.split(".")[0] in cold_forbidden}


def test_installed_command_warm_path_skips_json_and_typing(
    tmp_path: Path, cache_home: Path
) -> None:
    """The command ``install`` writes runs without site; its warm path then loads not even
    ``json``, ``re``, ``enum`` or ``typing`` (each costs milliseconds)."""
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home.parent), "NO_COLOR": "1"}
    stdin = json.dumps({"transcript_path": str(t)}).encode()
    argv = install.fast_argv()
    cmd = [argv[0], "-X", "importtime", *argv[1:]]
    first = subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True)
    warm = subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True)
    assert warm.stdout == first.stdout and warm.stdout.startswith("m-1 · cache 32%".encode())
    mods = imported(warm.stderr)
    assert "cachediag.statusline.fast" in mods
    assert not mods & {"json", "re", "enum", "typing", "dataclasses", "hashlib", "site"}


def test_unreadable_transcript_still_shows_claude_codes_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_home: Path
) -> None:
    def unreadable(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(refresh, "session_state", unreadable)
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    payload = {"transcript_path": str(t), "prompt_cache": {"hit_ratio": 0.7, "misses": 1}}
    assert run_line(payload, "--no-color") == "cache 70% · 1 miss · last: unknown"
    assert json.loads(run_line(payload, "--json"))["cachediag"]["transcript"] == "unreadable"
    assert "PermissionError" in (cache_home / "statusline.log").read_text()


def test_claude_codes_count_with_the_cost_of_the_misses_the_transcript_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prices, "day_prices", lambda m, day: OPUS_4_6)
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    agree = {"transcript_path": str(t), "prompt_cache": {"hit_ratio": 0.3, "misses": 1}}
    # One miss in the transcript too, priced as in test_cost_of_misses_from_looked_up_prices.
    assert run_line(agree, "--no-color", "--format", "{misses}") == "1 miss ($0.12)"
    differ = {"transcript_path": str(t), "prompt_cache": {"hit_ratio": 0.3, "misses": 2}}
    # Claude Code's count, and the one miss the transcript shows with what it cost.
    assert run_line(differ, "--no-color", "--format", "{misses}") == "2 misses (log 1: $0.12)"
    ours = json.loads(run_line(differ, "--json"))
    assert ours["prompt_cache"] == differ["prompt_cache"]  # Claude Code's object, as sent
    extra = ours["cachediag"]
    assert extra["miss_cost_usd"] == pytest.approx(0.12, abs=0.005)
    assert extra["computed"]["misses"] == 1 and extra["computed"]["requests"] == 3
    assert extra["agreement"]["misses"] == {"claude_code": 2, "transcript": 1}
    # Claude Code sent no requests, rebuilds or causes, and a hit ratio 2.5 points off.
    differs = {"misses", "requests", "expected_rebuilds", "miss_causes", "hit_ratio"}
    assert set(extra["agreement"]) == differs
    assert json.loads(run_line(agree, "--json"))["cachediag"]["agreement"].keys() == differs - {
        "misses"
    }


def test_line_never_passes_control_characters_or_impossible_ratios() -> None:
    from cachediag.statusline.render import render_line

    view = {
        "prompt_cache": {
            "hit_ratio": -5,
            "requests": 3,
            "misses": 1,
            "last_miss_cause": {"causes": ["\x1b]0;pwned\x07tools_changed\x1b[31m"]},
        }
    }
    line = render_line(view)
    assert "\x1b" not in line and "\x07" not in line
    assert "-500%" not in line and "cache \u2013" in line
    assert "tools_changed" in line


REAL_SESSION = ROOT / "fixtures/real/spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


def test_claude_codes_object_beside_a_real_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10's done-when on the bundled real session: Claude Code's own object (as
    analyze computes it: agreeing, then with one miss fewer) beside its transcript."""
    monkeypatch.setattr(prices, "day_prices", lambda m, day: OPUS_4_6)
    t = tmp_path / REAL_SESSION.name
    t.write_bytes(REAL_SESSION.read_bytes())
    now = 1770930400
    analyzed = subprocess.run(
        [sys.executable, "-m", "cachediag", "analyze", "--json", "--now", str(now), str(t)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    session = json.loads(analyzed.stdout)
    pc = session["prompt_cache"]
    assert pc["misses"] == 3
    agree = {"transcript_path": str(t), "prompt_cache": pc}
    line = run_line(agree, "--no-color", "--now", str(now), "--format", "{misses}")
    assert line.startswith("3 misses ($") and "log" not in line
    ours = json.loads(run_line(agree, "--json", "--now", str(now)))
    assert ours["prompt_cache"] == pc and ours["cachediag"]["agreement"] == {}
    assert ours["cachediag"]["computed"]["misses"] == 3
    assert ours["cachediag"]["miss_cost_usd"] > 0

    fewer = {**pc, "misses": 2, "miss_causes": {"ttl_expired_5m": 2}}
    differ = {"transcript_path": str(t), "prompt_cache": fewer}
    line = run_line(differ, "--no-color", "--now", str(now), "--format", "{misses}")
    assert line.startswith("2 misses (log 3: $"), line
    ours = json.loads(run_line(differ, "--json", "--now", str(now)))
    assert ours["prompt_cache"] == fewer  # Claude Code's object, as sent
    assert ours["cachediag"]["computed"]["misses"] == 3
    assert ours["cachediag"]["agreement"] == {
        "misses": {"claude_code": 2, "transcript": 3},
        "miss_causes": {
            "claude_code": {"ttl_expired_5m": 2},
            "transcript": pc["miss_causes"],
        },
    }


def test_json_costs_are_rounded_to_the_micro_dollar() -> None:
    """``1.3890562499999999`` was float noise of a sum: every cost in ``--json`` is rounded
    to 6 decimals as in ``analyze --json``; field names and types stay."""
    noisy = 0.1 + 0.2  # 0.30000000000000004
    stream = {"id": "agent-a", "kind": "subagent", "prompt_cache": {}, "miss_cost_usd": noisy}
    agents = {"streams": 1, "requests": 2, "misses": 1, "hit_ratio": 0.5, "warm": 0}
    out = view.json_object(
        {},
        {
            "source": "transcript",
            "prompt_cache": {},
            "now": 0.0,
            "miss_cost_usd": 1.3890562499999999,
            "subagents": {**agents, "miss_cost_usd": noisy},
            "streams": [stream],
        },
    )["cachediag"]
    assert out["miss_cost_usd"] == 1.389056
    assert out["subagents"]["miss_cost_usd"] == out["streams"][0]["miss_cost_usd"] == 0.3
    assert json.dumps(out["miss_cost_usd"]) == "1.389056"
    unpriced = view.json_object(
        {}, {"source": "none", "prompt_cache": None, "now": 0.0, "subagents": None, "streams": []}
    )["cachediag"]
    assert unpriced["miss_cost_usd"] is None


GITHUB = ["mcp__github__create_issue", "mcp__github__get_pull_request", "mcp__github__list_issues"]


def tools_view(added: list[str], removed: list[str], **cause: Any) -> dict[str, Any]:
    last = {"causes": ["tools_changed"], "tools_added": len(added), "tools_removed": len(removed)}
    return {
        "prompt_cache": {"hit_ratio": 0.34, "misses": 2, "last_miss_cause": {**last, **cause}},
        "last_miss_tools": {"added": added, "removed": removed},
    }


@pytest.mark.parametrize(
    ("width", "last"),
    [
        (None, "(+3: mcp__github__create_issue, mcp__github__get_pull_request, "
         "mcp__github__list_issues)"),
        (120, "(+3: mcp__github__create_issue, mcp__github__get_pull_request, "
         "mcp__github__list_issues)"),
        (100, "(+3: mcp__github__create_issue, mcp__github__get_pull_request, …)"),
        (80, "(+3: mcp__github__create_issue, …)"),
        (60, "(+3: mcp__github__creat…, …)"),
        (50, "(+3 tools)"),  # no room for one name: the count
    ])  # fmt: skip
def test_tool_names_fit_the_width(width: int | None, last: str) -> None:
    line = render.render_line(tools_view(GITHUB, []), "{hit} · {last}", width=width)
    assert line == f"cache 34% · last: tools_changed {last}"
    assert width is None or len(line) <= width
    # Narrower still: the field goes whole, {hit} stays.
    assert render.render_line(tools_view(GITHUB, []), "{hit} · {last}", width=40) == "cache 34%"


def test_a_line_too_wide_loses_whole_fields_from_the_right() -> None:
    view = {
        "now": 0.0,
        "prompt_cache": {"hit_ratio": 0.96, "requests": 139, "misses": 3, "expires_at": 114.0,
                         "last_miss_cause": {"causes": ["messages_rewritten"]}},
        "miss_cost_usd": 1.39,
        "subagents": {"streams": 1, "hit_ratio": 0.89, "misses": 0},
        "partial": True,
    }  # fmt: skip
    full = "cache 96% · warm 1:54 · 3 misses ($1.39) · last: messages_rewritten · agents 1: 89%"
    assert render.render_line(view, width=120) == f"{full} · partial"
    assert render.render_line(view, width=80) == (
        "cache 96% · warm 1:54 · 3 misses ($1.39) · last: messages_rewritten · partial"
    )
    assert (
        render.render_line(view, width=50) == "cache 96% · warm 1:54 · 3 misses ($1.39) · partial"
    )
    assert render.render_line(view, width=20) == "cache 96% · partial"  # never less
    assert render.render_line(view, width=20, keep_fields=True) == f"{full} · partial"
    coloured = render.render_line(view, color=True, width=80)
    assert "\x1b[" in coloured and "agents" not in coloured  # the width counts no colour codes


def test_tool_names_added_removed_and_system_delta() -> None:
    view = tools_view(["mcp__db__query"], ["mcp__db__sql"], system_char_delta=-12)
    assert render.render_line(view, "{last}", width=100) == (
        "last: tools_changed (+1: mcp__db__query; -1: mcp__db__sql; system -12 chars)"
    )


def test_tool_names_are_sanitised_and_cut() -> None:
    evil = "mcp__x__\x1b]0;pwned\x07" + "y" * 80
    line = render.render_line(tools_view([evil], []), "{last}", width=200)
    assert "\x1b" not in line and "\x07" not in line
    assert line == f"last: tools_changed (+1: mcp__x__?]0;pwned?{'y' * 21}…)"  # 40 chars


def test_tool_names_only_when_they_are_those_of_the_cause_shown() -> None:
    """Claude Code's own object may name another miss: its counts must be the names'."""
    view = tools_view(GITHUB, [])
    view["prompt_cache"]["last_miss_cause"]["tools_added"] = 2
    assert render.render_line(view, "{last}", width=200) == "last: tools_changed (+2 tools)"


def test_a_line_naming_tools_fits_the_terminal_claude_code_runs_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "70")
    assert fast.terminal_width() == 70
    monkeypatch.setenv("COLUMNS", "x")
    found = fast.terminal_width()  # the controlling terminal's, else not known
    assert found is None or found >= 20
    monkeypatch.setenv("CACHEDIAG_STATUSLINE_WIDTH", "7")
    assert run_line({}, "--no-color") == "cache ?"  # a bad setting is reported, not used
