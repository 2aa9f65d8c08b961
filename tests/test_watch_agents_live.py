"""``watch`` on other agents' files as users run it: the OS's file events (opencode's
write-ahead log standing for its database), the JSON contract, removals."""

from __future__ import annotations

import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import jsonschema
import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.follow.layout import watched_file
from cachediag.follow.source import run
from cachediag.report.watch_contract import WatchEvent, watch_schema
from tests.conftest import ROOT
from tests.test_watch_agents import DATA, rollout_copy, trimmed_database
from tests.watch_support import Recorder, ScriptedSource, analyze_requests


def test_journal_changes_stand_for_the_database() -> None:
    assert watched_file("/d/opencode/opencode.db-wal") == "/d/opencode/opencode.db"
    assert watched_file("/d/opencode/opencode-beta.db-journal") == "/d/opencode/opencode-beta.db"
    assert watched_file("/d/opencode/opencode.db-shm") is None  # shared memory, no data
    assert watched_file("/d/other.db-wal") is None
    assert (
        watched_file("/h/.codex/sessions/rollout-x.jsonl") == "/h/.codex/sessions/rollout-x.jsonl"
    )


@pytest.mark.parametrize("home", ["codex_home_changes", "gemini_home", "opencode_home_compact"])
def test_json_events_follow_the_schema(home: str) -> None:
    result = CliRunner().invoke(main, ["watch", "--once", "--json", str(DATA / home)])
    assert result.exit_code == 0, result.output
    validator = jsonschema.Draft202012Validator(watch_schema())
    kinds = set()
    for line in result.stdout.splitlines():
        event = json.loads(line)
        validator.validate(event)
        WatchEvent.model_validate(event)
        kinds.add(event["event"])
    assert {"session", "request", "summary"} <= kinds


def test_a_deleted_rollout_is_a_removal(tmp_path: Path) -> None:
    path, lines = rollout_copy(tmp_path)
    path.write_bytes(b"".join(lines))
    recorder = Recorder(tmp_path)

    def delete() -> list[Path]:
        path.unlink()
        return [path]

    stop = threading.Event()
    run(recorder.follower, ScriptedSource([delete], stop), stop)
    assert [d["event"] for d in recorder.dicts()] == ["session", "removed"]
    assert recorder.dicts("removed")[0]["path"] == str(path)


class Lines:
    """A pipe's lines as they come, each waited for at most ``timeout_s`` (a thread
    reads the pipe: ``select`` cannot see lines already in the reader's buffer)."""

    def __init__(self, pipe: IO[str]) -> None:
        self.queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(pipe,), daemon=True).start()

    def _pump(self, pipe: IO[str]) -> None:
        for line in pipe:
            self.queue.put(line)

    def next(self, timeout_s: float = 20.0) -> str:
        try:
            return self.queue.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"nothing within {timeout_s}s") from None

    def event(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.next())
        return loaded


def test_live_watch_sees_opencode_commit_through_its_wal(tmp_path: Path) -> None:
    db, original, cut = trimmed_database(tmp_path)
    before = len(analyze_requests(db)["main"])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "c")}
    # --from-start: the events of what the database holds say that it was read; what
    # is committed after them is new.
    cmd = [sys.executable, "-m", "cachediag", "watch", "--json", "--from-start", str(db.parent)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = sqlite3.connect(db)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        out, err = Lines(proc.stdout), Lines(proc.stderr)
        assert err.next().startswith("cachediag: watching 1 opencode database under ")
        held = [out.event() for _ in range(1 + before)]
        assert [e["event"] for e in held] == ["session"] + ["request"] * before
        writer.execute("ATTACH DATABASE ? AS full", (f"file:{original}?mode=ro",))
        for table in ("message", "part"):
            writer.execute(
                f"INSERT INTO {table} SELECT * FROM full.{table} WHERE id NOT IN "
                f"(SELECT id FROM main.{table})"
            )
        writer.commit()  # the connection stays open: the commit is in opencode.db-wal only
        assert os.path.getsize(f"{db}-wal") > 0
        events = [out.event() for _ in range(2)]
        assert [(e["event"], e["outcome"]) for e in events] == [
            ("request", "miss"),
            ("request", "hit"),
        ]
        assert all(e["at"] > cut for e in events)
        assert all(e["at"] < cut for e in held[1:])
        proc.send_signal(signal.SIGTERM)
        assert json.loads(out.next())["event"] == "summary"
        assert proc.wait(timeout=20) == 0
    finally:
        writer.close()
        proc.kill()
