"""Issue 28's edges of ``audit`` and of the gaps every table prints: a repeated ``--by``
is refused (click and the quick path alike), idle gaps past 48 h are shown in days."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag import quick_audit
from cachediag.cli import main
from cachediag.report.tables import format_duration
from tests.conftest import REAL, ROOT, SPOTTER_SESSION

REPEATED_BY = ["--by", "day", "--by", "model"]


@pytest.mark.parametrize("output", [[], ["--json"], ["--csv"], ["--jq", ".by"], ["--sql"]])
def test_a_repeated_by_is_a_usage_error(output: list[str]) -> None:
    result = CliRunner().invoke(main, ["audit", "--no-progress", *output, *REPEATED_BY, str(REAL)])
    assert result.exit_code == 2, result.output
    assert "an audit takes one --by" in result.output
    assert "day, model" in result.output  # both named: the user sees which were given
    assert "Traceback" not in result.output


def test_one_by_still_groups_by_it() -> None:
    result = CliRunner().invoke(
        main, ["audit", "--no-progress", "--json", "--by", "day", str(REAL)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["by"] == "day"
    default = CliRunner().invoke(main, ["audit", "--no-progress", "--json", str(REAL)])
    assert json.loads(default.output)["by"] == "project"


def test_the_quick_path_leaves_a_repeated_by_to_click() -> None:
    assert quick_audit.audit_args(["--json", "a", "--by", "day", "--by", "model"]) is None
    assert quick_audit.audit_args(["--json", "a", "--by", "day", "--by", "day"]) is None
    taken = quick_audit.audit_args(["--json", "a", "--by", "day"])
    assert taken is not None and taken.by == "day"


def test_the_quick_path_exits_as_click_does_on_a_repeated_by() -> None:
    """Through the entry point (``--json`` with paths is the quick path's)."""
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "cachediag", "audit", "--json", *REPEATED_BY, str(REAL)],
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"an audit takes one --by" in done.stderr


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, "-"),
        (42, "42s"),
        (245, "4m05s"),
        (4 * 3600 + 11 * 60, "4h11m"),
        (47 * 3600 + 59 * 60 + 29, "47h59m"),
        (48 * 3600, "2d00h"),
        (12 * 86400 + 4 * 3600 + 59 * 60, "12d04h"),
        (7008 * 3600 + 17 * 60, "292d00h"),
    ],
)
def test_durations_past_48_hours_are_in_days(seconds: float | None, shown: str) -> None:
    assert format_duration(seconds) == shown


def _paused(tmp_path: Path, days: int) -> Path:
    """The spotter session with its 4h11m pause (16:08 to 20:19) made ``days`` longer."""
    cut = datetime.fromisoformat("2026-02-12T20:00:00+00:00")
    lines = []
    for line in SPOTTER_SESSION.read_text().splitlines():
        record = json.loads(line)
        at = record.get("timestamp")
        if at and datetime.fromisoformat(at.replace("Z", "+00:00")) > cut:
            moved = datetime.fromisoformat(at.replace("Z", "+00:00")) + timedelta(days=days)
            record["timestamp"] = moved.isoformat().replace("+00:00", "Z")
        lines.append(json.dumps(record))
    project = tmp_path / "-home-user-spotter"
    project.mkdir()
    path = project / SPOTTER_SESSION.name
    path.write_text("\n".join(lines) + "\n")
    return path


PAUSED_MISS = "msg_017XK9f9QmMmR4ChjwJ3qdKh"
"""The response after the spotter session's 4h11m pause."""


@pytest.mark.parametrize(
    "command",
    [["analyze"], ["audit", "--no-progress"], ["explain", "--message-id", PAUSED_MISS]],
)
def test_a_pause_of_months_prints_in_days(tmp_path: Path, command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, str(_paused(tmp_path, 292))])
    assert result.exit_code == 0, result.output
    assert "292d04h" in result.output  # 292 days and the pause's own 4h11m
    assert "7012h" not in result.output


def test_the_progress_total_is_known_before_any_session_is_read() -> None:
    """``sessions 0/?`` no more: the bar has its total when the sessions are found."""
    from cachediag.model import SessionLog
    from cachediag.pipeline_audit import AuditOptions, run_audit

    read = 0
    calls: list[tuple[str, int, int]] = []

    def enrich(log: SessionLog) -> SessionLog:  # runs on each session as it is read
        nonlocal read
        read += 1
        return log

    run = run_audit(
        [REAL],
        AuditOptions(),
        on_start=lambda total: calls.append(("start", total, read)),
        on_done=lambda: calls.append(("done", 0, read)),
        workers=1,
        enrich=enrich,
    )
    assert run.sessions_read > 1
    assert calls[0] == ("start", len(calls) - 1, 0)  # the count, before any read
    assert [kind for kind, _, _ in calls[1:]] == ["done"] * (len(calls) - 1)
