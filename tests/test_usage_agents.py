"""The usage reports across agents against ccusage 20.0.24's own, on one home.

``tests/agents_home.py`` builds a home with Claude Code's, Codex's, Gemini CLI's and
opencode's sessions; ``scripts/record_ccusage.py record_agents`` recorded ccusage's
``ccusage daily|weekly|monthly|session|blocks --json`` (every agent) and
``ccusage codex|gemini|opencode <report> --json`` on it (``tests/data/ccusage20_all_*``).
cachediag reads the same files here: the same keys and JSON types (``promptCache`` is
ours), equal tokens, costs to the cent, equal periods, sessions and times, but for what
``pinned`` computes from the files themselves (docs/usage.md, "Across agents").
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.commands.usage_quick import usage_args
from tests.agents_home import CHANNEL_DB, MOVED, add_channel, build_home

DATA = Path(__file__).parent / "data"
LATER = datetime(2027, 6, 1, tzinfo=UTC).timestamp()
"""A clock past every request: no block is active (as when ccusage was recorded)."""
COST_KEYS = {"totalCost", "cost", "costUSD"}
CENT = 0.005
ACROSS = ("daily", "weekly", "monthly", "session")
OWN = [
    ("codex", "daily"),
    ("codex", "monthly"),
    ("codex", "session"),
    ("gemini", "daily"),
    ("gemini", "monthly"),
    ("gemini", "session"),
    ("opencode", "daily"),
    ("opencode", "weekly"),
    ("opencode", "monthly"),
    ("opencode", "session"),
]
"""Each agent's own reports in ccusage 20.0.24 (Codex and Gemini CLI have no weekly)."""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_home(tmp_path_factory.mktemp("agents") / "home")


def paths(home: Path) -> list[str]:
    """Each agent's folder in the home (the reports read paths; the homes are where each
    agent keeps its sessions)."""
    places = (".claude/projects", ".codex", ".gemini", ".local/share/opencode")
    return [str(home / p) for p in places]


def run(home: Path, report: str, *extra: str, where: list[str] | None = None) -> str:
    args = [report, *(paths(home) if where is None else where), "-z", "UTC", "--now"]
    env = {k: None for k in MOVED} | {"HOME": str(home)}
    result = CliRunner().invoke(main, [*args, str(LATER), *extra], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def ours(home: Path, report: str, *extra: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(run(home, report, "--json", *extra))
    return out


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"ccusage20_all_{name}.json").read_text())
    assert data["ccusage_version"].endswith("20.0.24")
    assert "--offline" in data["command"] and "--timezone UTC" in data["command"]
    out: dict[str, Any] = data["output"]
    return out


def differences(mine: Any, theirs: Any, where: str = "$") -> list[str]:
    """Keys and JSON types must be alike (``promptCache`` is ours); the values that
    differ (costs by a cent or more) are listed."""
    if isinstance(theirs, dict):
        assert isinstance(mine, dict), where
        assert set(mine) - {"promptCache"} == set(theirs), where
        out = []
        for key, value in theirs.items():
            if key in COST_KEYS and isinstance(value, int | float):
                assert isinstance(mine[key], int | float), f"{where}.{key}"
                if abs(mine[key] - value) >= CENT:
                    out.append(f"{where}.{key}")
            else:
                out += differences(mine[key], value, f"{where}.{key}")
        return out
    if isinstance(theirs, list):
        assert isinstance(mine, list) and len(mine) == len(theirs), where
        pairs = enumerate(zip(mine, theirs, strict=True))
        return [d for i, (m, t) in pairs for d in differences(m, t, f"{where}[{i}]")]
    assert type(mine) is type(theirs) or {type(mine), type(theirs)} <= {int, float}, where
    return [] if mine == theirs else [f"{where}"]


def opencode_reasoning(home: Path) -> dict[str, int]:
    """Per model, the reasoning tokens opencode's database records for its calls."""
    db = home / ".local/share/opencode/opencode.db"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out: dict[str, int] = {}
    for (data,) in conn.execute("SELECT data FROM message"):
        msg = json.loads(data)
        if msg.get("role") == "assistant":
            model = msg["modelID"]
            out[model] = out.get(model, 0) + msg.get("tokens", {}).get("reasoning", 0)
    conn.close()
    return out


