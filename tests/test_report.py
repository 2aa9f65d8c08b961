"""``cachediag report``: the page data, its embedding, the command. The browser checks
(rendering, screenshot, no network, injected markup) are in test_report_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.report.html.data import ttl_windows
from cachediag.report.html.page import embed_json
from tests.conftest import REAL, SPOTTER_SESSION

DATA_SCRIPT = re.compile(
    r'<script id="cachediag-data" type="application/json">(.*?)</script>', re.S
)


def page_of(html: str) -> dict[str, Any]:
    match = DATA_SCRIPT.search(html)
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def make_report(*args: str) -> tuple[str, dict[str, Any]]:
    result = CliRunner().invoke(main, ["report", "--no-progress", "--output", "-", *args])
    assert result.exit_code == 0, result.output
    return result.stdout, page_of(result.stdout)


def analyze_requests(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["analyze", "--requests", "--now", "0", str(path)])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def test_ttl_windows_alive_then_expired() -> None:
    # 5m entries at 0 and 100 s (touching: one band), a 1000 s pause, then a 1h entry.
    windows = ttl_windows([0.0, 100.0, 1100.0], ["5m", "5m", "1h"], [True, True, True])
    assert windows == [
        (0.0, 400.0, "alive"),
        (400.0, 1100.0, "expired"),
        (1100.0, 4700.0, "alive"),
    ]


def test_ttl_windows_skip_requests_without_cache() -> None:
    assert ttl_windows([0.0, 10.0], ["5m", "5m"], [False, False]) == []
    # A 1h entry covers a 30-minute pause: no expiry.
    assert ttl_windows([0.0, 1800.0], ["1h", "1h"], [True, True]) == [(0.0, 5400.0, "alive")]


@pytest.mark.parametrize(
    "text",
    ["</script><script>alert(1)</script>", "<!-- x", "a & b", "\u2028\u2029", "\"quoted\" 'x'"],
)
def test_embedded_json_cannot_close_its_element(text: str) -> None:
    embedded = embed_json({"model": text})
    assert "<" not in embedded and ">" not in embedded and "&" not in embedded
    assert "\u2028" not in embedded and "\u2029" not in embedded
    assert json.loads(embedded) == {"model": text}


@pytest.mark.parametrize("control", ["\u202e", "\u202a", "\u2066", "\u2069", "\u200f", "\u061c"])
def test_embedded_json_holds_no_bidi_control(control: str) -> None:
    """A log string's bidi override, embedding, isolate or mark cannot reach the page,
    where it would reorder the report's own text: each is a ``?``."""
    embedded = embed_json({"project": f"/home/a{control}b", "é": "c"})
    assert control not in embedded
    assert json.loads(embedded) == {"project": "/home/a?b", "é": "c"}


def test_title_holds_no_bidi_control() -> None:
    html, _ = make_report("--title", "cost\u202e report", str(SPOTTER_SESSION))
    assert "\u202e" not in html and "<title>cost? report</title>" in html


def test_session_data_is_what_analyze_json_shows() -> None:
    _, data = make_report(str(SPOTTER_SESSION))
    obj = analyze_requests(SPOTTER_SESSION)
    (session,) = data["sessions"]
    assert session["session_id"] == obj["session_id"]
    streams = [{"id": "main", "requests": obj["requests"]}, *obj["streams"]]
    assert [lane["id"] for lane in session["lanes"]] == [s["id"] for s in streams]
    for lane, stream in zip(session["lanes"], streams, strict=True):
        requests = stream["requests"]
        c = lane["columns"]
        assert c["at"] == [r["at"] for r in requests]
        assert c["read"] == [r["cache_read_tokens"] for r in requests]
        assert c["written"] == [r["cache_creation_tokens"] for r in requests]
        assert c["input"] == [r["input_tokens"] for r in requests]
        assert c["cost"] == [r["cost_usd"] for r in requests]
        assert c["outcome"] == [r["outcome"] for r in requests]
    expected = [
        (s["id"], r["index"], r["outcome"], r["causes"])
        for s in streams
        for r in s["requests"]
        if r["outcome"] in ("miss", "expected")
    ]
    got = [(e["stream"], e["index"], e["outcome"], e["causes"]) for e in session["events"]]
    assert sorted(got) == sorted(expected)
    # The three misses and the compaction rebuild the README shows for this session.
    assert [(e["index"], e["outcome"]) for e in session["events"]] == [
        (18, "miss"),
        (61, "expected"),
        (113, "miss"),
        (137, "miss"),
    ]
    assert session["summaries"][0].startswith("Prompt cache (main): 139 requests")
    assert session["cost"]["cost_usd"] == obj["cost"]["cost_usd"]
    # The 19-minute pause before request 113 outlived the 5-minute TTL: an expired band.
    miss_113 = next(e for e in session["events"] if e["index"] == 113)
    expired = [w for w in session["lanes"][0]["windows"] if w[2] == "expired"]
    assert any(abs(w[1] - miss_113["at"]) < 1e-3 for w in expired)


