"""The status line's spend: the session's, today's and the 5-hour block's cost from the
history index, each response once, blocks by ccusage's rule."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cachediag.statusline.spend import BLOCK_S, spend_view

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def stamp(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(at))


def line(at: float, cost: float, msg: str, output: int = 1) -> str:
    return json.dumps(
        {
            "type": "assistant",
            "timestamp": stamp(at),
            "sessionId": "s",
            "requestId": f"req_{msg}",
            "costUSD": cost,
            "message": {
                "id": f"msg_{msg}",
                "model": "m",
                "usage": {"input_tokens": 1, "output_tokens": output},
            },
        }
    )


def write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(x + "\n" for x in lines))
    return path


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Today is the local day: the tests' is UTC's, and the zone is put back after."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_session_today_and_block(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    mine = write(
        projects / "p1" / "s.jsonl",
        [
            line(T0 + 600, 1.0, "a", 1),
            line(T0 + 601, 1.0, "a", 9),  # the same response's later line: counted once
            line(T0 + 7 * 3600, 2.0, "b"),  # more than 5 h later: a new block at 07:00
        ],
    )
    write(mine.parent / "s" / "subagents" / "agent-1.jsonl", [line(T0 + 7 * 3600 + 60, 0.25, "c")])
    write(
        projects / "p2" / "other.jsonl", [line(T0 + 8 * 3600, 4.0, "d"), line(T0 - 3600, 8.0, "e")]
    )
    now = T0 + 9 * 3600
    cache = str(tmp_path / "cache")
    got = spend_view(str(mine), now, history=True, root=cache)
    assert got["session_cost_usd"] == pytest.approx(3.25)
    assert got["today_cost_usd"] == pytest.approx(7.25)  # yesterday's $8 is not today's
    assert got["block"] == {
        "active": True,
        "cost_usd": pytest.approx(6.25),
        "ends_at": T0 + 7 * 3600 + BLOCK_S,
    }
    later = spend_view(str(mine), T0 + 13 * 3600, history=True, root=cache)
    assert later["block"]["active"] is False
    assert spend_view(str(mine), now, history=False, root=cache) == {
        "session_cost_usd": pytest.approx(3.25)
    }
    # One more response appended: only it is read, and counted.
    with mine.open("a") as fp:
        fp.write(line(T0 + 8 * 3600 + 60, 0.5, "f") + "\n")
    assert spend_view(str(mine), now, history=True, root=cache)["today_cost_usd"] == pytest.approx(
        7.75
    )


def test_a_block_also_ends_five_hours_after_it_began(tmp_path: Path) -> None:
    hourly = [line(T0 + h * 3600 + 1800, 1.0, f"h{h}") for h in range(8)]
    mine = write(tmp_path / "projects" / "p" / "s.jsonl", hourly)
    got = spend_view(str(mine), T0 + 7 * 3600 + 1900, history=True, root=str(tmp_path / "c"))
    # 00:30..04:30 fill the first block (00:00-05:00); 05:30 starts the next at 05:00.
    assert got["block"] == {
        "active": True,
        "cost_usd": pytest.approx(3.0),
        "ends_at": T0 + 5 * 3600 + BLOCK_S,
    }
    # The history is this session alone: its cost is that of the whole history.
    assert got["session_cost_usd"] == got["today_cost_usd"] == pytest.approx(8.0)


def test_past_the_deadline_nothing_half_counted_is_shown(tmp_path: Path) -> None:
    mine = write(tmp_path / "projects" / "p" / "s.jsonl", [line(T0, 1.0, "a")])
    assert spend_view(str(mine), T0, history=True, root=str(tmp_path / "c"), deadline=0.0) == {
        "partial": True
    }


def test_claude_codes_cost_first_ours_built_a_slice_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With Claude Code's own cost the session's index gets a slice of each run (none
    here): the line shows Claude Code's figure, never a half-read one of ours; without
    it, ours is read whole and shown."""
    from cachediag.statusline import fast
    from tests.statusline_support import run_line

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mine = write(
        tmp_path / "projects" / "p" / "s.jsonl", [line(T0, 1.25, "a"), line(T0 + 9, 1.0, "b")]
    )
    monkeypatch.setattr(fast, "SPEND_SLICE_S", -1.0)
    theirs = {"transcript_path": str(mine), "cost": {"total_cost_usd": 3.0}}
    assert run_line(theirs, "--no-color", "--format", "{session_cost}") == "$3.00"
    ours = {"transcript_path": str(mine)}
    assert run_line(ours, "--no-color", "--format", "{session_cost}") == "$2.25"
    # Read whole now: Claude Code's figure and ours, as they differ.
    assert run_line(theirs, "--no-color", "--format", "{session_cost}") == "$3.00 (log $2.25)"


