"""``watch`` on other agents' files (the recorded homes of tests/data): a Codex rollout
appended line by line, opencode's database changed in place, Gemini CLI's chats; each
read again whole on a change and counted by its provider's ledger."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.follow.agent_files import AgentFiles
from cachediag.follow.source import run
from cachediag.pricing import price_function
from cachediag.report.watch_view import start_line
from tests.watch_support import Recorder, ScriptedSource, Step, analyze_requests, per_stream

DATA = Path(__file__).parent / "data"
PRICES = price_function(None)
DEBOUNCE_S = 0.02
"""``WatchdogSource``'s quiet time: lines written closer together are read together."""


def follow(recorder: Recorder, steps: list[Step]) -> None:
    # Reads are never held back for their spacing here: each step is read as it comes.
    recorder.follower.others.monotonic = lambda: 0.0
    stop = threading.Event()
    run(recorder.follower, ScriptedSource(steps, stop), stop)


def rollout_copy(tmp_path: Path, home: str = "codex_home_changes") -> tuple[Path, list[bytes]]:
    (src,) = (DATA / home).rglob("rollout-*.jsonl")
    folder = tmp_path / "sessions" / "2026" / "12" / "02"
    folder.mkdir(parents=True)
    return folder / src.name, src.read_bytes().splitlines(keepends=True)


def written_together(lines: list[bytes]) -> list[list[bytes]]:
    """The lines in the bursts the watch reads them in: each within the debounce of the
    one before (by the rollout's own timestamps)."""
    bursts: list[list[bytes]] = []
    last = None
    for raw in lines:
        at = datetime.fromisoformat(json.loads(raw)["timestamp"]).timestamp()
        if last is None or at - last >= DEBOUNCE_S:
            bursts.append([])
        bursts[-1].append(raw)
        last = at
    return bursts


def appending(path: Path, *chunks: bytes) -> list[Step]:
    def step(chunk: bytes) -> Step:
        def write() -> list[Path]:
            with path.open("ab") as fp:
                fp.write(chunk)
            return [path]

        return write

    return [step(c) for c in chunks]


def test_codex_rollout_appended_line_by_line_reports_what_analyze_finds(tmp_path: Path) -> None:
    path, lines = rollout_copy(tmp_path)
    path.write_bytes(b"".join(lines[:26]))  # two turns done: read quietly at the start
    recorder = Recorder(tmp_path, price_of=PRICES)
    chunks = [b"".join(burst) for burst in written_together(lines[26:])]
    # One line half written when the watch reads: it waits for the rest.
    half = len(chunks[0]) // 2
    follow(recorder, appending(path, chunks[0][:half], chunks[0][half:], *chunks[1:]))
    finished = analyze_requests(path)
    expected = {"main": finished["main"][2:], "compaction": finished["compaction"]}
    assert per_stream(recorder.dicts("request")) == per_stream(
        {**r, "stream": s} for s, rs in expected.items() for r in rs
    )
    # The first new request was judged against the quiet ones: a miss, not a cold start.
    first = recorder.dicts("request")[0]
    assert (first["index"], first["outcome"], first["causes"]) == (2, "miss", ["effort_changed"])
    kinds = [d["event"] for d in recorder.dicts()]
    assert kinds[0] == "session" and "rebuild" in kinds and "stream" in kinds
    assert recorder.follower.all_issues() == []
    (tally,) = recorder.follower.summaries()
    assert tally.session.agent == "codex" and tally.requests == 9


def test_codex_strictly_line_by_line_reports_each_request_once(tmp_path: Path) -> None:
    """Read between the compaction call's response and the ``compacted`` line naming it
    (5 ms apart in the recording), the call is main's; it is not reported again."""
    path, lines = rollout_copy(tmp_path)
    path.write_bytes(b"".join(lines[:26]))
    recorder = Recorder(tmp_path, price_of=PRICES)
    follow(recorder, appending(path, *lines[26:]))
    ids = [d["message_id"] for d in recorder.dicts("request")]
    assert len(ids) == len(set(ids)) == 9


def test_a_rollout_created_during_the_watch_is_a_new_session(tmp_path: Path) -> None:
    path, lines = rollout_copy(tmp_path, "codex_home_pause")
    recorder = Recorder(tmp_path, price_of=PRICES)
    follow(recorder, appending(path, *lines))
    sessions = recorder.dicts("session")
    assert [(d["session_id"][:8], d["new"]) for d in sessions] == [("01a2351e", True)]
    requests = recorder.dicts("request")
    assert [d["outcome"] for d in requests] == ["cold", "hit", "miss"]
    assert requests[2]["causes"] == ["ttl_expired_5m"]


