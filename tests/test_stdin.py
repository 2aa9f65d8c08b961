"""stdin as users meet it: a log piped in, a pipe nobody writes to, an empty pipe (cron).

These run the command in a subprocess: what matters is a real pipe's file descriptor.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REAL, ROOT

TOOL_HEAVY = REAL / "spotter" / "tool_heavy.jsonl"
SPOTTER_IDS = ["short", "tool_heavy", "4d5611e5-241a-462a-8d15-5122611a9569"]
"""The spotter sessions of the history in time order (analyze's order)."""


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "cachediag", *args]


def env(config_dir: Path | None = None) -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "COLUMNS": "80"}
    if config_dir is not None:
        out["CLAUDE_CONFIG_DIR"] = str(config_dir)
    return out


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """A Claude Code config dir whose projects tree holds the spotter sessions."""
    shutil.copytree(REAL / "spotter", tmp_path / "projects" / "-home-me-spotter")
    return tmp_path


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["analyze", "--jq", ".session_id"], "d6e0bada-1959-4eec-a9d2-0bfade768d8f\n"),
        (["audit", "--jq", ".sessions"], "1\n"),
        (["audit", "--jq", ".totals.requests"], "4\n"),
        (["explain", "--jq", ".request.index"], "2\n"),
        (["report", "--output", "-"], None),
    ],
)
def test_a_piped_log_is_read_by_every_command(
    history: Path, args: list[str], expected: str | None
) -> None:
    # The history holds 3 sessions: what comes out is the piped one alone.
    result = subprocess.run(
        command(*args),
        input=TOOL_HEAVY.read_bytes(),
        capture_output=True,
        env=env(history),
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    if expected is None:
        assert b"d6e0bada" in result.stdout and b"4d5611e5" not in result.stdout
    else:
        assert result.stdout.decode() == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["analyze", "--jq", ".session_id"], "".join(f"{s}\n" for s in SPOTTER_IDS)),
        (["audit", "--jq", ".sessions"], "3\n"),
        (["explain", "--jq", ".request.index"], "137\n"),
    ],
)
def test_an_empty_pipe_means_the_history(history: Path, args: list[str], expected: str) -> None:
    result = subprocess.run(
        command(*args), input=b"", capture_output=True, env=env(history), timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == expected
    assert b"waiting for a log" not in result.stderr


@pytest.mark.parametrize("blank", [b"\n", b"  \n\n\t\n"])
def test_a_pipe_of_blank_lines_means_the_history(history: Path, blank: bytes) -> None:
    # ``echo '' | cachediag analyze`` sends a newline and no log.
    result = subprocess.run(
        command("audit", "--jq", ".sessions"),
        input=blank,
        capture_output=True,
        env=env(history),
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, b"3\n"), result.stderr


@pytest.mark.parametrize("content", [b"", b"\n\n"])
def test_an_empty_or_blank_redirected_file_means_the_history(
    history: Path, tmp_path: Path, content: bytes
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(content)
    with empty.open("rb") as stdin:
        result = subprocess.run(
            command("audit", "--jq", ".sessions"),
            stdin=stdin,
            capture_output=True,
            env=env(history),
            timeout=120,
            check=False,
        )
    assert result.stdout == b"3\n", result.stderr


@pytest.mark.parametrize(
    ("name", "piped"),
    [
        ("analyze", b'"session_id":"d6e0bada'),
        ("audit", b'"sessions":1,'),
        ("explain", b'"source":"-"'),
    ],
)
def test_a_silent_pipe_gets_a_hint_and_is_still_read(
    history: Path, name: str, piped: bytes
) -> None:
    proc = subprocess.Popen(
        command(name, "--json"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(history),
    )
    assert proc.stdin is not None and proc.stderr is not None
    try:
        # Nothing written yet: the hint must come on its own, after about a second.
        started = time.monotonic()
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        assert ready, "no hint on stderr"
        hint = proc.stderr.readline().decode()
        waited = time.monotonic() - started
        assert hint.startswith("cachediag: waiting for a log on stdin")
        assert f"cachediag {name} ~/.claude/projects" in hint
        assert waited >= 0.9
        assert proc.poll() is None, "the command must keep waiting"
        out, err = proc.communicate(TOOL_HEAVY.read_bytes(), timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    # What came down the pipe, not the history's sessions.
    assert piped in out
    assert b"4d5611e5" not in out
