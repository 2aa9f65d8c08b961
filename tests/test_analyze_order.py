"""``analyze`` with several sessions: oldest first in the tables and in JSON, one totals line.

The three real spotter sessions are copied into one project folder with modification
times in the opposite order of their start times, so the order they are read in (oldest
file first) is the reverse of the order they must be shown in.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import REAL

SPOTTER = REAL / "spotter"
# Started 2026-02-10 21:11, 2026-02-10 22:57 and 2026-02-12 16:02.
NAMES = ["short.jsonl", "tool_heavy.jsonl", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "projects" / "-home-me-spotter"
    folder.mkdir(parents=True)
    for i, name in enumerate(NAMES):
        shutil.copy(SPOTTER / name, folder / name)
        # The session that started last has the oldest file: it is read first.
        os.utime(folder / name, (1_000_000 - i * 1000, 1_000_000 - i * 1000))
    shutil.copytree(
        SPOTTER / NAMES[2].removesuffix(".jsonl"), folder / "4d5611e5-241a-462a-8d15-5122611a9569"
    )
    return folder


def run(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--now", "0"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    return result.stdout


def started(session: dict[str, Any]) -> float:
    streams = [session.get("requests") or []] + [
        s.get("requests") or [] for s in session["streams"]
    ]
    return min(r["at"] for requests in streams for r in requests)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_json_lines_come_oldest_first_like_the_tables(project: Path, jobs: str) -> None:
    lines = run("analyze", "--requests", "--jobs", jobs, str(project)).splitlines()
    sessions = [json.loads(line) for line in lines]
    assert len(sessions) == 3
    times = [started(s) for s in sessions]
    assert times == sorted(times)
    table = run("analyze", "--jobs", jobs, str(project))
    shown = re.findall(r"^Session (\S+)", table, re.M)
    assert shown == [s["session_id"] for s in sessions]
    # Read order is the reverse: the order above is not the order of reading.
    assert shown[-1] == "4d5611e5-241a-462a-8d15-5122611a9569"


def test_jq_sees_the_same_order(project: Path) -> None:
    plain = [
        json.loads(line)["session_id"]
        for line in run("analyze", "--json", str(project)).splitlines()
    ]
    with_jq = run("analyze", "--jq", ".session_id", str(project)).splitlines()
    assert with_jq == plain and len(plain) == 3


def test_one_totals_line_adds_up_the_sessions(project: Path) -> None:
    sessions = [json.loads(line) for line in run("analyze", "--json", str(project)).splitlines()]
    requests = sum(s["totals"]["requests"] for s in sessions)
    misses = sum(
        s["prompt_cache"]["misses"] + sum(t["prompt_cache"]["misses"] for t in s["streams"])
        for s in sessions
    )
    table = run("analyze", str(project))
    totals = [line for line in table.splitlines() if line.startswith("Total:")]
    assert len(totals) == 1
    assert totals[0].startswith(
        f"Total: 3 sessions · {requests:,} requests (all streams) · {misses:,} miss"
    )
    # It comes last, after every session's report.
    assert table.index("Total:") > table.rindex("Prompt cache (")


def test_a_single_session_has_no_totals_line() -> None:
    assert "Total:" not in run("analyze", str(SPOTTER / NAMES[0]))
