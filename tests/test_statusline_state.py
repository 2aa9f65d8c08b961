"""The status line's state file: incremental reads, damage, concurrency, cancellation."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cachediag.pricing.slots import DayPrices
from cachediag.statusline import prices, state
from tests.conftest import ROOT
from tests.statusline_support import (
    T0,
    THREE,
    assistant,
    cache_home,
    requests_seen,
    run_line,
    state_of,
    write,
)

pytestmark = pytest.mark.usefixtures(cache_home.__name__)


def test_state_file_private_and_without_prompt_text(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    run_line({"transcript_path": str(t)})
    files = list((cache_home / "statusline").glob("*.json"))
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(files[0].parent.stat().st_mode) == 0o700
    assert b"SECRET-PROMPT-TEXT" not in files[0].read_bytes()


def test_half_written_line_waits_for_its_newline(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    assert requests_seen(t) == 2
    half = len(THREE[2]) // 2
    with t.open("a") as fp:
        fp.write(THREE[2][:half])
    assert requests_seen(t) == 2
    assert state_of(t, cache_home)["files"][str(t)]["offset"] == len(THREE[0]) + len(THREE[1]) + 2
    with t.open("a") as fp:
        fp.write(THREE[2][half:] + "\n")
    assert requests_seen(t) == 3


def test_truncation_and_replacement_restart(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    assert requests_seen(t) == 3
    write(t, THREE[:1])  # truncated in place
    assert requests_seen(t) == 1
    other = tmp_path / "other.jsonl"
    write(other, [assistant(7, T0, inp=1, read=0, write=3000)] * 1 + THREE[1:])
    os.replace(other, t)  # a new inode, longer than before
    obj = json.loads(run_line({"transcript_path": str(t)}, "--json"))
    assert obj["prompt_cache"]["requests"] == 3
    # Same size, same inode, different bytes before the offset: the tail hash sees it.
    data = t.read_bytes().replace(b"msg_2", b"msg_9")
    t.write_bytes(data)
    assert requests_seen(t) == 3


def test_corrupt_state_is_recomputed(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    run_line({"transcript_path": str(t)})
    path = Path(state.state_path(str(t), str(cache_home)))
    for garbage in (b"{not json", b'{"version": 1, "transcript": 3}\n[', b"\x00\xff", b""):
        path.write_bytes(garbage)
        assert requests_seen(t) == 3


def test_unwritable_cache_dir_still_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file: no dir can be made in it
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    assert run_line({"transcript_path": str(t)}, "--no-color", "--now", str(T0)).startswith(
        "m-1 · cache 32%"
    )


def test_two_status_lines_at_once(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache_home.parent)}
    stdin = json.dumps({"transcript_path": str(t)}).encode()
    cmd = [sys.executable, "-m", "cachediag", "statusline", "--no-color", "--now", str(T0)]
    for extra in (None, [assistant(4, T0 + 1010, inp=10, read=21000, write=10)]):
        if extra:
            write(t, extra, "a")
        procs = [
            subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            for _ in range(6)
        ]
        outs = {p.communicate(stdin)[0] for p in procs}
        assert all(p.returncode == 0 for p in procs)
        assert len(outs) == 1, outs
        header = state_of(t, cache_home)
        assert header["streams"]["main"]["prompt_cache"]["requests"] == (4 if extra else 3)


def test_state_of_the_right_version_but_wrong_shape_is_recomputed(
    tmp_path: Path, cache_home: Path
) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    run_line({"transcript_path": str(t)})
    path = state.state_path(str(t), str(cache_home))
    header, rest = state.load_header(path)
    assert header is not None
    header["streams"]["main"]["prompt_cache"] = 5  # files unchanged: the warm path uses it
    state.save(path, json.dumps(header).encode(), rest.strip())
    assert requests_seen(t) == 3
    assert requests_seen(t) == 3  # and the state was replaced by a good one
    assert "state unusable" in (cache_home / "statusline.log").read_text()


def test_temporaries_of_killed_runs_are_removed(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    run_line({"transcript_path": str(t)})
    path = Path(state.state_path(str(t), str(cache_home)))
    stale, fresh = Path(f"{path}.99999.tmp"), Path(f"{path}.99998.tmp")
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (T0, T0))  # long ago: its writer is dead
    write(t, THREE[2:], "a")
    assert requests_seen(t) == 3
    assert not stale.exists() and fresh.exists()  # a sibling may still be writing that one


def test_lines_without_requests_move_on_without_the_reader(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cachediag.statusline import track

    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    assert requests_seen(t) == 2
    progress = json.dumps({"type": "progress", "sessionId": "s1", "data": {"n": 1}})
    user = json.dumps({"type": "user", "sessionId": "s1", "message": {"content": "hi"}})
    write(t, [progress, user], "a")

    def must_not_run(*args: Any) -> Any:
        raise AssertionError("the reader was loaded for lines that hold no request")

    monkeypatch.setattr(track, "refresh", must_not_run)
    assert requests_seen(t) == 2
    saved = state_of(t, cache_home)["files"][str(t)]
    assert (saved["offset"], saved["lines"]) == (t.stat().st_size, 4)
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home.parent))
    monkeypatch.setattr(prices, "day_prices", lambda model, day: DayPrices())
    write(t, THREE[2:], "a")
    assert requests_seen(t) == 3
    assert state_of(t, cache_home)["files"][str(t)]["lines"] == 5


@pytest.mark.parametrize("chains", [False, True])
def test_line_scan_selects_what_the_readers_filter_selects(chains: bool) -> None:
    from cachediag.ingest.needles import WANTED, WANTED_WITH_CHAINS
    from cachediag.ingest.transcript import wanted_line, wanted_line_with_chains

    want = wanted_line_with_chains if chains else wanted_line
    needles = WANTED_WITH_CHAINS if chains else WANTED
    for path in sorted((ROOT / "fixtures" / "real").rglob("*.jsonl")):
        data = path.read_bytes()
        end = data.rfind(b"\n") + 1
        expected, pos = [], 0
        for raw in data[:end].splitlines(keepends=True):
            if want(raw):
                expected.append(pos)
            pos += len(raw)
        assert state.wanted_lines(data, end, needles) == expected, path


def test_each_run_parses_the_state_header_once_unless_a_sibling_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that reads appended lines (or moves past request-free ones) parses the
    header once; only a state saved by another run after that is parsed again."""
    calls: list[str] = []
    load = state.load_header

    def counted(path: str) -> Any:
        calls.append(path)
        return load(path)

    monkeypatch.setattr(state, "load_header", counted)
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    run_line({"transcript_path": str(t)})
    write(t, THREE[2:], "a")  # a request: read what was appended
    calls.clear()
    run_line({"transcript_path": str(t)})
    assert len(calls) == 1 and requests_seen(t) == 3
    write(t, [json.dumps({"type": "progress", "timestamp": "2026-01-01T00:00:00Z"})], "a")
    calls.clear()
    run_line({"transcript_path": str(t)})  # no request: positions move on
    assert len(calls) == 1
    # A sibling saves between this run's read and its lock: that state is read again.
    stamps = iter(range(10**6))
    monkeypatch.setattr(state, "stamp", lambda path: (next(stamps), 0, 0, 0))
    write(t, [assistant(4, T0 + 1100, inp=10, read=21000, write=10)], "a")
    calls.clear()
    run_line({"transcript_path": str(t)})
    assert len(calls) == 2 and requests_seen(t) == 4
