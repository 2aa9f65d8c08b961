"""The status line's work is bounded (issue 11, finding 1): a time budget with partial
results saved and continued, overlong lines skipped without being held, and SIGTERM or
SIGINT ending a run at once with the state left whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cachediag.follow.live_session import LiveSession
from cachediag.ingest.needles import MAX_LINE_BYTES
from tests.conftest import ROOT, SPOTTER_SESSION
from tests.statusline_support import REPORT_PEAK, THREE, cache_home, run_line, state_of, write

__all__ = ["cache_home"]

CMD = [sys.executable, "-m", "cachediag", "statusline", "--no-color", "--now", "1770930400"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
        **extra,
    }


def test_overlong_line_is_skipped_as_a_bad_line(tmp_path: Path) -> None:
    """A line past the cap is counted as one bad line; the lines around it are read;
    the reader never holds more than the cap (plus a block)."""
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    with t.open("ab") as fp:
        fp.write(b'{"type":"assistant",' + b"x" * (MAX_LINE_BYTES + (3 << 20)) + b"}\n")
    write(t, THREE[2:], "a")
    bad: list[tuple[int, str]] = []
    live = LiveSession(str(t), on_bad_line=lambda src, n, why: bad.append((n, why)))
    assert live.read(str(t))
    assert bad == [(3, "line longer than 64 MiB, skipped")]
    assert live.ledgers["main"].requests == 3
    assert live.files[str(t)]["lines"] == 4 and not live.files[str(t)]["skip"]


def test_overlong_line_split_across_runs(tmp_path: Path) -> None:
    """The read can end inside an overlong line; the next one skips on to its newline."""
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:1])
    with t.open("ab") as fp:
        fp.write(b"{" + b"y" * (MAX_LINE_BYTES + (2 << 20)))
    live = LiveSession(str(t))
    live.read(str(t))
    cursor = live.files[str(t)]
    assert cursor["skip"] and cursor["offset"] > MAX_LINE_BYTES and cursor["lines"] == 1
    with t.open("ab") as fp:
        fp.write(b"}\n")
    write(t, THREE[1:], "a")
    live.read(str(t))
    assert live.skipped == 1 and live.ledgers["main"].requests == 3
    assert live.files[str(t)]["lines"] == 4


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM (Linux)")
def test_newline_free_transcript_in_bounded_memory(tmp_path: Path) -> None:
    """Finding 1: 400 MB without a newline (a sparse file) prints a line, in memory far
    below the file's size, and the runs after it are warm."""
    t = tmp_path / "big.jsonl"
    with t.open("wb") as fp:
        fp.truncate(400 << 20)
    stdin = json.dumps({"transcript_path": str(t)}).encode()
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", REPORT_PEAK, *CMD[3:]],
            input=stdin,
            env=_env(tmp_path),
            capture_output=True,
            timeout=60,
        )
        assert proc.returncode == 0 and "cache \u2013" in proc.stdout.decode()
        peak_kib = int(proc.stderr.split()[1])
        assert peak_kib < 200 * 1024  # the file is 400 MB, the cap 64 MiB


def test_budget_gives_partial_results_that_the_next_run_continues(
    tmp_path: Path, cache_home: Path
) -> None:
    """A run that cannot finish shows what it read, marked partial, saves it, and the
    next run goes on from there until the numbers are those of a full read."""
    t = tmp_path / "s1.jsonl"
    data = SPOTTER_SESSION.read_bytes()
    t.write_bytes(data * max(1, (6 << 20) // len(data)))  # a few MiB of real lines
    payload = {"transcript_path": str(t)}
    full = json.loads(run_line(payload, "--json", "--budget", "30"))["prompt_cache"]
    os.unlink(state_of_path(t, cache_home))
    offsets = []
    for _ in range(100):
        obj = json.loads(run_line(payload, "--json", "--budget", "0.05"))
        offsets.append(state_of(t, cache_home)["files"][str(t)]["offset"])
        if not obj["cachediag"]["partial"]:
            break
    assert offsets == sorted(offsets) and offsets[-1] == t.stat().st_size
    assert obj["prompt_cache"] == full


def state_of_path(t: Path, cache_home: Path) -> str:
    from cachediag.statusline import state

    return state.state_path(str(t), str(cache_home))


def test_partial_is_shown_on_the_line() -> None:
    from cachediag.statusline.render import render_line

    view = {"prompt_cache": {"hit_ratio": 0.5, "misses": 0, "requests": 1}, "partial": True}
    assert render_line(view) == "cache 50% · cold · 0 misses · partial"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_a_long_read_at_once(tmp_path: Path, sig: signal.Signals) -> None:
    """Finding 1: the signal is not deferred while the state lock is held; the process
    ends by the signal (no traceback), the state stays whole, and the next run works."""
    t = tmp_path / "big.jsonl"
    write(t, THREE)
    with t.open("ab") as fp:
        fp.truncate(t.stat().st_size + (40 << 30))  # 40 GB more (sparse), no newline
    stdin = json.dumps({"transcript_path": str(t)}).encode()
    proc = subprocess.Popen(
        [*CMD, "--budget", "60"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
    )
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    time.sleep(0.5)  # started and reading (40 GB would take many seconds)
    proc.send_signal(sig)
    proc.wait(timeout=5)  # a deferred signal would wait for the whole read
    assert proc.returncode == -sig
    assert proc.stderr is not None and b"Traceback" not in proc.stderr.read()
    proc.stdout.close() if proc.stdout else None
    proc.stderr.close()
    again = subprocess.run(
        [*CMD, "--format", "{requests}"],
        input=stdin,
        env=_env(tmp_path, CACHEDIAG_STATUSLINE_BUDGET="0.5"),  # partial, but whole
        capture_output=True,
        timeout=60,
    )
    assert again.stdout == b"3 req\n"
