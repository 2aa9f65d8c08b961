"""``daily|weekly|monthly|session|blocks --json`` against ccusage 20.0.24's own output.

ccusage's outputs were recorded by ``scripts/record_ccusage.py`` (``-z UTC``, offline,
calculated costs) on the bundled fixtures and the shared corpus: the tests need neither
ccusage nor the network. For every report: the same keys (``promptCache`` is ours) and
JSON types, equal token counts and entries, costs equal to the cent.

ccusage's ``daily`` alone also counts the responses a parent transcript echoes in its
``agent_progress`` lines (a subagent's, when its own transcript is not there); its
session, weekly, monthly and block reports do not, nor does cachediag (docs/usage.md).
``test_ccusage_daily_counts_progress_echoes`` pins that difference to those lines.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import CORPUS, FIXTURES, ROOT

DATA = ROOT / "tests" / "data"
REPORTS = ("daily", "weekly", "monthly", "session", "blocks")
TREES = {
    "fixtures": [FIXTURES / "real" / "spotter", FIXTURES / "real" / "claude-code-viewer"],
    "corpus": [CORPUS / "claude-code" / "spotter", CORPUS / "claude-code" / "claude-code-viewer"],
}
LATER = datetime(2027, 6, 1, tzinfo=UTC).timestamp()
"""A clock past every request: no block is active (as when ccusage was recorded)."""
COST_KEYS = {"totalCost", "cost", "costUSD"}
CENT = 0.005


def recorded(report: str, tree: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"ccusage20_{report}_{tree}.json").read_text())
    assert data["ccusage_version"].endswith("20.0.24")
    out: dict[str, Any] = data["output"]
    return out


def ours(report: str, paths: list[Path], *extra: str) -> dict[str, Any]:
    args = [report, *map(str, paths), "-z", "UTC", "--json", "--now", str(LATER), *extra]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def tree_paths(tree: str) -> list[Path]:
    paths = TREES[tree]
    if not all(p.is_dir() for p in paths):
        pytest.skip(f"{tree} not present")
    return paths


def same_shape(mine: Any, theirs: Any, where: str, diffs: list[str]) -> None:
    """Keys, types, tokens (exact) and costs (to the cent) alike; ``promptCache`` ours."""
    if isinstance(theirs, dict):
        assert isinstance(mine, dict), where
        assert set(mine) - {"promptCache"} == set(theirs), where
        for key, value in theirs.items():
            if key in COST_KEYS and isinstance(value, int | float):
                assert isinstance(mine[key], int | float), f"{where}.{key}"
                if abs(mine[key] - value) >= CENT:
                    diffs.append(f"{where}.{key}: {mine[key]} != {value}")
            else:
                same_shape(mine[key], value, f"{where}.{key}", diffs)
    elif isinstance(theirs, list):
        assert isinstance(mine, list) and len(mine) == len(theirs), where
        for i, (m, t) in enumerate(zip(mine, theirs, strict=True)):
            same_shape(m, t, f"{where}[{i}]", diffs)
    elif isinstance(theirs, bool) or theirs is None or isinstance(theirs, str):
        assert mine == theirs, f"{where}: {mine!r} != {theirs!r}"
    elif isinstance(theirs, float) and where.split(".")[-1] in {"tokensPerMinute"}:
        assert mine == pytest.approx(theirs), where
    else:
        assert isinstance(mine, int | float) and not isinstance(mine, bool), where
        assert mine == theirs, f"{where}: {mine!r} != {theirs!r}"


def progress_echoes(paths: list[Path]) -> dict[str, list[int]]:
    """By UTC day: the four token counts of responses seen only in ``agent_progress``
    lines (each ``message.id:requestId`` once), as ccusage's daily adds them."""
    top: set[tuple[Any, Any]] = set()
    echoed: dict[tuple[Any, Any], tuple[str, list[int]]] = {}
    for path in sorted(p for root in paths for p in root.rglob("*.jsonl")):
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if not isinstance(line, dict):
                continue
            message = line.get("message")
            if isinstance(message, dict) and "usage" in message:
                top.add((message.get("id"), line.get("requestId")))
                continue
            data = line.get("data")
            if line.get("type") != "progress" or not isinstance(data, dict):
                continue
            outer = data.get("message")
            inner = outer.get("message") if isinstance(outer, dict) else None
            if not isinstance(inner, dict) or not isinstance(inner.get("usage"), dict):
                continue
            assert isinstance(outer, dict)
            u = inner["usage"]
            counts = [
                u.get("input_tokens", 0),
                u.get("output_tokens", 0),
                u.get("cache_creation_input_tokens", 0),
                u.get("cache_read_input_tokens", 0),
            ]
            echoed.setdefault(
                (inner.get("id"), outer.get("requestId")), (line["timestamp"][:10], counts)
            )
    by_day: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for key, (day, counts) in echoed.items():
        if key not in top:
            by_day[day] = [a + b for a, b in zip(by_day[day], counts, strict=True)]
    return dict(by_day)


TOKEN_KEYS = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")


