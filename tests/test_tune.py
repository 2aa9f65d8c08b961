"""``cachediag tune``: the evidence rule on small histories, its figures against the
audit's what-if on the corpus, and ``--apply`` / ``--undo`` on settings files."""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.analysis.tune_evidence import KindEvidence, decide
from cachediag.analysis.whatif import Policy
from cachediag.cli import main

NOW = "1790000000"  # 2026-09-21: the fixtures and the corpus lie before it
WINDOW = ["--since", "2026-01-01", "--now", NOW, "--jobs", "1", "--no-progress"]


def write_history(path: Path, gaps_min: list[int], ttl: str = "5m") -> Path:
    """One session whose prompt grows by 1,000 tokens a request, ``gaps_min`` apart; a
    pause past the TTL in force expires the cache (the request writes it all again)."""
    at = datetime(2026, 1, 5, 10, 0, tzinfo=UTC).timestamp()
    lines: list[dict[str, Any]] = []
    cached = 0
    for i, gap in enumerate([0, *gaps_min]):
        at += gap * 60
        prompt = 20_000 + 1_000 * i
        expired = i > 0 and gap * 60 >= (300 if ttl == "5m" else 3600)
        read = 0 if i == 0 or expired else cached
        written = prompt - read
        stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        usage = {
            "input_tokens": 3,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "cache_creation": {
                "ephemeral_5m_input_tokens": written if ttl == "5m" else 0,
                "ephemeral_1h_input_tokens": written if ttl == "1h" else 0,
            },
            "output_tokens": 50,
        }
        lines.append(
            {
                "type": "user",
                "sessionId": path.stem,
                "uuid": f"q{i}",
                "parentUuid": f"a{i - 1}" if i else None,
                "timestamp": stamp,
                "message": {"role": "user", "content": "hi"},
            }
        )
        lines.append(
            {
                "type": "assistant",
                "sessionId": path.stem,
                "uuid": f"a{i}",
                "parentUuid": f"q{i}",
                "requestId": f"r{i}",
                "timestamp": stamp,
                "message": {
                    "id": f"m{i}",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [{"type": "text", "text": "ok"}],
                    "usage": usage,
                },
            }
        )
        cached = prompt
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