def test_no_prompt_text_reaches_the_page() -> None:
    html, _ = make_report(str(SPOTTER_SESSION))
    lines = SPOTTER_SESSION.read_text().splitlines()
    texts = []
    for line in lines:
        obj = json.loads(line)
        content = (obj.get("message") or {}).get("content")
        if isinstance(content, str) and len(content) > 40:
            texts.append(content[:40])
    assert texts, "the fixture should hold prompts to look for"
    for text in texts:
        assert json.dumps(text)[1:-1] not in html and text not in html


def test_overview_agrees_with_audit_json() -> None:
    tree = REAL / "spotter"
    _, data = make_report(str(tree))
    result = CliRunner().invoke(
        main, ["audit", "--json", "--no-progress", "--by", "cause", str(tree)]
    )
    assert result.exit_code == 0, result.output
    audit = json.loads(result.stdout)
    ov = data["overview"]
    assert ov["totals"] == audit["totals"]
    assert ov["by_cause"] == audit["groups"]
    assert ov["top_misses"] == audit["top_misses"]
    assert ov["whatif"] == audit["whatif"]
    day = CliRunner().invoke(main, ["audit", "--json", "--no-progress", "--by", "day", str(tree)])
    assert day.exit_code == 0, day.output
    assert ov["by_day"] == json.loads(day.stdout)["groups"]
    assert len(data["sessions"]) == ov["sessions"] == 3


def test_window_applies_to_timeline_and_audit() -> None:
    _, data = make_report("--since", "2026-02-11", str(REAL / "spotter"))
    # The window as an instant in UTC (the tests pin TZ=UTC: midnight there).
    assert data["overview"]["since"] == "2026-02-11T00:00:00Z"
    assert len(data["sessions"]) == data["overview"]["sessions"] == 1
    (session,) = data["sessions"]
    assert all(at >= 1770768000 for at in session["lanes"][0]["columns"]["at"])


def test_timelines_limit_keeps_summaries_and_misses() -> None:
    _, data = make_report("--timelines", "1", str(REAL / "spotter"))
    kept = [s for s in data["sessions"] if s["lanes"][0]["columns"] is not None]
    assert [s["session_id"] for s in kept] == ["4d5611e5-241a-462a-8d15-5122611a9569"]
    assert data["timelines_omitted"] == 2
    assert all(s["summaries"] for s in data["sessions"])
    others = [s for s in data["sessions"] if s not in kept]
    assert sum(len(s["events"]) for s in others) == 1  # tool_heavy's miss is still listed


def test_writes_file_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(
        main, ["report", "--no-progress", "-o", str(out), str(SPOTTER_SESSION)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert re.fullmatch(r"Wrote .*r\.html: 1 session\(s\), 0\.\d\d MB\n", result.stderr)
    html = out.read_text()
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    # Self-contained: no external script, style, font or image in the markup (the
    # browser test checks that nothing is fetched at run time either).
    markup = re.sub(r"(<script[^>]*>).*?</script>", r"\1</script>", html, flags=re.S)
    assert markup.count("<script") == 3
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", markup)
    assert not re.search(r"@import|url\(", markup)
    assert out.stat().st_size < 2_000_000


def test_no_sessions_is_an_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", "--no-progress", "-o", "-", str(tmp_path)])
    assert result.exit_code == 1
    assert "no session with requests found" in result.stderr
    assert result.stdout == ""


def test_without_output_writes_the_default_file_here(tmp_path: Path) -> None:
    import os
    import stat

    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=tmp_path) as here:
        result = runner.invoke(main, ["report", "--no-progress", str(SPOTTER_SESSION)])
        assert result.exit_code == 0, result.output
        out = Path(here) / "cachediag-report.html"
        assert out.read_text().startswith("<!doctype html>")
        # Private (0600) and said where, by its full path, on one line of stderr.
        assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
        assert result.stdout == ""
        assert re.fullmatch(
            rf"Wrote {re.escape(str(out))}: 1 session\(s\), 0\.\d\d MB\n", result.stderr
        )
        # A second run replaces it (no temporary file left beside it).
        again = runner.invoke(main, ["report", "--no-progress", str(SPOTTER_SESSION)])
        assert again.exit_code == 0, again.output
        assert os.listdir(here) == ["cachediag-report.html"]


@pytest.mark.parametrize("given", [None, "r.html"])
def test_a_symlink_is_never_written_through(tmp_path: Path, given: str | None) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=tmp_path) as here:
        link = Path(here) / (given or "cachediag-report.html")
        link.symlink_to(victim)
        args = ["report", "--no-progress", *(["-o", given] if given else []), str(SPOTTER_SESSION)]
        result = runner.invoke(main, args)
        assert result.exit_code == 1
        assert "a symbolic link; the report is not written through it" in result.stderr
        assert link.is_symlink() and victim.read_text() == "keep me"