@pytest.mark.parametrize("tree", sorted(TREES))
@pytest.mark.parametrize("report", ["weekly", "monthly", "session", "blocks"])
def test_report_equals_ccusage(report: str, tree: str) -> None:
    mine = ours(report, tree_paths(tree))
    diffs: list[str] = []
    same_shape(mine, recorded(report, tree), report, diffs)
    assert diffs == []


@pytest.mark.parametrize("tree", sorted(TREES))
def test_daily_equals_ccusage_but_for_progress_echoes(tree: str) -> None:
    paths = tree_paths(tree)
    mine, theirs = ours("daily", paths), recorded("daily", tree)
    echoes = progress_echoes(paths)
    assert [d["date"] for d in mine["daily"]] == [d["date"] for d in theirs["daily"]]
    for m, t in zip(mine["daily"], theirs["daily"], strict=True):
        extra = echoes.get(t["date"], [0, 0, 0, 0])
        assert [m[k] + e for k, e in zip(TOKEN_KEYS, extra, strict=True)] == [
            t[k] for k in TOKEN_KEYS
        ]
        if not any(extra):
            diffs: list[str] = []
            same_shape(m, t, t["date"], diffs)
            assert diffs == []


def test_ccusage_daily_counts_progress_echoes(corpus: Path) -> None:
    """ccusage's daily total is not its session total on the corpus: the difference is
    exactly the responses echoed in agent_progress lines, on the day they came."""
    daily, session = recorded("daily", "corpus"), recorded("session", "corpus")
    echoes = progress_echoes(TREES["corpus"])
    assert echoes, "the corpus holds agent_progress echoes"
    extra = [sum(v[i] for v in echoes.values()) for i in range(4)]
    gap = [daily["totals"][k] - session["totals"][k] for k in TOKEN_KEYS]
    assert gap == extra and any(gap)
    # cachediag's daily total is its session total, and ccusage's session total.
    mine_daily, mine_session = ours("daily", TREES["corpus"]), ours("session", TREES["corpus"])
    for k in TOKEN_KEYS:
        assert mine_daily["totals"][k] == mine_session["totals"][k] == session["totals"][k]


VARIANTS = {
    "daily_instances": ["daily", "-i"],
    "daily_window": ["daily", "-s", "20260211", "-u", "20260212", "-o", "desc"],
    "weekly_monday": ["weekly", "-w", "monday"],
    "session_window": ["session", "--since", "2026-02-11", "--until", "20260211"],
    "blocks_window": ["blocks", "-s", "20260212", "-n", "2"],
    "daily_project": ["daily", "--project", "claude-code-viewer"],
    "session_breakdown": ["session", "-b", "-i", "ae4a77f8-aedd-4bc1-888f-c94edc91af04"],
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_options_equal_ccusage(name: str, corpus: Path) -> None:
    """ccusage's options, short flags and date forms give ccusage's answers (the
    corpus's agent_progress echoes fall on 2026-02-10, outside these windows and
    projects; daily -i is compared on its project without them)."""
    report, *args = VARIANTS[name]
    mine, theirs = ours(report, TREES["corpus"], *args), recorded(name, "corpus")
    if name == "daily_instances":
        mine, theirs = (
            mine["projects"]["claude-code-viewer"],
            theirs["projects"]["claude-code-viewer"],
        )
    if name == "session_breakdown":
        # ccusage writes each entry's costUSD from the log (none there: 0); ours is priced.
        assert {e["costUSD"] for e in theirs["entries"]} == {0}
        assert sum(e["costUSD"] for e in mine["entries"]) == pytest.approx(theirs["totalCost"])
        for entry in (*mine["entries"], *theirs["entries"]):
            entry.pop("costUSD")
    diffs: list[str] = []
    same_shape(mine, theirs, name, diffs)
    assert diffs == []


ACTIVE = DATA / "ccusage20_active"


def active_recording() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "ccusage20_blocks_active.json").read_text())
    return data


