"""Every view fits 80 and 120 columns without cutting a number, a date or a cause in two.

Each human view is rendered on the bundled corpus samples and captures at both widths;
the same run's JSON names the atoms that must each stay whole on one line (tokens
re-processed, causes, times, costs), and no line may pass the width.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import FIXTURES


def main_logs(folder: Path) -> list[Path]:
    """The logs below ``folder`` that are not a subagent's own file."""
    return sorted(
        p
        for p in folder.rglob("*.jsonl")
        if "subagents" not in p.parts and not p.name.startswith("agent-")
    )


WIDTHS = [80, 120]
LOGS = [
    p
    for folder in ("real", "captures", "rules", "providers", "usage")
    for p in main_logs(FIXTURES / folder)
]
FOLDERS = [FIXTURES / f for f in ("real", "captures", "rules", "providers")]
BY = ["session", "project", "day", "week", "month", "gap", "model", "cause", "stream-kind"]


def run(width: int, *args: str) -> Any:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": str(width), "NO_COLOR": "1"})


def json_run(*args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S")


def check(text: str, width: int, atoms: set[str]) -> None:
    lines = text.splitlines()
    long = [line for line in lines if len(line) > width]
    assert not long, f"{len(long)} line(s) wider than {width}: {long[:3]}"
    split = sorted(a for a in atoms if a and not any(a in line for line in lines))
    assert not split, f"cut across lines or missing: {split[:10]}"


def request_atoms(records: list[dict[str, Any]], expected: str) -> set[str]:
    """``expected``: how the view names an announced rebuild (``expected ({kind})``), one
    cause in two words that must not be cut between them either."""
    atoms: set[str] = set()
    for r in records:
        if r["outcome"] in ("miss", "expected"):
            atoms |= {f"{r['reprocessed_tokens']:,}", clock(r["at"]), *r["causes"]}
        if r["outcome"] == "expected":
            atoms.add(expected.format(kind=r["announced"] or "rebuild"))
    return atoms


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("log", LOGS, ids=[str(p.relative_to(FIXTURES)) for p in LOGS])
def test_analyze_and_explain_fit(log: Path, width: int) -> None:
    check_analyze_and_explain(log, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_whole_corpus_fits(corpus: Path, width: int) -> None:
    """Every shared corpus log too (more sessions than are bundled; skipped without it)."""
    logs = main_logs(corpus)
    assert len(logs) > len([p for p in LOGS if "real" in p.parts])
    for log in logs:
        check_analyze_and_explain(log, width)


def check_analyze_and_explain(log: Path, width: int) -> None:
    sessions = json_run("analyze", "--requests", "--now", "0", str(log))
    result = run(width, "analyze", "--now", "0", str(log))
    assert result.exit_code == 0, result.output
    atoms: set[str] = set()
    for s in sessions:
        atoms |= request_atoms(s["requests"], "expected ({kind})")
        atoms |= set(s["prompt_cache"]["miss_causes"])
    check(result.stdout, width, atoms)

    if len(sessions) != 1:
        return
    explained = run(width, "explain", str(log))
    assert explained.exit_code == 0, explained.output
    if explained.stdout.startswith("no miss or rebuild"):
        return
    (ex,) = json_run("explain", "--json", str(log))
    when = datetime.fromtimestamp(ex["request"]["at"], UTC).strftime("%Y-%m-%d %H:%M:%S")
    check(explained.stdout, width, {when, *ex["request"]["causes"]})


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("by", BY)
@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_audit_fits(folder: Path, by: str, width: int) -> None:
    (report,) = json_run("audit", "--json", "--no-progress", "--by", by, str(folder))
    atoms = {f"{g['requests']:,}" for g in report["groups"]}
    atoms |= {f"${g['cost_usd']:,.2f}" for g in report["groups"]}
    if by == "cause":
        atoms |= {c for g in report["groups"] for c in g["key"].split("+")}
    for m in report["top_misses"]:
        atoms |= {f"{m['reprocessed_tokens']:,}", *m["causes"]}
    for tokens in ([], ["--tokens"]):
        result = run(width, "audit", "--no-progress", "--by", by, *tokens, str(folder))
        assert result.exit_code == 0, result.output
        check(result.stdout, width, atoms)


SPOTTER = FIXTURES / "real" / "spotter"
TRANSCRIPTS = [SPOTTER, FIXTURES / "real" / "claude-code-viewer", FIXTURES / "rules"]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.name for p in TRANSCRIPTS])
def test_watch_lines_fit(path: Path, width: int) -> None:
    events = json_run("watch", "--once", "--json", str(path))
    requests = [e for e in events if e["event"] == "request"]
    atoms = request_atoms(requests, "after {kind}") | {clock(e["at"]) for e in requests}
    atoms |= {
        f"{e['cache_read_tokens']:,} read"
        for e in requests
        if e["outcome"] not in ("miss", "expected")
    }
    result = run(width, "watch", "--once", str(path))
    assert result.exit_code == 0, result.output
    check(result.stdout, width, atoms)


@pytest.mark.parametrize("width", WIDTHS)
def test_warm_fits(width: int) -> None:
    # 21:06 UTC on the day of the spotter session: its 5-minute cache is still warm.
    result = run(width, "warm", "--now", "1770930400", str(SPOTTER))
    assert result.exit_code == 0, result.output
    assert "4d5611e5" in result.stdout
    check(result.stdout, width, {"4d5611e5", "106,060", "1:54"})
