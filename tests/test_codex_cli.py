"""``cachediag analyze --agent``: Codex rollouts through the real command line, and
Claude Code's output unchanged by the option."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data"
HOME = DATA / "codex_home_changes"
TRUTH = json.loads((DATA / "codex_truth_changes.json").read_text())
TRANSCRIPT = Path(__file__).parent.parent / "fixtures/real/spotter/tool_heavy.jsonl"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    base = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "CLAUDE_CONFIG_DIR")}
    return subprocess.run(
        [sys.executable, "-m", "cachediag", "analyze", *args],
        capture_output=True, env={**base, **(env or {})}, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_codex_home_json_requests(tmp_path: Path) -> None:
    done = run("--agent", "codex", "--json", "--requests", env={"CODEX_HOME": str(HOME)})
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.decode().splitlines()
    session = json.loads(line)
    assert session["format"] == "codex-rollout"
    requests = session["requests"] + [r for s in session["streams"] for r in s.get("requests", [])]
    ids = {r["message_id"] for r in requests}
    assert ids == {t["response_id"] for t in TRUTH}
    main = [r for r in session["requests"]]
    causes = [r["causes"] for r in main if r["outcome"] == "miss"]
    assert causes == [
        ["effort_changed"], ["unknown"], ["tools_changed"], ["likely_server_side"],
        ["model_changed", "effort_changed"],
    ]  # fmt: skip
    # The same fields per request as for Claude Code.
    claude = run("--json", "--requests", str(TRANSCRIPT))
    claude_fields = set(json.loads(claude.stdout.decode().splitlines()[0])["requests"][0])
    assert set(main[0]) == claude_fields


def test_codex_default_home_under_home(tmp_path: Path) -> None:
    shutil.copytree(HOME, tmp_path / ".codex")
    done = run("--agent", "codex", "--json", env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.decode().splitlines()) == 1
    tables = run("--agent", "codex", env={"HOME": str(tmp_path), "COLUMNS": "120"})
    assert tables.returncode == 0, tables.stderr
    assert b"gpt-5.5" in tables.stdout and b"miss" in tables.stdout


def test_codex_path_not_a_rollout_is_an_error(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# hello\n")
    done = run("--agent", "codex", "--json", str(readme))
    assert done.returncode == 1 and done.stdout == b""
    assert b"not a codex session log" in done.stderr


def test_agent_claude_is_todays_output() -> None:
    env = {"COLUMNS": "120", "TZ": "UTC"}
    for args in (("--json", "--requests"), ("--json",), ()):
        plain = run(*args, str(TRANSCRIPT), env=env)
        named = run("--agent", "claude", *args, str(TRANSCRIPT), env=env)
        assert plain.returncode == named.returncode == 0, named.stderr
        assert plain.stdout == named.stdout and plain.stderr == named.stderr


def test_agent_all_tags_each_line(tmp_path: Path) -> None:
    home = tmp_path / "u"
    shutil.copytree(HOME, home / ".codex")
    claude = home / ".claude" / "projects" / "-p"
    claude.mkdir(parents=True)
    shutil.copy(TRANSCRIPT, claude / TRANSCRIPT.name)
    done = run("--agent", "all", "--json", env={"HOME": str(home)})
    assert done.returncode == 0, done.stderr
    agents = sorted(json.loads(line)["agent"] for line in done.stdout.decode().splitlines())
    assert agents == ["claude", "codex"]
    # The default is every agent found: the same sessions, each line naming its agent
    # since the history holds two agents' sessions.
    default = run("--json", env={"HOME": str(home)})
    assert default.returncode == 0, default.stderr
    assert default.stdout == done.stdout
    # Paths are read by whichever reader their files need: all tags every line.
    rollout = next((home / ".codex").rglob("rollout-*.jsonl"))
    named = run("--agent", "all", "--json", str(TRANSCRIPT), str(rollout))
    assert named.returncode == 0, named.stderr
    lines = [json.loads(line) for line in named.stdout.decode().splitlines()]
    assert sorted(line["agent"] for line in lines) == ["claude", "codex"]


def test_default_reads_every_agents_files_named(tmp_path: Path) -> None:
    """No --agent: a Claude transcript alone prints as it always has (no "agent"); with
    a Codex rollout beside it, every line names its agent; --agent codex keeps only the
    rollout's session, untagged, from the same paths read by the pipeline."""
    rollout = next(HOME.rglob("rollout-*.jsonl"))
    alone = run("--json", str(TRANSCRIPT))
    assert alone.returncode == 0 and b'"agent"' not in alone.stdout
    both = run("--json", str(TRANSCRIPT), str(rollout))
    assert both.returncode == 0, both.stderr
    tagged = [json.loads(line) for line in both.stdout.decode().splitlines()]
    assert sorted(t["agent"] for t in tagged) == ["claude", "codex"]
    codex_line = next(t for t in tagged if t["agent"] == "codex")
    only = run("--agent", "codex", "--json", str(rollout))
    assert only.returncode == 0, only.stderr
    untagged = json.loads(only.stdout)
    assert {k: v for k, v in codex_line.items() if k != "agent"} == untagged