def test_a_folder_as_output_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["report", "--no-progress", "-o", str(tmp_path), str(SPOTTER_SESSION)]
    )
    assert result.exit_code == 1
    assert "a folder; name a file with --output" in result.stderr


def _audit_groups(by: str, *paths: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["audit", "--json", "--no-progress", "--by", by, *paths])
    assert result.exit_code == 0, result.output
    groups: list[dict[str, Any]] = json.loads(result.stdout)["groups"]
    return groups


SEVERAL = (str(REAL / "spotter"), str(REAL / "claude-code-viewer"))


def test_session_list_agrees_with_audit_by_session() -> None:
    _, data = make_report(*SEVERAL)
    rows = data["session_list"]
    assert [r["n"] for r in rows] == list(range(len(data["sessions"])))
    assert [r["session_id"] for r in rows] == [s["session_id"] for s in data["sessions"]]
    audit = {g["key"]: g for g in _audit_groups("session", *SEVERAL)}
    for r in rows:
        g = audit[r["session_id"]]
        assert r["cost_usd"] == g["cost_usd"] and r["misses"] == g["misses"]
        assert r["recache_cost_usd"] == pytest.approx(g["miss_cost_usd"] + g["rebuild_cost_usd"])
    spotter = next(r for r in rows if r["session_id"].startswith("4d5611e5"))
    # Two 5-minute expiries outweigh the one rewrite (the README's session).
    assert spotter["top_cause"] == "ttl_expired_5m" and spotter["misses"] == 3
    assert next(r for r in rows if r["session_id"] == "tool_heavy")["top_cause"] == (
        "messages_rewritten"
    )


@pytest.mark.parametrize(("field", "by"), [("by_project", "project"), ("by_model", "model")])
def test_spend_by_project_and_model_is_the_audit_s(field: str, by: str) -> None:
    _, data = make_report(*SEVERAL)
    assert data["overview"][field] == _audit_groups(by, *SEVERAL)


def test_top_cause_weighs_re_cache_cost() -> None:
    from cachediag.report.html.lists import top_cause

    def e(outcome: str, causes: list[str], usd: float | None) -> dict[str, Any]:
        return {"outcome": outcome, "causes": causes, "miss_cost_usd": usd}

    assert top_cause([]) is None
    assert top_cause([e("miss", ["a"], 0.1), e("miss", ["a"], 0.1), e("miss", ["b"], 0.3)]) == "b"
    assert top_cause([e("expected", [], 0.5), e("miss", ["a"], 0.1)]) == "expected rebuild"
    # Unpriced: the commonest; a tie goes to a miss's cause over a rebuild.
    assert top_cause([e("miss", [], None), e("expected", [], None)]) == "unknown"


def test_advice_for_each_cause_shown() -> None:
    from cachediag.analysis.advice import advice_for

    _, data = make_report(*SEVERAL)
    shown = {r["key"] for r in data["overview"]["by_cause"]} - {"no_miss", "expected_rebuild"}
    assert set(data["advice"]) == shown == {"ttl_expired_5m", "messages_rewritten"}
    for cause, advice in data["advice"].items():
        assert advice["action"] == advice_for(cause).action and advice["action"]


def test_unwritable_output_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "r.html"
    result = CliRunner().invoke(
        main, ["report", "--no-progress", "-o", str(target), str(SPOTTER_SESSION)]
    )
    assert result.exit_code == 1
    assert "cannot write the report" in result.stderr