WARM_CODE = (
    "import sys\n"
    "before = set(sys.modules)\n"
    "from cachediag.statusline.fast import run\n"
    "run(sys.argv[1:])\n"
    "print(' '.join(sorted(set(sys.modules) - before)), file=sys.stderr)\n"
)
"""One whole status line in a fresh interpreter; the modules it loaded on stderr."""


def _warm_modules(payload: dict[str, Any], cache: Path, *args: str) -> tuple[str, set[str]]:
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "NO_COLOR": "1", "TZ": "UTC"}
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, "-c", WARM_CODE, "--now", str(T0 + 60), *args]
    done = subprocess.run(
        cmd, input=json.dumps(payload).encode(), capture_output=True, env=env, check=True
    )
    return done.stdout.decode(), set(done.stderr.decode().split())


HEAVY_FOR_A_WARM_LINE = ("cachediag.pipeline", "cachediag.usage", "cachediag.commands.usage")


@pytest.mark.parametrize("preset", [[], ["--preset", "full"]])
def test_warm_run_with_claude_codes_cost_loads_no_history_rows(
    tmp_path: Path, preset: list[str]
) -> None:
    """Once the session's check (and, for today and the block, the history's) is whole,
    a refresh with Claude Code's cost answers from the summaries: it loads neither the
    history's rows and index nor the reports' pipeline."""
    mine = write(
        tmp_path / "projects" / "p" / "s.jsonl", [line(T0, 1.25, "a"), line(T0 + 9, 1.0, "b")]
    )
    payload = {"transcript_path": str(mine), "cost": {"total_cost_usd": 3.0}}
    cache = tmp_path / "cache"
    lines = [_warm_modules(payload, cache, *preset)[0] for _ in range(3)]
    out, mods = _warm_modules(payload, cache, *preset)
    assert out == lines[-1] and "$3.00 (log $2.25)" in out
    if preset:
        assert "today $2.25" in out and "block $2.25" in out
    assert "cachediag.statusline.fast" in mods
    rows = {"cachediag.history.usage_rows", "cachediag.history.index", "orjson"}
    assert not mods & rows
    assert not {m for m in mods if m.startswith(HEAVY_FOR_A_WARM_LINE)}
    # The first run did need them: the check above can fail.
    _, cold = _warm_modules(payload, tmp_path / "other", *preset)
    assert "cachediag.history.usage_rows" in cold


def test_the_check_is_built_by_runs_that_read_the_transcript_not_by_warm_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh of unchanged files reads only the check's summary (a warm line costs
    the cache alone); the next run that reads appended bytes goes on building it."""
    from cachediag.statusline import fast
    from tests.statusline_support import run_line

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mine = write(tmp_path / "projects" / "p" / "s.jsonl", [line(T0, 1.25, "a")])
    theirs = {"transcript_path": str(mine), "cost": {"total_cost_usd": 3.0}}
    monkeypatch.setattr(fast, "SPEND_SLICE_S", -1.0)  # the first run: no slice at all
    assert run_line(theirs, "--no-color", "--format", "{session_cost}") == "$3.00"
    monkeypatch.setattr(fast, "SPEND_SLICE_S", 60.0)  # any slice would now read it whole
    assert run_line(theirs, "--no-color", "--format", "{session_cost}") == "$3.00"
    with mine.open("a") as fp:
        fp.write(line(T0 + 9, 1.0, "b") + "\n")
    assert run_line(theirs, "--no-color", "--format", "{session_cost}") == "$3.00 (log $2.25)"
    assert run_line(theirs, "--no-color", "--format", "{session_cost}") == "$3.00 (log $2.25)"