def pinned(mine: dict[str, Any], theirs: dict[str, Any], home: Path, own: bool) -> list[str]:
    """Where cachediag differs from ccusage, each value checked, as docs/usage.md explains:
    opencode's calls are dated when their step started, ccusage's by their message, less
    than a second apart here. Its reasoning is left out of ``outputTokens`` by both (in
    the totals and the cost): checked here, as it is in the recorded session, so that
    equal ``outputTokens`` are not equal for want of any. ``own``: opencode's report."""
    assert sum(opencode_reasoning(home).values()) > 0
    out = []
    for key, lines in theirs.items():
        if not isinstance(lines, list):
            continue
        for i, line in enumerate(lines):
            if line.get("agent") == "opencode":
                where, got = f"$.{key}[{i}]", mine[key][i]
                gap = _epoch(got["metadata"]["lastActivity"]) - _epoch(
                    line["metadata"]["lastActivity"]
                )
                assert 0 <= gap < 1, where
                if gap:
                    out.append(f"{where}.metadata.lastActivity")
    return sorted(out)


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize("report", ACROSS)
def test_across_agents_equals_ccusage(home: Path, report: str) -> None:
    """By default, with more than one agent's sessions: ccusage's all-agents shape."""
    mine, theirs = ours(home, report), recorded(report)
    assert sorted(differences(mine, theirs)) == pinned(mine, theirs, home, own=False)
    assert mine == ours(home, report, "--agent", "all")


@pytest.mark.parametrize(("agent", "report"), OWN)
def test_one_agent_equals_its_ccusage_report(home: Path, agent: str, report: str) -> None:
    mine, theirs = ours(home, report, "--agent", agent), recorded(f"{agent}_{report}")
    expected = pinned(mine, theirs, home, own=True) if agent == "opencode" else []
    assert sorted(differences(mine, theirs)) == expected


def test_codex_reasoning_tokens_are_codex_own(home: Path) -> None:
    """``reasoningOutputTokens`` (within ``outputTokens``) as the rollouts record them."""
    rollouts = sorted((home / ".codex/sessions").rglob("rollout-*.jsonl"))
    said = 0
    for path in rollouts:
        for text in path.read_text().splitlines():
            line = json.loads(text)
            if line["type"] == "token_usage_record":
                said += line["payload"]["usage"]["reasoning_output_tokens"]
    mine = ours(home, "daily", "--agent", "codex")["totals"]
    assert said > 0 and mine["reasoningOutputTokens"] == said


def test_blocks_are_claude_codes_as_in_ccusage(home: Path) -> None:
    """ccusage's ``blocks`` reads Claude Code alone (the 5-hour window is Anthropic's
    plan limit): so does cachediag's by default; ``--agent all`` counts every agent."""
    mine = ours(home, "blocks")
    assert differences(mine, recorded("blocks")) == []
    every = ours(home, "blocks", "--agent", "all")["blocks"]
    assert sum(b["entries"] for b in every) > sum(b["entries"] for b in mine["blocks"])
    (codex,) = [b for b in ours(home, "blocks", "--agent", "codex")["blocks"] if not b["isGap"]]
    assert set(codex["models"]) == {"gpt-5.5", "gpt-5.6-sol", "gpt-5.6-terra"}


def test_claude_alone_keeps_the_claude_shape_byte_for_byte(home: Path) -> None:
    """``--agent claude`` over every agent's files prints what the Claude Code history
    alone prints (the shape tests/test_usage_reports_ccusage.py holds to ccusage's
    ``claude`` reports), and a history of Claude Code alone keeps that shape by default."""
    claude_only = [str(home / ".claude/projects")]
    for report in (*ACROSS, "blocks"):
        alone = run(home, report, "--json", where=claude_only)
        assert run(home, report, "--json", "--agent", "claude") == alone
        assert "metadata" not in json.loads(alone)  # not the all-agents shape


def test_weekly_of_an_agent_without_its_own_is_the_all_agents_shape(home: Path) -> None:
    """ccusage has no ``codex weekly``: one agent's weekly takes the all-agents shape, with
    that agent alone, weeks starting on Monday as ccusage's all-agents weekly does."""
    mine = ours(home, "weekly", "--agent", "codex")
    (line,) = mine["weekly"]
    assert line["metadata"] == {"agents": ["codex"]} and line["agent"] == "all"
    assert datetime.fromisoformat(line["period"]).weekday() == 0
    sunday = ours(home, "weekly", "--agent", "codex", "--start-of-week", "sunday")
    assert datetime.fromisoformat(sunday["weekly"][0]["period"]).weekday() == 6