def trimmed_database(tmp_path: Path) -> tuple[Path, Path, float]:
    """A copy of opencode's recorded database in WAL mode, without the rows written after
    its longest pause; the original, and that moment (Unix seconds)."""
    original = DATA / "opencode_home_changes" / "opencode" / "opencode.db"
    folder = tmp_path / "opencode"
    folder.mkdir()
    db = folder / "opencode.db"
    shutil.copyfile(original, db)
    with sqlite3.connect(db) as conn:
        times = [t for (t,) in conn.execute("SELECT time_created FROM part ORDER BY 1")]
        gap, cut = max((b - a, (a + b) // 2) for a, b in pairwise(times))
        assert gap > 30_000  # the scenario's pause
        conn.execute("PRAGMA journal_mode=WAL")
        for table in ("part", "message"):
            conn.execute(f"DELETE FROM {table} WHERE time_created > ?", (cut,))
    return db, original, cut / 1000


def test_opencode_database_changed_in_place(tmp_path: Path) -> None:
    db, original, cut = trimmed_database(tmp_path)
    recorder = Recorder(tmp_path, price_of=PRICES)
    writer = sqlite3.connect(db)  # opencode keeps its connection open

    def agent_writes() -> list[Path]:
        writer.execute("ATTACH DATABASE ? AS full", (f"file:{original}?mode=ro",))
        for table in ("message", "part"):
            writer.execute(
                f"INSERT INTO {table} SELECT * FROM full.{table} WHERE id NOT IN "
                f"(SELECT id FROM main.{table})"
            )
        writer.commit()
        return [Path(f"{db}-wal")]  # the write-ahead log is what changed

    try:
        follow(recorder, [agent_writes])
    finally:
        writer.close()
    finished = analyze_requests(db)
    expected = [r for r in finished["main"] if r["at"] > cut]
    assert len(expected) == 2
    assert per_stream(recorder.dicts("request")) == per_stream(expected)
    # After the pause, judged against the request before it (read quietly at the start).
    assert [d["outcome"] for d in recorder.dicts("request")] == ["miss", "hit"]
    assert recorder.dicts("session")[0]["transcript"] == str(db)


def test_gemini_chats_once_equal_analyze(tmp_path: Path) -> None:
    home = tmp_path / "gemini_home"
    shutil.copytree(DATA / "gemini_home", home)
    recorder = Recorder(home, from_start=True, price_of=PRICES)
    follow(recorder, [])
    (chat, *_) = sorted(home.rglob("session-*.jsonl"))
    finished = analyze_requests(chat)
    assert per_stream(recorder.dicts("request")) == per_stream(finished["main"])
    # Three files, one session: each request once.
    assert len(recorder.follower.summaries()) == 1


def test_spacing_holds_a_read_back_until_due(tmp_path: Path) -> None:
    path, lines = rollout_copy(tmp_path)
    path.write_bytes(b"".join(lines[:26]))
    recorder = Recorder(tmp_path, from_start=True)
    now = [0.0]
    others: AgentFiles = recorder.follower.others

    def monotonic() -> float:
        now[0] += 1.0  # each look at the clock: a read takes one second
        return now[0]

    others.monotonic = monotonic
    recorder.follower.start()
    assert len(recorder.requests()) == 2
    # The first read loads the reader and the ledger: it sets no spacing.
    with path.open("ab") as fp:
        fp.write(b"".join(lines[26:33]))
    recorder.follower.changed([str(path)])
    assert len(recorder.requests()) == 3 and not others.waiting
    path.write_bytes(b"".join(lines))
    recorder.follower.changed([str(path)])
    assert len(recorder.requests()) == 3 and others.waiting  # nine seconds not yet gone
    now[0] += 9
    recorder.follower.changed([])
    assert len(recorder.requests()) == 11 and not others.waiting


def test_start_line_names_the_agents() -> None:
    line = start_line(["/h"], {"claude": 2, "codex": 1, "opencode": 1})
    assert line.startswith(
        "cachediag: watching 3 sessions (claude 2, codex 1) and 1 opencode database under /h "
    )
    assert start_line(["/h"], {"gemini": 1}).startswith("cachediag: watching 1 gemini session ")


def watch_cli(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, ["watch", *args], env=env)


def test_agent_option_and_default_homes(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    shutil.copytree(DATA / "codex_home_pause", codex)
    env = {"HOME": str(tmp_path / "nobody"), "CODEX_HOME": str(codex)}
    env |= {"CLAUDE_CONFIG_DIR": str(tmp_path / "no-claude"), "XDG_DATA_HOME": str(tmp_path)}
    result = watch_cli("--once", "--json", env=env)
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events].count("request") == 3
    assert {e["transcript"] for e in events} == {str(next(codex.rglob("rollout-*.jsonl")))}
    # Asked for another agent's sessions: the rollout is left alone.
    only_gemini = watch_cli("--once", "--json", "--agent", "gemini", str(codex), env=env)
    assert only_gemini.exit_code == 0 and only_gemini.stdout == ""
    named = watch_cli("--once", "--agent", "claude", str(next(codex.rglob("rollout-*"))))
    assert named.exit_code == 1 and "a codex session file" in named.output


@pytest.mark.parametrize("home", ["opencode_home_anthropic", "codex_home_changes"])
def test_people_lines_name_the_agent_and_causes(tmp_path: Path, home: str) -> None:
    result = watch_cli("--once", "--misses-only", str(DATA / home))
    assert result.exit_code == 0, result.output
    assert "MISS" in result.stdout and "model_changed" in result.stdout
    # Claude Code's advice (a line of its own: "-> ...") is not given for other agents.
    assert "\n         -> " not in result.stdout


def test_written_between_finding_and_the_first_read_is_new(tmp_path: Path) -> None:
    """A transcript is read up to the size it had when found; a whole rollout cannot be:
    written to meanwhile, what is older than the moment it was found stays quiet."""
    path, lines = rollout_copy(tmp_path)
    path.write_bytes(b"".join(lines[:26]))
    recorder = Recorder(tmp_path, price_of=PRICES)
    found_at = datetime.fromisoformat(json.loads(lines[25])["timestamp"]).timestamp()
    recorder.follower.clock = lambda: found_at  # the watch started then

    def agent_writes(counts: dict[str, int]) -> None:
        assert counts == {"codex": 1}
        with path.open("ab") as fp:
            fp.write(b"".join(lines[26:]))

    recorder.follower.on_found = agent_writes  # between finding and reading
    recorder.follower.start()
    finished = analyze_requests(path)
    assert [d["message_id"] for d in recorder.dicts("request") if d["stream"] == "main"] == [
        r["message_id"] for r in finished["main"][2:]
    ]


def test_once_a_named_file_that_is_not_the_agents_log_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "rollout-bad.jsonl"
    bad.write_text("garbage\n")
    db = tmp_path / "opencode.db"
    db.write_text("not sqlite")
    result = watch_cli("--once", "--json", str(bad), str(db), str(DATA / "codex_home_pause"))
    assert result.exit_code == 1
    assert f"{bad}: not a codex session log (line 1:" in result.stderr
    assert f"{db}: not an opencode session log" in result.stderr
    # The rest is still reported.
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events].count("request") == 3


@pytest.mark.parametrize(("written_s_ago", "reads"), [(0.0, 3), (5.0, 1)])
def test_the_same_look_soon_after_a_write_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written_s_ago: float, reads: int
) -> None:
    """A write-ahead log written over in place keeps its size, and its times tick
    coarsely: looked at just after a write, an unchanged look proves nothing."""
    import time

    import cachediag.follow.agent_files as agent_files
    import cachediag.ingest.agents as agents

    path, lines = rollout_copy(tmp_path)
    path.write_bytes(b"".join(lines))
    mtime_ns = int((time.time() - written_s_ago) * 1e9)
    monkeypatch.setattr(agent_files, "signature", lambda p: ((1, 2, mtime_ns, mtime_ns),))
    real, done = agents.read_logs, []

    def read_logs(agent: str, p: Path) -> Any:
        done.append(p)
        return real(agent, p)

    monkeypatch.setattr(agents, "read_logs", read_logs)
    recorder = Recorder(tmp_path)
    follow(recorder, [lambda: [path], lambda: [path]])
    assert len(done) == reads  # the start's read, then each change's unless settled
