"""``--agent`` on the commands beside ``analyze``: audit, report, explain and export read
every agent's files with the pipeline, and ``--agent NAME`` keeps that agent's sessions.

The ledgers' own figures are pinned elsewhere (tests/test_codex*.py, test_gemini*.py,
test_opencode.py); here the point is that each command sees the same sessions and the
same totals as ``analyze`` does for the same choice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
CODEX = DATA / "codex_home_changes"
GEMINI = DATA / "gemini_home"
OPENCODE = DATA / "opencode_home_changes"
TRANSCRIPT = Path(__file__).parent.parent / "fixtures/real/spotter/tool_heavy.jsonl"
HOMES = ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    base = {k: v for k, v in os.environ.items() if k not in HOMES}
    return subprocess.run(
        [sys.executable, "-m", "cachediag", *args],
        capture_output=True, env={**base, "TZ": "UTC", **(env or {})}, timeout=180,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def analyze_requests(*args: str, env: dict[str, str] | None = None) -> dict[str, int]:
    done = run("analyze", "--json", *args, env=env)
    assert done.returncode == 0, done.stderr
    counts: dict[str, int] = {}
    for line in done.stdout.decode().splitlines():
        obj = json.loads(line)
        agent = obj.get("agent", "claude")
        counts[agent] = counts.get(agent, 0) + obj["totals"]["requests"]
    return counts


def audit_totals(*args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    done = run("audit", "--json", *args, env=env)
    assert done.returncode == 0, done.stderr
    totals: dict[str, object] = json.loads(done.stdout)["totals"]
    return totals


def test_audit_reads_each_agent_and_filters(tmp_path: Path) -> None:
    claude = tmp_path / "-p"
    claude.mkdir()
    shutil.copy(TRANSCRIPT, claude / TRANSCRIPT.name)
    # Folders: each agent's files are found in them by name, and --agent keeps one's.
    paths = (str(claude), str(CODEX), str(GEMINI), str(OPENCODE))
    per_agent = analyze_requests(*paths)
    assert set(per_agent) == {"claude", "codex", "gemini", "opencode"}
    assert audit_totals(*paths)["requests"] == sum(per_agent.values())
    for agent, requests in per_agent.items():
        assert audit_totals("--agent", agent, *paths)["requests"] == requests
    # A file named on its own with another agent asked for is an error, as for analyze.
    refused = run("audit", "--agent", "codex", str(TRANSCRIPT), str(CODEX))
    assert refused.returncode != 0 and b"not a codex session log" in refused.stderr


def test_default_history_is_every_agents_home(tmp_path: Path) -> None:
    home = tmp_path / "u"
    shutil.copytree(CODEX, home / ".codex")
    projects = home / ".claude" / "projects" / "-p"
    projects.mkdir(parents=True)
    shutil.copy(TRANSCRIPT, projects / TRANSCRIPT.name)
    env = {"HOME": str(home)}
    both = audit_totals(env=env)
    claude = audit_totals("--agent", "claude", env=env)
    codex = audit_totals("--agent", "codex", env=env)
    assert both["requests"] == claude["requests"] + codex["requests"]  # type: ignore[operator]
    assert codex["requests"] == sum(analyze_requests("--agent", "codex", env=env).values())
    missing = run("audit", "--agent", "gemini", env=env)
    assert missing.returncode != 0 and b"no gemini sessions found" in missing.stderr


def test_explain_a_codex_miss_names_its_cause() -> None:
    rollout = next(CODEX.rglob("rollout-*.jsonl"))
    done = run("explain", "--json", str(rollout))
    assert done.returncode == 0, done.stderr
    explained = json.loads(done.stdout)
    request = explained["request"]
    # The last miss of that run: the model and the effort switched together (the fake's
    # ground truth, tests/data/codex_truth_changes.json).
    assert request["outcome"] == "miss"
    assert request["causes"] == ["model_changed", "effort_changed"]
    assert explained["changes"], explained
    skipped = run("explain", "--agent", "gemini", str(rollout))
    assert skipped.returncode != 0 and b"not a gemini session log" in skipped.stderr


def test_report_counts_every_agent(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    done = run("report", "--output", str(out), str(TRANSCRIPT), str(CODEX))
    if done.returncode != 0 and b"extra" in done.stderr:
        pytest.skip("the report's extra is not installed")
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    rollout = next(CODEX.rglob("rollout-*.jsonl"))
    session_id = rollout.stem.rsplit("-", 5)[-5:]
    assert "-".join(session_id) in html


def test_tables_title_another_agents_session_with_its_name() -> None:
    done = run("analyze", str(GEMINI), str(TRANSCRIPT), env={"COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    titles = [line for line in done.stdout.decode().splitlines() if line.startswith("Session ")]
    assert len(titles) == 2
    assert sum(line.endswith(" · Gemini CLI") for line in titles) == 1
    assert sum(" · " not in line for line in titles) == 1  # Claude Code's, as it always was


def test_another_agents_log_under_any_name_or_piped(tmp_path: Path) -> None:
    """Discovery knows an agent's files by name; a copy under another name, or the file
    piped in, is told by its content and read by the same reader and ledger."""
    rollout = next(CODEX.rglob("rollout-*.jsonl"))
    chat = next(GEMINI.rglob("session-*.jsonl"))
    for original in (rollout, chat):
        renamed = tmp_path / f"copy-of-{original.parent.name}.jsonl"
        shutil.copy(original, renamed)
        by_name = json.loads(run("analyze", "--json", "--requests", str(original)).stdout)
        copied = json.loads(run("analyze", "--json", "--requests", str(renamed)).stdout)
        piped = subprocess.run(
            [sys.executable, "-m", "cachediag", "analyze", "--json", "--requests"],
            input=original.read_bytes(), capture_output=True, timeout=120,
        )  # fmt: skip
        assert piped.returncode == 0, piped.stderr
        for other in (copied, json.loads(piped.stdout)):
            assert other["format"] == by_name["format"]
            assert other["prompt_cache"] == by_name["prompt_cache"]
            assert [r["causes"] for r in other["requests"]] == [
                r["causes"] for r in by_name["requests"]
            ]


def test_no_claude_code_advice_on_other_agents_sessions() -> None:
    """The advice names Claude Code's settings: never shown for another agent's miss,
    opencode's rows in OpenAI's form (``opencode-auto``) included."""
    for path in (OPENCODE / "opencode" / "opencode.db", next(CODEX.rglob("rollout-*.jsonl"))):
        done = run("explain", "--json", str(path))
        assert done.returncode == 0, done.stderr
        explained = json.loads(done.stdout)
        assert explained["request"]["outcome"] == "miss"
        assert explained["advice"] == []


def test_a_file_of_no_session_in_an_agents_home_is_passed_over(tmp_path: Path) -> None:
    """The history with no path is walked, as Claude Code's is: an empty rollout (one
    Codex has just created) is reported and the rest is read, never a failed run."""
    home = tmp_path / "u"
    shutil.copytree(CODEX, home / ".codex")
    env = {"HOME": str(home)}
    before = audit_totals("--agent", "codex", env=env)
    day = next((home / ".codex").rglob("rollout-*.jsonl")).parent
    (day / "rollout-2026-12-02T05-00-00-empty.jsonl").write_bytes(b"")
    done = run("audit", "--json", "--agent", "codex", env=env)
    assert done.returncode == 0, done.stderr
    assert b"empty" in done.stderr
    assert json.loads(done.stdout)["totals"] == before