@pytest.mark.parametrize(("label", "extra"), [("plain", []), ("limit", ["-t", "10000"])])
def test_active_block_equals_ccusage(label: str, extra: list[str]) -> None:
    """Burn rate, projection and the token limit's status, at the clock ccusage ran at."""
    rec = active_recording()
    args = ["blocks", str(ACTIVE), "-z", "UTC", "--json", "--active", "--now", str(rec["now"])]
    result = CliRunner().invoke(main, [*args, *extra], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    diffs: list[str] = []
    same_shape(json.loads(result.stdout), rec["outputs"][label], label, diffs)
    assert diffs == []


def test_days_in_another_zone_equal_ccusage(corpus: Path) -> None:
    """-z Asia/Tokyo moves the corpus's evening requests to the next day, as in ccusage
    (2026-02-10's echoes fall on Tokyo's 2026-02-11: that day is compared by tokens
    less the echoes, the others field for field)."""
    args = ["daily", *map(str, TREES["corpus"]), "-z", "Asia/Tokyo", "--json"]
    mine = json.loads(CliRunner().invoke(main, args, catch_exceptions=False).stdout)
    theirs = recorded("daily_tokyo", "corpus")
    assert [d["date"] for d in mine["daily"]] == [d["date"] for d in theirs["daily"]]
    assert "2026-02-13" in [d["date"] for d in mine["daily"]]
    extra = [sum(v[i] for v in progress_echoes(TREES["corpus"]).values()) for i in range(4)]
    for m, t in zip(mine["daily"], theirs["daily"], strict=True):
        if m["inputTokens"] == t["inputTokens"]:
            diffs: list[str] = []
            same_shape(m, t, t["date"], diffs)
            assert diffs == []
        else:
            assert [m[k] + e for k, e in zip(TOKEN_KEYS, extra, strict=True)] == [
                t[k] for k in TOKEN_KEYS
            ]


def test_unknown_session_id_is_null_as_in_ccusage(corpus: Path) -> None:
    args = ["session", *map(str, TREES["corpus"]), "-j", "--id", "no-such-session"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0 and result.stdout.strip() == "null"


@pytest.mark.parametrize("mode", ["auto", "calculate", "display"])
def test_cost_modes_equal_ccusage(mode: str) -> None:
    """Older transcripts carry their own costUSD: -m auto takes it where a line has
    one, calculate never, display only (as ccusage's --mode)."""
    data = json.loads((DATA / "ccusage20_modes.json").read_text())
    theirs = data["outputs"][mode]
    args = ["daily", str(DATA / "ccusage20_modes"), "-z", "UTC", "-j", "-m", mode]
    mine = json.loads(CliRunner().invoke(main, args, catch_exceptions=False).stdout)
    diffs: list[str] = []
    same_shape(mine, theirs, mode, diffs)
    assert diffs == []
    assert (
        len({json.dumps(data["outputs"][m]["totals"]["totalCost"]) for m in data["outputs"]}) == 3
    )


def ccusage_counts(path: Path) -> tuple[int, int]:
    """(entries, input tokens) by ccusage 20's rules, as measured on ccusage20_edges:
    a line without ``message.id`` is not read; one without ``requestId`` is never
    deduplicated; a sidechain replay under another request id counts again; an API
    error's synthetic message is an entry (of no tokens)."""
    seen: set[tuple[str, str]] = set()
    entries = tokens = 0
    for text in path.read_text().splitlines():
        line = json.loads(text)
        message = line["message"]
        if "id" not in message:
            continue
        key = (message["id"], line.get("requestId"))
        if key[1] is not None and key in seen:
            continue
        seen.add(key)
        entries += 1
        tokens += message["usage"]["input_tokens"]
    return entries, tokens


def test_lines_ccusage_counts_otherwise_are_pinned() -> None:
    """Where ccusage counts a response twice or not at all, cachediag counts it once
    (docs/usage.md): both sides are pinned on a transcript of those lines."""
    tree = DATA / "ccusage20_edges"
    data = json.loads((DATA / "ccusage20_edges.json").read_text())
    (block,) = data["outputs"]["blocks"]["blocks"]
    assert (block["entries"], block["tokenCounts"]["inputTokens"]) == ccusage_counts(
        tree / "projects" / "edge" / "e1.jsonl"
    )
    mine = json.loads(
        CliRunner().invoke(main, ["blocks", str(tree), "-j", "--now", str(LATER)]).stdout
    )
    (ours_block,) = mine["blocks"]
    # m1 once (its sidechain replay is the same response), the line without a message id,
    # m5 once (two lines of one response), m7; the API error is not a request.
    assert (ours_block["entries"], ours_block["tokenCounts"]["inputTokens"]) == (4, 300)
    assert ours_block["models"] == block["models"] == ["claude-sonnet-4-20250514"]


def test_copied_history_equals_ccusage_but_for_the_folder_named(
    corpus: Path, tmp_path: Path
) -> None:
    """The corpus copied into several project folders of two config dirs, with a backup
    of older prefixes (tests/history_tree.py): each response counted once, sessions
    equal to ccusage's. A session found in several folders is named by ccusage after
    the folder whose path sorts first, by cachediag after the one it was read from
    first (the oldest copy): both are folders holding it."""
    from tests.history_tree import build_history

    dirs = build_history(tmp_path, corpus / "claude-code")
    theirs = json.loads((DATA / "ccusage_sessions_dedup_corpus.json").read_text())["sessions"]
    args = ["session", *(str(d / "projects") for d in dirs), "-j", "-z", "UTC", "-m", "calculate"]
    mine = json.loads(CliRunner().invoke(main, args, catch_exceptions=False).stdout)["sessions"]
    assert len(mine) == len(theirs)
    for m, t in zip(mine, theirs, strict=True):
        holders = sorted(
            str(p.relative_to(d / "projects")).split("/")[0]
            for d in dirs
            for p in (d / "projects").rglob(f"{t['sessionId']}*")
        )
        assert t["projectPath"] in holders and m["projectPath"] in holders
        m["projectPath"] = t["projectPath"]
        diffs: list[str] = []
        same_shape(m, t, t["sessionId"], diffs)
        assert diffs == []
