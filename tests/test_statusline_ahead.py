"""The status line's spend read beside the cache pass (``statusline.ahead``): the same
line with and without it, the parent answered by what the child saved, and a child
that fails or overruns its deadline never costs the line.

Each run is a fresh interpreter (the status line's own process forks; pytest's must
not)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cachediag.statusline.ahead import _cores
from tests.conftest import ROOT
from tests.test_statusline_spend import T0, line, write

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or _cores() < 2, reason="the child is used only with two cores"
)

LINE_CODE = (
    "import sys\n"
    "before = set(sys.modules)\n"
    "from cachediag.statusline import ahead, fast\n"
    "ahead.enabled = sys.argv.pop(1) == 'on'  # as fast.main sets it\n"
    "fast.run(sys.argv[1:])\n"
    "print(' '.join(sorted(set(sys.modules) - before)), file=sys.stderr)\n"
)
"""One status line; the modules the parent loaded on stderr."""


def _line(payload: dict[str, Any], cache: Path, mode: str, *args: str) -> tuple[str, set[str]]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "NO_COLOR": "1", "TZ": "UTC"}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("CACHEDIAG_STATUSLINE_AHEAD", None)
    cmd = [sys.executable, "-c", LINE_CODE, mode, "--now", str(T0 + 60), *args]
    done = subprocess.run(
        cmd, input=json.dumps(payload).encode(), capture_output=True, env=env, check=True
    )
    return done.stdout.decode(), set(done.stderr.decode().split())


ROWS = "cachediag.history.usage_rows"


@pytest.mark.parametrize("cost", [None, 3.0])
def test_same_lines_with_and_without_the_child(tmp_path: Path, cost: float | None) -> None:
    """Cold, appended, unchanged, appended again: every line is the one the run
    without a child prints; on the cold run the parent never loads the history's rows
    (the child read them and saved the summary that answers it); without it, it does."""
    projects = tmp_path / "projects"
    mine = write(projects / "p" / "s.jsonl", [line(T0, 1.25, "a"), line(T0 + 9, 1.0, "b")])
    write(projects / "q" / "other.jsonl", [line(T0 + 5, 0.5, "c")])
    payload: dict[str, Any] = {"transcript_path": str(mine)}
    if cost is not None:
        payload["cost"] = {"total_cost_usd": cost}
    args = ("--preset", "full", "--no-color")
    steps = ["cold", "append", "same", "append"]
    for i, step in enumerate(steps):
        if step == "append":
            with mine.open("a") as fp:
                fp.write(line(T0 + 20 + i, 0.25, f"n{i}") + "\n")
        on, on_mods = _line(payload, tmp_path / "on", "on", *args)
        off, off_mods = _line(payload, tmp_path / "off", "off", *args)
        assert on == off, step
        assert "today $" in on and "block $" in on
        if step == "cold":  # a whole read: the child read the history's rows
            assert ROWS in off_mods and ROWS not in on_mods
        elif step == "append":  # a short cache pass: the parent reads them, as without
            assert ROWS in off_mods and ROWS in on_mods


CHILD_CODE = """
import sys, time
from cachediag.statusline import ahead
ahead.enabled = True
def slow():
    time.sleep(30)
def fails():
    raise RuntimeError("boom")
def works():
    open(sys.argv[1], "w").write("done")
out = []
for work, wait in ((slow, 0.2), (fails, 5.0), (works, 5.0)):
    child = ahead.Ahead(work)
    child.start()
    started = time.monotonic()
    out.append([child.finish(time.monotonic() + wait), round(time.monotonic() - started, 1)])
print(out)
"""


def test_a_child_past_the_deadline_is_killed_and_a_failing_one_says_so(tmp_path: Path) -> None:
    flag = tmp_path / "flag"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CACHEDIAG_STATUSLINE_AHEAD", None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD_CODE, str(flag)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=20,
    )
    (slow, slow_s), (fails, _), (works, _) = ast.literal_eval(done.stdout)
    assert (slow, fails, works) == (False, False, True)
    assert slow_s < 5  # killed at its deadline, not waited for
    assert flag.read_text() == "done"
    assert done.stderr == ""  # the failing child printed nothing


def test_switched_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from cachediag.statusline import ahead

    monkeypatch.setattr(ahead, "enabled", True)
    monkeypatch.setenv("CACHEDIAG_STATUSLINE_AHEAD", "0")
    assert not ahead.usable()
    monkeypatch.delenv("CACHEDIAG_STATUSLINE_AHEAD")
    assert ahead.usable()
    monkeypatch.setattr(ahead, "enabled", False)
    assert not ahead.usable()  # a process that is not the status line's own


ORPHAN_CODE = """
import os, sys, time
from cachediag.statusline import ahead
ahead.enabled = True
def slow():
    open(sys.argv[1], "w").write(str(os.getpid()))
    time.sleep(30)
ahead.Ahead(slow).start()
while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():
    time.sleep(0.01)
os._exit(0)  # as a status line Claude Code killed: the child is never waited for
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fp:
            state = next(line for line in fp if line.startswith("State:"))
    except (FileNotFoundError, StopIteration):
        return False
    return "Z" not in state.split()[1]  # a zombie is dead, only not reaped yet


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux only")
def test_the_child_dies_with_the_status_line(tmp_path: Path) -> None:
    import time

    flag = tmp_path / "pid"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CACHEDIAG_STATUSLINE_AHEAD", None)
    subprocess.run([sys.executable, "-c", ORPHAN_CODE, str(flag)], env=env, check=True, timeout=20)
    pid = int(flag.read_text())
    ends = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < ends:
        time.sleep(0.05)
    assert not _alive(pid)