def test_other_commands_do_not_import_the_report_room() -> None:
    import subprocess
    import sys

    session = str(SPOTTER_SESSION)
    code = "\n".join(
        [
            "import sys",
            "from click.testing import CliRunner",
            "from cachediag.cli import main",
            # A command that failed early would import less: both must have run whole.
            f"audit = CliRunner().invoke(main, ['audit', '--no-progress', {session!r}])",
            "assert audit.exit_code == 0 and audit.stdout, audit.output",
            f"analyze = CliRunner().invoke(main, ['analyze', '--json', {session!r}])",
            "assert analyze.exit_code == 0 and analyze.stdout, analyze.output",
            "print(sorted(m for m in sys.modules if m.startswith('cachediag.report.html')))",
        ]
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_title_is_escaped() -> None:
    html, _ = make_report("--title", "<b>costs</b> & more", str(SPOTTER_SESSION))
    assert "<title>&lt;b&gt;costs&lt;/b&gt; &amp; more</title>" in html
    assert "<b>costs</b>" not in html


@pytest.mark.parametrize(("zone", "label"), [("UTC", "UTC"), ("Europe/Paris", "CET")])
def test_days_follow_the_timezone(zone: str, label: str) -> None:
    _, data = make_report("--timezone", zone, str(REAL / "spotter"))
    assert data["overview"]["days_in"] == label
    result = CliRunner().invoke(
        main,
        [
            "audit",
            "--json",
            "--no-progress",
            "--by",
            "day",
            "--timezone",
            zone,
            str(REAL / "spotter"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert data["overview"]["by_day"] == json.loads(result.stdout)["groups"]


def test_one_vocabulary_in_the_page() -> None:
    """The extra cost of misses and rebuilds beyond a hit is the "re-cache cost"
    everywhere in the page's own text; no older name for it is left."""
    from cachediag.report.html.page import SCRIPT_FILES, _asset

    text = "".join(_asset(name) for name in (*SCRIPT_FILES, "template.html"))
    for old in ("redone", "re-caching", 'beyond a hit"', "misses and rebuilds $"):
        assert old not in text, old
    assert text.count("re-cache cost") >= 10


def test_no_claude_code_advice_for_another_agent_s_log() -> None:
    """A Codex rollout: Claude Code's settings are not its own, so its misses get no
    advice (the page of one session, as the report's worker builds it)."""
    from cachediag.analysis.openai_cache import analyze_openai_session
    from cachediag.ingest.agents import read_agent_sessions
    from cachediag.report.html.data import SessionPage
    from tests.conftest import ROOT

    home = ROOT / "tests" / "data" / "codex_home_pause"
    (log,) = read_agent_sessions("codex", {"CODEX_HOME": str(home)})
    page = SessionPage()(analyze_openai_session(log, 0.0))
    assert [e["outcome"] for e in page["events"]] == ["miss"]
    assert page["advised"] is False and page["advice"] == []
    assert "advice" not in page["events"][0]
    # The same miss in a Claude Code transcript is advised: the test can tell.
    _, data = make_report(str(SPOTTER_SESSION))
    assert data["sessions"][0]["advised"] is True and data["sessions"][0]["advice"]


AGENT_HOMES = tuple(
    str(REAL.parent.parent / "tests" / "data" / home)
    for home in ("codex_home_changes", "gemini_home", "opencode_home_changes")
)
EVERY_AGENT = (str(REAL / "spotter" / "tool_heavy.jsonl"), *AGENT_HOMES)
"""A Claude Code transcript and the recorded homes of the three other agents."""


def test_spend_by_agent_and_each_session_s_agent_when_several() -> None:
    html, data = make_report(*EVERY_AGENT)
    overview = data["overview"]
    assert overview["agents"] == ["claude", "codex", "gemini", "opencode"]
    assert overview["by_agent"] == _audit_groups("agent", *EVERY_AGENT)
    result = CliRunner().invoke(main, ["audit", "--json", "--no-progress", *EVERY_AGENT])
    assert result.exit_code == 0, result.output
    whose = {s["session_id"]: s["agent"] for s in json.loads(result.stdout)["whatif_by_session"]}
    rows = data["session_list"]
    assert sorted(r["agent"] for r in rows) == sorted(whose.values())
    for r, session in zip(rows, data["sessions"], strict=True):
        assert r["agent"] == whose[r["session_id"]] == session["agent"]
    assert 'id="chart-agent"' in html
    # One agent: no spend by agent (a bar of one says nothing), the list as it was.
    _, one = make_report(*SEVERAL)
    assert one["overview"]["agents"] == ["claude"] and one["overview"]["by_agent"] == []
    assert {r["agent"] for r in one["session_list"]} == {"claude"}