PAUSES = [1, 20, 1, 25, 1, 30, 1, 15, 1, 40, 1, 20]
"""Six pauses of 15-40 minutes: each one a miss at 5m, a hit at 1h."""
NO_PAUSE = [1, 2, 1, 3, 120, 1, 2, 90, 1]
"""Short pauses and two over an hour: nothing the hour would keep."""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["tune", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def tune_json(*args: str) -> dict[str, Any]:
    code, out, err = run(*args, *WINDOW, "--json")
    assert code == 0, err
    loaded: dict[str, Any] = json.loads(out)
    return loaded


def kind(report: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [k for k in report["kinds"] if k["kind"] == name]
    result: dict[str, Any] = found
    return result


# The evidence rule, pinned.


def evidence(five: float, hour: float, covered: int, requests: int = 50) -> KindEvidence:
    e = KindEvidence("main", streams=1, requests=requests, covered_pauses=covered)
    e.ttl_choice = True
    results = e.whatif.results
    results[Policy.AS_HAPPENED].cost_usd = five
    results[Policy.TTL_5M].cost_usd = five
    results[Policy.TTL_1H].cost_usd = hour
    return e


def test_no_covered_pause_is_never_1h_even_if_the_prices_say_so() -> None:
    verdict = decide(evidence(five=10.0, hour=5.0, covered=0))
    assert verdict.ttl == "5m"
    assert "no pause between 5 min and 1 h" in verdict.reason


@pytest.mark.parametrize(
    ("five", "hour", "covered", "ttl", "confidence"),
    [
        (10.0, 8.0, 12, "1h", "high"),
        (10.0, 8.0, 4, "1h", "medium"),
        (10.0, 8.0, 1, "1h", "low"),
        (8.0, 10.0, 5, "5m", "medium"),
        (10.0, 9.95, 5, None, "medium"),  # within 1%: no change
    ],
)
def test_evidence_rule(
    five: float, hour: float, covered: int, ttl: str | None, confidence: str
) -> None:
    verdict = decide(evidence(five, hour, covered))
    assert (verdict.ttl, verdict.confidence) == (ttl, confidence)
    if ttl == "1h":
        assert verdict.saved_usd == pytest.approx(five - hour)


def test_nothing_priced_names_no_ttl() -> None:
    assert decide(evidence(0.0, 0.0, covered=3)).ttl is None


# Small histories through the command.


def test_pauses_the_hour_covers_recommend_1h(tmp_path: Path) -> None:
    history = write_history(tmp_path / "pauses.jsonl", PAUSES)
    settings = tmp_path / "claude" / "settings.json"
    report = tune_json(str(history), "--settings", str(settings))
    main_kind = kind(report, "main")
    assert (main_kind["pauses_5m_to_1h"], main_kind["pauses_over_1h"]) == (6, 0)
    assert main_kind["recommended_ttl"] == "1h"
    costs = main_kind["cost_usd"]
    assert costs["1h"] < costs["5m"]
    assert main_kind["saved_usd"] == pytest.approx(costs["as_happened"] - costs["1h"], abs=1e-5)
    assert report["saved_usd"] == pytest.approx(main_kind["saved_usd"], abs=1e-5)
    (plan,) = [p for p in report["settings"] if p["key"] == "promptCacheTtl"]
    assert (plan["current"], plan["in_force"], plan["action"]) == (None, "5m", "write")
    assert not settings.exists()  # without --apply nothing is written


def test_a_history_without_a_5m_to_1h_pause_never_gets_1h(tmp_path: Path) -> None:
    history = write_history(tmp_path / "nopause.jsonl", NO_PAUSE)
    report = tune_json(str(history), "--settings", str(tmp_path / "settings.json"))
    main_kind = kind(report, "main")
    assert (main_kind["pauses_5m_to_1h"], main_kind["pauses_over_1h"]) == (0, 2)
    assert main_kind["recommended_ttl"] == "5m"
    # Written at 1h before: the evidence moves it to 5m, and says what that saves.
    history_1h = write_history(tmp_path / "nopause1h.jsonl", NO_PAUSE, ttl="1h")
    report = tune_json(str(history_1h), "--settings", str(tmp_path / "settings.json"))
    main_kind = kind(report, "main")
    assert main_kind["recommended_ttl"] == "5m"
    assert main_kind["ttl_written"] == "1h"
    assert main_kind["saved_usd"] > 0


def _odd_settings(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """A settings.json that is a symlink into a dotfiles folder, mode 0640, with its own
    spacing and a number written as 1.50."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    original = b'{"model": "opus",   "cleanupPeriodDays": 1.50,\n"env": {"A": "b"}}'
    real.write_bytes(original)
    real.chmod(0o640)
    home = tmp_path / "claude"
    home.mkdir()
    link = home / "settings.json"
    link.symlink_to(real)
    return link, real, original


def test_apply_then_undo_leaves_settings_byte_identical(tmp_path: Path) -> None:
    history = write_history(tmp_path / "pauses.jsonl", PAUSES)
    link, real, original = _odd_settings(tmp_path)
    code, out, err = run(str(history), *WINDOW, "--settings", str(link), "--apply")
    assert code == 0, err
    assert "promptCacheTtl set to 1h (not set" in out
    assert link.is_symlink() and link.resolve() == real
    assert json.loads(real.read_text())["promptCacheTtl"] == "1h"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    backups = list(link.parent.glob("settings.json.*.bak"))
    assert [b.read_bytes() for b in backups] == [original]
    assert all(stat.S_IMODE(b.stat().st_mode) == 0o600 for b in backups)
    # Applying again changes nothing and keeps the first record.
    code, out, _ = run(str(history), *WINDOW, "--settings", str(link), "--apply")
    assert code == 0 and "set to" not in out
    code, out, err = run("--undo", "--settings", str(link))
    assert code == 0, err
    assert real.read_bytes() == original
    assert link.is_symlink() and stat.S_IMODE(real.stat().st_mode) == 0o640
    # Nothing of tune's is left to undo.
    code, out, _ = run("--undo", "--settings", str(link))
    assert code == 0 and "nothing changed" in out
    assert real.read_bytes() == original


def test_apply_then_undo_without_a_settings_file_leaves_none(tmp_path: Path) -> None:
    history = write_history(tmp_path / "pauses.jsonl", PAUSES)
    settings = tmp_path / "claude" / "settings.json"
    code, _, err = run(str(history), *WINDOW, "--settings", str(settings), "--apply")
    assert code == 0, err
    assert json.loads(settings.read_text()) == {"promptCacheTtl": "1h"}
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    code, _, err = run("--undo", "--settings", str(settings))
    assert code == 0, err
    assert not settings.exists()


def test_an_explicit_setting_is_reported_not_silently_overridden(tmp_path: Path) -> None:
    history = write_history(tmp_path / "pauses.jsonl", PAUSES)
    settings = tmp_path / "settings.json"
    original = b'{\n  "promptCacheTtl": "5m"\n}\n'
    settings.write_bytes(original)
    code, out, _ = run(str(history), *WINDOW, "--settings", str(settings))
    assert code == 0
    assert "promptCacheTtl: 5m in force (settings.json)" in out
    assert "you set it" in out and "--apply --force replaces it" in out
    code, out, _ = run(str(history), *WINDOW, "--settings", str(settings), "--apply")
    assert code == 0 and settings.read_bytes() == original  # kept
    report = tune_json(str(history), "--settings", str(settings))
    (plan,) = [p for p in report["settings"] if p["key"] == "promptCacheTtl"]
    assert (plan["current"], plan["action"], plan["recommended"]) == ("5m", "explicit", "1h")
    code, out, _ = run(str(history), *WINDOW, "--settings", str(settings), "--apply", "--force")
    assert code == 0 and "promptCacheTtl set to 1h (was 5m" in out
    assert json.loads(settings.read_text())["promptCacheTtl"] == "1h"
    code, out, _ = run("--undo", "--settings", str(settings))
    assert code == 0 and settings.read_bytes() == original


def test_claude_config_dir_names_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = write_history(tmp_path / "pauses.jsonl", PAUSES)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    report = tune_json(str(history))
    assert report["settings_file"] == str(tmp_path / "cfg" / "settings.json")


def test_usage_errors(tmp_path: Path) -> None:
    assert run("--undo", "--apply", "--settings", str(tmp_path / "s.json"))[0] == 2
    assert run("--force", "--settings", str(tmp_path / "s.json"))[0] == 2


# The corpus: its per-kind figures are the audit's what-if.


def test_corpus_figures_equal_the_audits_whatif(corpus: Path, tmp_path: Path) -> None:
    paths = [str(corpus / "claude-code")]
    report = tune_json(*paths, "--settings", str(tmp_path / "settings.json"))
    audit = CliRunner().invoke(main, ["audit", *paths, *WINDOW, "--json"])
    assert audit.exit_code == 0, audit.stderr
    whatif = {p["policy"]: p for p in json.loads(audit.stdout)["whatif"]["policies"]}
    base = [k for k in report["kinds"] if not k["kind"].startswith("agent:")]
    assert {k["kind"] for k in base} >= {"main", "subagents"}
    for policy, figures in whatif.items():
        assert sum(k["cost_usd"][policy] for k in base) == pytest.approx(
            figures["cost_usd"], abs=1e-5
        )
        assert sum(k["misses"][policy] for k in base) == figures["misses"]
    # Each agent type is a part of the subagents: together they are the whole.
    agents = [k for k in report["kinds"] if k["kind"].startswith("agent:")]
    assert "agent:Explore" in {k["kind"] for k in agents}
    subagents = kind(report, "subagents")
    assert sum(k["requests"] for k in agents) == subagents["requests"]
    for k in base:
        if k["recommended_ttl"] is not None:
            saved = k["cost_usd"]["as_happened"] - k["cost_usd"][k["recommended_ttl"]]
            assert k["saved_usd"] == pytest.approx(saved, abs=1e-5)
        assert k["recommended_ttl"] != "1h" or k["pauses_5m_to_1h"] > 0


def test_corpus_table_shows_each_kind_with_its_figures(corpus: Path, tmp_path: Path) -> None:
    paths = [str(corpus / "claude-code"), "--settings", str(tmp_path / "settings.json")]
    report = tune_json(*paths)
    code, out, err = run(*paths, *WINDOW)
    assert code == 0, err
    assert all(len(line) <= 80 for line in out.splitlines())
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line[:1].isalpha()}
    for name in ("main", "subagents"):
        k = kind(report, name)
        cells = rows[name]
        assert cells[1] == f"{k['requests']:,}"
        assert cells[2:5] == [f"${k['cost_usd'][p]:,.2f}" for p in ("as_happened", "5m", "1h")]
        assert cells[5:7] == [str(k["pauses_5m_to_1h"]), str(k["pauses_over_1h"])]
        assert cells[7] == k["recommended_ttl"]
    assert "promptCacheTtl:" in out and "subagentPromptCacheTtl:" in out
    assert "experimental: {cacheTtl:" in out
    assert f"Would have saved ${report['saved_usd']:,.2f}" in out
    assert os.environ.get("CLAUDE_CONFIG_DIR") is None or "settings" in out


def test_unreadable_settings_are_named_and_apply_refuses(tmp_path: Path) -> None:
    history = write_history(tmp_path / "pauses.jsonl", PAUSES)
    settings = tmp_path / "settings.json"
    settings.write_bytes(b"{not json")
    code, out, _ = run(str(history), *WINDOW, "--settings", str(settings))
    assert code == 0 and f"{settings}: cannot read it as JSON" in " ".join(out.split())
    assert "main                    13" in out  # the evidence is still shown
    code, _, err = run(str(history), *WINDOW, "--settings", str(settings), "--apply")
    assert code == 1 and "cannot read it as JSON" in err
    assert settings.read_bytes() == b"{not json"


def test_a_1h_history_that_needs_it_writes_nothing(tmp_path: Path) -> None:
    history = write_history(tmp_path / "sub.jsonl", PAUSES, ttl="1h")
    settings = tmp_path / "settings.json"
    report = tune_json(str(history), "--settings", str(settings))
    (plan,) = [p for p in report["settings"] if p["key"] == "promptCacheTtl"]
    assert (plan["in_force"], plan["recommended"], plan["action"]) == ("1h", "1h", "same")
    code, out, _ = run(str(history), *WINDOW, "--settings", str(settings), "--apply")
    assert code == 0 and "needs no change" in out and not settings.exists()


def _with_subagent(tmp_path: Path, agent_type: str) -> Path:
    """A session whose subagent (2.1.x layout) has a meta.json naming its type."""
    project = tmp_path / "project"
    project.mkdir()
    main_file = write_history(project / "s1.jsonl", [1, 1])
    agents = project / "s1" / "subagents"
    agents.mkdir(parents=True)
    sub = write_history(agents / "agent-a1b2c3d.jsonl", PAUSES)
    lines = [json.loads(line) for line in sub.read_text().splitlines()]
    for line in lines:
        line.update(sessionId="s1", isSidechain=True, agentId="a1b2c3d")
        line["uuid"] = "x" + line["uuid"]
        if line["parentUuid"]:
            line["parentUuid"] = "x" + line["parentUuid"]
        line["requestId"] = "x" + line.get("requestId", "")
        line["message"]["id"] = "x" + line["message"].get("id", "")
    sub.write_text("".join(json.dumps(line) + "\n" for line in lines))
    meta = {"agentType": agent_type, "description": "reviews"}
    (agents / "agent-a1b2c3d.meta.json").write_text(json.dumps(meta))
    return main_file.parent


def test_a_named_agent_type_gets_its_frontmatter_line(tmp_path: Path) -> None:
    project = _with_subagent(tmp_path, "reviewer")
    claude = tmp_path / "claude"
    (claude / "agents").mkdir(parents=True)
    (claude / "agents" / "reviewer.md").write_text("---\nname: reviewer\n---\n")
    settings = claude / "settings.json"
    report = tune_json(str(project), "--settings", str(settings))
    reviewer = kind(report, "agent:reviewer")
    assert reviewer["recommended_ttl"] == "1h" and reviewer["pauses_5m_to_1h"] == 6
    assert reviewer["frontmatter"] == "experimental: {cacheTtl: 1h}"
    assert reviewer["agent_file"] == str(claude / "agents" / "reviewer.md")
    assert kind(report, "subagents")["recommended_ttl"] == "1h"
    code, out, _ = run(str(project), *WINDOW, "--settings", str(settings))
    assert code == 0
    assert "  reviewer: experimental: {cacheTtl: 1h} in" in out
    assert (claude / "agents" / "reviewer.md").read_text() == "---\nname: reviewer\n---\n"
    (claude / "agents" / "reviewer.md").write_text("---\nexperimental:\n  cacheTtl: 5m\n---\nhi")
    report = tune_json(str(project), "--settings", str(settings))
    assert kind(report, "agent:reviewer")["agent_file_ttl"] == "5m"
    code, out, _ = run(str(project), *WINDOW, "--settings", str(settings))
    assert "(it says 5m now)" in out


def test_an_agent_type_that_is_not_a_plain_name_is_left_unnamed(tmp_path: Path) -> None:
    project = _with_subagent(tmp_path, "../../x\x1b[31m")
    report = tune_json(str(project), "--settings", str(tmp_path / "settings.json"))
    assert "agent:" in {k["kind"] for k in report["kinds"]}
    code, out, _ = run(str(project), *WINDOW, "--settings", str(tmp_path / "settings.json"))
    assert code == 0 and "\x1b" not in out and "(type unknown)" in out


def test_one_kind_saves_what_the_audit_says_the_ttl_saves(tmp_path: Path) -> None:
    history = write_history(tmp_path / "pauses.jsonl", PAUSES)
    report = tune_json(str(history), "--settings", str(tmp_path / "settings.json"))
    audit = CliRunner().invoke(main, ["audit", str(history), *WINDOW, "--json"])
    policies = {p["policy"]: p["cost_usd"] for p in json.loads(audit.stdout)["whatif"]["policies"]}
    assert report["saved_usd"] == pytest.approx(policies["as_happened"] - policies["1h"], abs=1e-6)
    assert report["saved_usd"] > 0.1
