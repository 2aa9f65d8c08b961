"""Status-line mistakes are visible when testing by hand (issue 17): the reason for a
fallback on stderr at a terminal, ``--check`` as a diagnostic; never any noise for
Claude Code, which pipes stdin and stderr."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cachediag.statusline import fast, refresh, state
from tests.conftest import ROOT
from tests.statusline_support import T0, THREE, cache_home, write

pytestmark = pytest.mark.usefixtures(cache_home.__name__)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_at(payload: Any, *args: str, stderr: io.StringIO | None = None) -> tuple[int, str, str]:
    """One run in process; ``stderr`` a ``Terminal`` to play a person at a terminal."""
    out, err = io.StringIO(), stderr if stderr is not None else io.StringIO()
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    code = fast.run(list(args), io.BytesIO(raw), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("stdin", "args", "reason"),
    [
        (b'{"transcript_path": "/nope/s.jsonl"}', (), "transcript_path is not a file (no such"),
        (b"{not json", (), "stdin is not JSON"),
        (b"", (), "stdin is empty"),
        (b"[1]", (), "stdin is a JSON list, not an object"),
        (b'{"session_id": "x"}', (), "stdin has neither transcript_path nor prompt_cache"),
        (b'{"transcript_path": 5}', (), "transcript_path is not a usable path string"),
    ],
)
def test_the_reason_for_a_fallback_goes_to_a_terminal_only(
    stdin: bytes, args: tuple[str, ...], reason: str
) -> None:
    code, out, err = run_at(stdin, "--no-color", *args, stderr=Terminal())
    assert (code, out) == (0, "cache ?\n")
    assert err.startswith("cachediag statusline: ") and reason in err
    # Piped, as Claude Code runs it: the same line, nothing on stderr.
    assert run_at(stdin, "--no-color", *args) == (0, "cache ?\n", "")


def test_a_good_run_at_a_terminal_says_nothing_on_stderr(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    code, out, err = run_at({"transcript_path": str(t)}, "--no-color", stderr=Terminal())
    assert code == 0 and out.startswith("m-1 · cache 32%") and err == ""


def test_an_unusable_cache_folder_is_named_at_a_terminal(tmp_path: Path, cache_home: Path) -> None:
    cache_home.mkdir(parents=True)
    cache_home.chmod(0o777)  # writable by others: not used, the line is computed anyway
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    code, out, err = run_at({"transcript_path": str(t)}, "--no-color", stderr=Terminal())
    assert code == 0 and out.startswith("m-1 · cache 32%")
    assert "state folder not used" in err


def test_check_reports_what_it_read_and_exits_0(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    payload = {"transcript_path": str(t), "session_id": "s1", "version": "2.1.39"}
    code, out, err = run_at(payload, "--check", "--no-color", "--now", str(T0 + 1100))
    assert (code, err) == (0, "")
    rows = dict(line.split(None, 1) for line in out.splitlines() if not line.startswith(" "))
    assert rows["stdin"].endswith("a JSON object (session_id, transcript_path, Claude Code 2.1.39)")
    assert rows["transcript"].startswith(f"{t}: read (")
    saved = state.state_path(str(t), str(cache_home))
    assert rows["state"] == f"{saved}: read from byte 0; saved"
    # (the fixture prices nothing: the report says so, the line leaves the cost out)
    assert rows["numbers"] == "from the transcript, 3 requests, 1 miss, no price for m-1"
    assert rows["line"] == "m-1 · cache 32% · warm 3:20 · 1 miss · last: ttl_expired_5m"
    assert rows["result"] == "ok"
    # The next run finds it unchanged.
    again = run_at(payload, "--check", "--no-color", "--now", str(T0 + 1100))[1]
    assert f"{saved}: unchanged since the last run; nothing to save" in again


@pytest.mark.parametrize(
    ("stdin", "problem"),
    [
        (b'{"transcript_path": "/nope/s.jsonl"}', "transcript_path is not a file (no such file)"),
        (b"garbage", "stdin is not JSON"),
    ],
)
def test_check_exits_1_and_lists_the_problems(stdin: bytes, problem: str) -> None:
    code, out, err = run_at(stdin, "--check")
    assert code == 1 and err == ""
    assert "line        cache ?" in out
    assert "result      1 problem:" in out and f"  - {problem}" in out


def test_check_names_an_unreadable_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreadable(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(13, "Permission denied")  # chmod 0 does not stop root (CI)

    monkeypatch.setattr(refresh, "session_state", unreadable)
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    code, out, _ = run_at({"transcript_path": str(t)}, "--check")
    assert code == 1
    assert f"transcript  {t}: unreadable" in out
    assert "transcript not read: PermissionError" in out


def test_check_names_a_bad_format_field() -> None:
    code, out, _ = run_at(b"{}", "--check", "--format", "{hit} {bogus}")
    assert code == 1 and "  - --format: unknown field {bogus} (fields: {hit} " in out


def _console(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", "from cachediag.entry import main; main()", "statusline"]
    return subprocess.run([*cmd, *args], env=env, capture_output=True, timeout=60, **kwargs)


def test_check_at_a_terminal_does_not_wait_for_stdin() -> None:
    """``--check`` typed at a prompt: nothing is piped, so nothing is read (no hang)."""
    leader, follower = pty.openpty()
    try:
        done = _console("--check", stdin=follower)
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 1
    assert b"stdin       a terminal: nothing read" in done.stdout


def test_console_check_exit_status_and_piped_silence(tmp_path: Path) -> None:
    bad = json.dumps({"transcript_path": str(tmp_path / "gone.jsonl")}).encode()
    checked = _console("--check", input=bad)
    assert checked.returncode == 1 and b"no such file" in checked.stdout
    piped = _console(input=bad)  # how Claude Code runs it: exit 0, one line, no stderr
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, b"cache ?\n", b"")


def test_run_at_a_terminal_says_what_it_waits_for() -> None:
    """Typed at a prompt without a pipe: a hint on stderr, then the object typed in."""
    leader, follower = pty.openpty()
    try:
        os.write(leader, b'{"prompt_cache": {"hit_ratio": 0.5}}\n\x04')
        done = _console("--no-color", stdin=follower)
    finally:
        os.close(leader)
        os.close(follower)
    assert (done.returncode, done.stdout) == (0, b"cache 50%\n")
    assert b"reading Claude Code's JSON from stdin (end it with Ctrl-D)" in done.stderr