def test_tables_name_the_agents_within_80_columns(home: Path) -> None:
    for report in ("daily", "session"):
        text = run(home, report, "--compact", "--no-color")
        assert "Every agent's usage" in text and "Agent" in text
        assert all(len(line) <= 80 for line in text.splitlines()), report
        assert "codex" in text and "opencode" in text
    codex = run(home, "daily", "--agent", "codex", "--no-color")
    assert "Codex usage, daily" in codex and "Agent" not in codex
    claude = run(home, "daily", "--agent", "claude", "--no-color")
    assert "Claude Code usage, daily" in claude and "Agent" not in claude


def test_quick_path_prints_the_same_and_leaves_agent_to_click(home: Path) -> None:
    """``REPORT --json PATH...`` runs without click with the same rows (every agent's);
    ``--agent`` is never taken there."""
    options = usage_args(["daily", "--json", *paths(home)])
    assert options is not None and options.agent is None
    assert usage_args(["daily", "--json", "--agent", "codex", *paths(home)]) is None


@pytest.mark.parametrize("report", (*ACROSS, "blocks"))
def test_the_history_index_gives_the_same_bytes(home: Path, report: str) -> None:
    first = run(home, report, "--json", "--agent", "all")
    assert run(home, report, "--json", "--agent", "all") == first  # answered by the index
    assert run(home, report, "--json", "--agent", "all", "--no-index") == first


def test_instances_keep_each_project_of_every_agent(home: Path) -> None:
    projects = ours(home, "daily", "--instances")["projects"]
    agents = ours(home, "daily")["daily"]
    assert set(projects) == {"spotter", "claude-code-viewer", "work"}
    assert sum(line["totalTokens"] for lines in projects.values() for line in lines) == sum(
        line["totalTokens"] for line in agents
    )


def test_opencode_databases_of_every_channel_are_read(tmp_path: Path) -> None:
    """Pinned: with ``opencode.db`` and a channel's ``opencode-dev.db`` side by side,
    ccusage 20.0.24 reads only the first; cachediag reads both (docs/agents-opencode.md),
    the second's sessions as ccusage reads that database alone."""
    home = add_channel(build_home(tmp_path / "home"))
    theirs = recorded("opencode_channels")["sessions"]
    alone = json.loads((DATA / "ccusage20_opencode_anthropic.json").read_text())["sessions"]
    mine = ours(home, "session", "--agent", "opencode")["sessions"]
    assert (home / ".local/share/opencode" / CHANNEL_DB).is_file()
    assert sorted(s["sessionId"] for s in mine) == sorted(s["sessionId"] for s in [*theirs, *alone])
    by_id = {s["sessionId"]: s for s in mine}
    for s in alone:  # Anthropic's form: no reasoning, so every figure is ccusage's
        assert differences(by_id[s["sessionId"]], s) == []


def test_codex_rollout_of_token_counts_only_equals_ccusage(tmp_path: Path) -> None:
    """Older Codex rollouts have no ``token_usage_record``: each request's reasoning and
    time come from its ``token_count`` (ccusage 20.0.24 on the same file, recorded)."""
    (source,) = sorted((DATA / "codex_home_changes/sessions").rglob("rollout-*.jsonl"))
    target = tmp_path / "sessions" / source.relative_to(DATA / "codex_home_changes/sessions")
    target.parent.mkdir(parents=True)
    kept = [ln for ln in source.read_text().splitlines() if '"token_usage_record"' not in ln]
    target.write_text("\n".join(kept) + "\n")
    theirs = json.loads((DATA / "ccusage20_codex_token_count_only.json").read_text())
    mine = json.loads(run(tmp_path, "session", "--json", "--agent", "codex", where=[str(tmp_path)]))
    assert theirs["sessions"][0]["reasoningOutputTokens"] > 0
    assert differences(mine, theirs) == []


@pytest.mark.parametrize(
    "extra", [(), ("--agent", "codex"), ("--agent", "claude"), ("--no-index",)]
)
def test_no_path_reads_every_agents_home(home: Path, extra: tuple[str, ...]) -> None:
    """With no path, each agent's home under ``HOME`` is read: the same report as the
    homes named (``--agent`` keeps one agent's)."""
    for report in ("daily", "session"):
        named = run(home, report, "--json", *extra)
        assert run(home, report, "--json", *extra, where=[]) == named
        assert json.loads(named)  # not an empty report
