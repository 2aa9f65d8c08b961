"""``watch`` edges (issue 28): the start line comes before the history is read, and a
session that appears during the watch is named by its project's path, as every other
command names it (the transcripts' ``cwd``), not by the folder Claude Code keeps it in."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cachediag.cli import main
from cachediag.follow.events import SessionSeen
from cachediag.follow.live_session import LiveSession
from cachediag.follow.source import Interrupted, run
from tests.conftest import ROOT
from tests.statusline_support import T0, THREE, assistant, write
from tests.watch_support import Recorder, ScriptedSource

NEW_PATH = "/home/user/newproj"


def with_cwd(line: str, cwd: str = NEW_PATH, session: str = "n1") -> str:
    """A transcript line as Claude Code writes it: every line names where it ran."""
    obj = json.loads(line)
    obj.update(cwd=cwd, sessionId=session)
    return json.dumps(obj)


def user_line(cwd: str = NEW_PATH, session: str = "n1") -> str:
    return json.dumps(
        {
            "type": "user",
            "uuid": "q1",
            "sessionId": session,
            "cwd": cwd,
            "timestamp": "2026-02-02T02:40:00Z",
            "message": {"role": "user", "content": "SECRET-PROMPT-TEXT"},
        }
    )


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """A projects tree with one session (lines without a cwd: named by its folder)."""
    root = tmp_path / "projects"
    (root / "-home-me-app").mkdir(parents=True)
    write(root / "-home-me-app" / "s1.jsonl", THREE[:2])
    return root


@pytest.mark.parametrize("request_too", [True, False], ids=["with-request", "prompt-only"])
def test_new_session_is_named_by_its_project_path(projects: Path, request_too: bool) -> None:
    new = projects / "-home-user-newproj" / "n1.jsonl"
    recorder = Recorder(projects)

    def appears() -> list[Path]:
        new.parent.mkdir()
        lines = [user_line()] + ([with_cwd(THREE[0])] if request_too else [])
        write(new, lines)
        return [new.parent]

    stop = threading.Event()
    run(recorder.follower, ScriptedSource([appears], stop), stop)
    headers = [e for e in recorder.events if isinstance(e, SessionSeen)]
    assert [(h.session.session_id, h.new, h.session.project) for h in headers] == [
        ("n1", True, NEW_PATH)
    ]
    if request_too:
        assert [d["project"] for d in recorder.dicts("request")] == [NEW_PATH]
    assert [t.session.project for t in recorder.follower.summaries()] == [NEW_PATH]


def test_a_summary_follows_the_name_its_session_learns_later(projects: Path) -> None:
    """Shown by its folder while no line named a path (a file removed before it had a
    line), then a line with a cwd: the summary says the path, as the events do."""
    t = projects / "-home-me-app" / "s1.jsonl"
    recorder = Recorder(projects)

    def removed() -> list[Path]:
        t.unlink()
        return [t]

    def back() -> list[Path]:
        write(t, [with_cwd(THREE[2], "/home/me/app", "s1")])
        return [t]

    stop = threading.Event()
    run(recorder.follower, ScriptedSource([removed, back], stop), stop)
    assert [d["event"] for d in recorder.dicts()][:2] == ["session", "removed"]
    assert recorder.dicts("session")[0]["project"] == "-home-me-app"
    assert [d["project"] for d in recorder.dicts("request")] == ["/home/me/app"]
    assert [s.session.project for s in recorder.follower.summaries()] == ["/home/me/app"]


def test_start_line_is_said_before_the_history_is_read(
    projects: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A large recent history takes seconds to read quietly; the user is told first."""
    said_before_read: list[str] = []
    real_read = LiveSession.read

    def read(self: LiveSession, path: str, *args: Any, **kwargs: Any) -> bool:
        said_before_read.append(capsys.readouterr().err)
        return real_read(self, path, *args, **kwargs)

    monkeypatch.setattr(LiveSession, "read", read)
    monkeypatch.setattr("cachediag.follow.source.WatchdogSource", StopAtOnce)
    main.main(["watch", "--json", str(projects)], standalone_mode=False)
    start = (
        f"cachediag: watching 1 claude session under {projects} for new requests; "
        "Ctrl-C stops with a summary\n"
    )
    assert said_before_read[:1] == [start]  # the session was read (it is recent), after


class StopAtOnce:
    """A change source whose first wait is interrupted, as Ctrl-C interrupts one."""

    def open(self, folders: list[str]) -> None:
        pass

    def wait(self, timeout_s: float) -> set[str]:
        raise Interrupted

    def close(self) -> None:
        pass


def read_line(proc: subprocess.Popen[str], timeout_s: float = 20.0) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    line = proc.stdout.readline()
    assert line and time.monotonic() < deadline, "nothing within the timeout"
    return line


def test_live_watch_start_line_first_then_a_new_project_by_path(
    projects: Path, tmp_path: Path
) -> None:
    """As users run it (stdout and stderr on one terminal): the start line before the
    events of --from-start, then a session created meanwhile, named by its path."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "c")}
    cmd = [sys.executable, "-m", "cachediag", "watch", "--json", "--from-start", str(projects)]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert read_line(proc).startswith("cachediag: watching 1 claude session under ")
        first = [json.loads(read_line(proc)) for _ in range(3)]
        assert [(e["event"], e["project"]) for e in first] == [
            ("session", "-home-me-app"),
            ("request", "-home-me-app"),
            ("request", "-home-me-app"),
        ]
        new = projects / "-home-user-newproj" / "n1.jsonl"
        new.parent.mkdir()
        write(new, [user_line(), with_cwd(assistant(9, T0, inp=10, read=0, write=3000))])
        events = [json.loads(read_line(proc)) for _ in range(2)]
        assert [(e["event"], e["session_id"], e["project"]) for e in events] == [
            ("session", "n1", NEW_PATH),
            ("request", "n1", NEW_PATH),
        ]
        assert events[0]["new"] is True
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    summaries = [json.loads(line) for line in out.splitlines()]
    assert [(s["session_id"], s["project"]) for s in summaries] == [
        ("s1", "-home-me-app"),
        ("n1", NEW_PATH),
    ]
