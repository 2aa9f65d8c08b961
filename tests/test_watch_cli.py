"""``cachediag watch`` as users run it: options, output, schema, signals."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from cachediag.cli import main
from cachediag.report.watch_contract import WatchEvent
from tests.conftest import ROOT, RULES, SPOTTER_SESSION
from tests.statusline_support import T0, THREE, assistant, write

PRICES = {
    "source": "test prices",
    "models": {
        "m-1": {
            "input_mtok": 5,
            "cache_write_5m_mtok": 6.25,
            "cache_write_1h_mtok": 10,
            "cache_read_mtok": 0.5,
            "output_mtok": 25,
        }
    },
}


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, Path]:
    """A project folder with THREE (cold, hit, miss) and a price file for its model."""
    project = tmp_path / "projects" / "-home-me-app"
    project.mkdir(parents=True)
    write(project / "s1.jsonl", THREE)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    return project / "s1.jsonl", prices


def watch(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["watch", *args], env=env)


def schema() -> dict[str, Any]:
    result = watch("--schema")
    assert result.exit_code == 0
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


@pytest.mark.parametrize("path", [SPOTTER_SESSION, RULES], ids=["spotter", "rules"])
def test_json_events_follow_the_schema(path: Path) -> None:
    result = watch("--once", "--json", str(path))
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    validator = jsonschema.Draft202012Validator(schema())
    kinds = set()
    for event in events:
        validator.validate(event)
        WatchEvent.model_validate(event)
        kinds.add(event["event"])
    assert {"session", "request", "summary"} <= kinds
    if path == SPOTTER_SESSION:
        assert {"stream", "rebuild"} <= kinds


def test_schema_rejects_an_unknown_event_or_field() -> None:
    validator = jsonschema.Draft202012Validator(schema())
    base = {
        "at": 1.0, "session_id": "s", "project": None, "transcript": "/t.jsonl", "agent": "claude"
    }  # fmt: skip
    validator.validate({**base, "event": "removed", "path": "/t.jsonl"})
    for bad in (
        {**base, "event": "gone", "path": "/t.jsonl"},
        {**base, "event": "removed", "path": "/t.jsonl", "agent": "amp"},
        {**base, "event": "removed", "path": "/t.jsonl", "extra": 1},
        {**base, "event": "removed"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(bad)


def test_once_json_summary_worked_by_hand(session: tuple[Path, Path]) -> None:
    t, prices = session
    result = watch("--once", "--json", "--pricing", str(prices), str(t.parent))
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events] == ["session", "request", "request", "request", "summary"]
    miss, summary = events[3], events[4]
    # The miss re-processed 20510 tokens, written at $6.25/M instead of read at $0.50/M.
    assert miss["outcome"] == "miss" and miss["miss_cost_usd"] == pytest.approx(20510 * 5.75e-6)
    assert (summary["session_id"], summary["project"]) == ("s1", "-home-me-app")
    assert summary["requests"] == 3
    assert summary["outcomes"] == {"cold": 1, "hit": 1, "miss": 1}
    # reads / all input: 20000 / (20000 reads + 41500 writes + 30 uncached).
    assert summary["hit_ratio"] == pytest.approx(20000 / 61530)
    assert summary["reprocessed_tokens"] == 20510
    assert summary["miss_cost_usd"] == pytest.approx(0.1179325, abs=1e-6)
    assert summary["miss_causes"] == {"ttl_expired_5m": 1}
    assert summary["streams"] == ["main"]


def test_lines_for_people(session: tuple[Path, Path]) -> None:
    t, prices = session
    # At 120 columns each event is one line (test_widths covers 80).
    result = watch("--once", "--pricing", str(prices), str(t), env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    hms = [datetime.fromtimestamp(T0 + s, UTC).strftime("%H:%M:%S") for s in (0, 60, 1000)]
    assert lines[:4] == [
        "── session s1 · -home-me-app",
        f"{hms[0]} s1       main             cold     0 read · 20,000 written",
        f"{hms[1]} s1       main             hit      20,000 read · 500 written",
        # 940 s idle is 15m40s; 20510 * $5.75/M = $0.118.
        f"{hms[2]} s1       main             MISS     ttl_expired_5m (idle 15m40s) · "
        "20,510 re-processed · re-cache cost $0.12",
    ]
    assert lines[-2:] == [
        "Watched sessions",
        "s1 (-home-me-app): 3 requests · 33% from cache · 1 miss (ttl_expired_5m: 1) · "
        "20,510 re-processed · re-cache cost $0.12",
    ]


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--misses-only"], True),
        (["--min-cost", "0.1"], True),  # the miss cost $0.118
        (["--min-cost", "0.2"], False),
    ],
)
def test_alerts(session: tuple[Path, Path], args: list[str], shown: bool) -> None:
    t, prices = session
    result = watch("--once", "--json", "--bell", "--pricing", str(prices), *args, str(t))
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    expected = (["request"] if shown else []) + ["summary"]
    assert [e["event"] for e in events] == expected
    assert result.stderr == ("\a" if shown else "")
    assert events[-1]["requests"] == 3  # the summary still covers every request


def test_unknown_price_is_not_zero(session: tuple[Path, Path]) -> None:
    t, _ = session
    result = watch("--once", str(t))
    assert "price unknown" in result.stdout
    # --min-cost still shows a miss whose price is unknown.
    result = watch("--once", "--json", "--min-cost", "5", str(t))
    assert [json.loads(line)["event"] for line in result.stdout.splitlines()] == [
        "request",
        "summary",
    ]


def test_default_is_the_claude_projects_tree(session: tuple[Path, Path], tmp_path: Path) -> None:
    result = watch("--once", "--json", env={"CLAUDE_CONFIG_DIR": str(tmp_path)})
    assert result.exit_code == 0, result.output
    transcripts = {json.loads(line)["transcript"] for line in result.stdout.splitlines()}
    assert transcripts == {str(session[0])}


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    result = watch("--once", str(tmp_path / "nope"))
    assert result.exit_code == 1
    assert result.stderr == f"Error: {tmp_path / 'nope'}: no such file or directory\n"
    assert result.stdout == ""


def test_skipped_lines_reported_on_stderr(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, [THREE[0], '{"type": "assistant", "message": {"id": "m"}}'])
    result = watch("--once", "--json", str(t))
    assert result.exit_code == 0
    assert result.stderr == (
        f"cachediag: skipped 1 line(s): {t}:2: assistant message without usage\n"
    )


def read_event(proc: subprocess.Popen[str], timeout_s: float = 20) -> dict[str, Any]:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    line = proc.stdout.readline()
    assert line, f"no event within {timeout_s}s"
    assert time.monotonic() < deadline
    loaded: dict[str, Any] = json.loads(line)
    return loaded


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["SIGTERM", "SIGINT", "SIGHUP"]
)
def test_signal_ends_with_a_summary_and_exit_0(tmp_path: Path, sig: signal.Signals) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "c")}
    cmd = [sys.executable, "-m", "cachediag", "watch", "--json", "--from-start", str(tmp_path)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert [read_event(proc)["event"] for _ in range(3)] == ["session", "request", "request"]
        write(t, [assistant(3, T0 + 1000, inp=10, read=0, write=21000)], "a")
        miss = read_event(proc)
        assert (miss["event"], miss["outcome"]) == ("request", "miss")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert (summary["event"], summary["requests"]) == ("summary", 3)
    # One line at the start: what is followed and how to stop.
    assert err == (
        f"cachediag: watching 1 claude session under {tmp_path} for new requests; "
        "Ctrl-C stops with a summary\n"
    )


def test_watchdog_only_when_following_and_rich_only_for_people(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "c")}
    code = (
        "import sys; import cachediag.follow.source, cachediag.follow.follower; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'watchdog', 'click', 'rich', 'pydantic'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    cmd = [sys.executable, "-X", "importtime", "-m", "cachediag", "watch", "--once", "--json"]
    done = subprocess.run([*cmd, str(t)], env=env, capture_output=True, text=True, check=True)
    loaded = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()}
    assert "cachediag" in loaded
    # (pydantic may come with genai-prices, looking up the price of a model not yet cached.)
    assert not loaded & {"watchdog", "rich"}


def test_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "c")}
    cmd = [sys.executable, "-m", "cachediag", "watch", "--once", "--json", str(SPOTTER_SESSION)]
    # Like `cachediag watch --json | head -1`: the reader goes away after one line.
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline())["event"] == "session"
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert err == b""


def test_unusable_price_file_is_an_error_before_watching(session: tuple[Path, Path]) -> None:
    t, prices = session
    prices.write_text('{"models": 5}')
    result = watch("--once", "--pricing", str(prices), str(t))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {prices}: ")
    assert result.stdout == ""


def _start_watch(tmp_path: Path, root: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "c")}
    cmd = [sys.executable, "-m", "cachediag", "watch", "--json", "--from-start", str(root)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_root_deleted_and_recreated_is_followed_again(tmp_path: Path) -> None:
    """Finding 6: the watch says the folder went, and re-attaches when it is back."""
    root = tmp_path / "proj"
    root.mkdir()
    write(root / "s1.jsonl", THREE[:1])
    proc = _start_watch(tmp_path, root)
    try:
        assert [read_event(proc)["event"] for _ in range(2)] == ["session", "request"]
        shutil.rmtree(root)
        assert read_event(proc)["event"] == "removed"
        time.sleep(0.6)  # the loop notices between two looks at its stop event
        root.mkdir()
        time.sleep(0.6)
        write(root / "s2.jsonl", [assistant(7, T0, inp=10, read=0, write=3000)])
        events = [read_event(proc) for _ in range(2)]
        assert [(e["event"], e["session_id"]) for e in events] == [
            ("session", "s2"),
            ("request", "s2"),
        ]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert f"{root} was removed; waiting for it to come back" in err
    assert f"{root} is back; following it again" in err


def test_fifo_moved_over_a_transcript_does_not_block(tmp_path: Path) -> None:
    """Finding 6: a FIFO in a followed transcript's place is a removal, never an open()
    that blocks (SIGTERM still ends the watch with its summary)."""
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    proc = _start_watch(tmp_path, tmp_path)
    try:
        assert [read_event(proc)["event"] for _ in range(3)] == ["session", "request", "request"]
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        os.replace(fifo, t)
        assert read_event(proc)["event"] == "removed"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0 and json.loads(out)["event"] == "summary"
    assert "Traceback" not in err
