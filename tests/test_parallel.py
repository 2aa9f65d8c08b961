"""Forked workers: results in input order, errors carried back, nothing left running."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from cachediag import workers
from cachediag.errors import WorkerError
from cachediag.parallel import map_ordered


@pytest.fixture(autouse=True)
def _no_other_thread() -> None:
    """map_ordered forks only when no other thread runs: a thread an earlier test left
    alive would turn these tests into in-process runs that wait in vain. Say so."""
    others = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    assert not others, f"threads left running by earlier tests: {others}"


def square_with_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


@pytest.mark.parametrize("jobs", [1, 2, 3, 8])
def test_results_come_back_in_input_order(jobs: int) -> None:
    got = list(map_ordered(square_with_pid, range(40), jobs, weights=[i % 7 for i in range(40)]))
    assert [value for value, _ in got] == [i * i for i in range(40)]
    assert len({pid for _, pid in got}) <= jobs


class Unpicklable(Exception):
    def __reduce__(self) -> object:
        raise TypeError("no")


def fail_unpicklably(x: int) -> int:
    if x == 3:
        raise Unpicklable("three")
    return x


def fail_on_seven_and_twelve(x: int) -> int:
    if x in (7, 12):
        raise ValueError(f"failed on {x}")
    return x


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_an_error_comes_out_in_its_turn_as_with_map(jobs: int) -> None:
    # Whoever ran item 7 or 12, and whenever: items 0-6 come out, then item 7's error.
    got: list[int] = []
    with pytest.raises(ValueError, match="failed on 7"):
        for value in map_ordered(fail_on_seven_and_twelve, range(20), jobs):
            got.append(value)
    assert got == list(range(7))


@pytest.mark.parametrize("jobs", [2, 3])
def test_an_unpicklable_error_still_reaches_the_caller(jobs: int) -> None:
    with pytest.raises(Exception, match="three"):
        list(map_ordered(fail_unpicklably, range(20), jobs))


def test_children_are_reaped_when_the_caller_stops_early() -> None:
    results = map_ordered(square_with_pid, range(50), 3)
    assert next(results)[0] == 0
    results.close()  # e.g. the reader of our stdout went away
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def big(x: int) -> bytes:
    return bytes([x % 256]) * 1_500_000  # larger than a widened pipe buffer


def test_results_larger_than_a_pipe_buffer() -> None:
    assert list(map_ordered(big, range(6), 2)) == [big(i) for i in range(6)]


def wait_for_the_rest(job: tuple[Path, int, int]) -> bool:
    """Item 0 waits until every other item is done; the others just mark themselves."""
    folder, index, total = job
    if index != 0:
        (folder / f"done-{index}").touch()
        return True
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if len(list(folder.glob("done-*"))) == total - 1:
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("jobs", [2, 3])
def test_a_busy_process_does_not_hold_up_the_others(tmp_path: Path, jobs: int) -> None:
    # Fixed shares would leave items in the busy process's share undone until it is
    # free, and item 0 would wait in vain; handed out one by one, the others take them.
    total = 20
    jobs_in = [(tmp_path, i, total) for i in range(total)]
    assert all(map_ordered(wait_for_the_rest, jobs_in, jobs))


def test_more_items_than_a_pipe_holds_tokens_for() -> None:
    n = 70_000
    assert list(map_ordered(abs, range(-n, 0), 2)) == list(range(n, 0, -1))


PARENT = os.getpid()


def wait_for(path: Path) -> None:
    """Until ``path`` exists (30 s at most: a test that waits in vain fails, not hangs)."""
    deadline = time.monotonic() + 30
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def die_in_a_child(job: tuple[Path, int]) -> int:
    """Children mark a flag and die by SIGKILL; the caller waits for the flag, so that a
    child surely takes an item before the caller has taken them all."""
    flag, x = job
    if os.getpid() != PARENT:
        flag.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    wait_for(flag)
    return x


def test_a_worker_killed_by_a_signal_is_a_clear_error(tmp_path: Path) -> None:
    jobs_in = [(tmp_path / "flag", i) for i in range(6)]
    with pytest.raises(WorkerError, match=r"killed by SIGKILL.*--jobs 1"):
        list(map_ordered(die_in_a_child, jobs_in, 2))
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


class TwoArguments(Exception):
    """Pickles, but cannot be rebuilt from its pickle (``__init__`` wants two)."""

    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"{a}/{b}")


def raise_in_a_child(job: tuple[Path, int, Exception]) -> int:
    """Children mark a flag and raise ``error``; the caller waits for the flag, so that a
    child surely takes an item (forked, so ``error`` need not pickle on the way in)."""
    flag, x, error = job
    if os.getpid() != PARENT:
        flag.touch()
        raise error
    wait_for(flag)
    return x


def test_an_error_that_cannot_be_rebuilt_arrives_as_its_traceback(tmp_path: Path) -> None:
    jobs_in = [(tmp_path / "flag", i, TwoArguments("left", "right")) for i in range(6)]
    with pytest.raises(RuntimeError, match="TwoArguments: left/right"):
        list(map_ordered(raise_in_a_child, jobs_in, 2))


def test_children_are_fine_when_sigchld_is_ignored() -> None:
    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert list(map_ordered(abs, range(-30, 0), 2)) == list(range(30, 0, -1))
    finally:
        signal.signal(signal.SIGCHLD, old)


def test_a_small_task_pipe_does_not_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    # A user over Linux's per-user pipe limit gets 1-2 page pipes; other kernels promise
    # little. Pretend the pipe says it holds 64 KiB but really holds 4 KiB.
    fcntl = pytest.importorskip("fcntl")
    if not hasattr(fcntl, "F_SETPIPE_SZ"):
        pytest.skip("cannot shrink a pipe here")
    real_pipe = os.pipe

    def small_pipe() -> tuple[int, int]:
        read_fd, write_fd = real_pipe()
        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 4096)
        return read_fd, write_fd

    monkeypatch.setattr(workers, "_pipe_capacity", lambda fd: 65536)
    monkeypatch.setattr(workers.os, "pipe", small_pipe)
    n = 5000
    assert list(map_ordered(abs, range(-n, 0), 2)) == list(range(n, 0, -1))


def test_no_fork_while_another_thread_runs() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        got = list(map_ordered(square_with_pid, range(10), 2))
    finally:
        stop.set()
        thread.join()
    assert {pid for _, pid in got} == {os.getpid()}


def test_a_childs_error_arrives_as_itself(tmp_path: Path) -> None:
    jobs_in = [(tmp_path / "flag", i, ValueError(f"child failed on {i}")) for i in range(6)]
    with pytest.raises(ValueError, match="child failed on"):
        list(map_ordered(raise_in_a_child, jobs_in, 2))


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0


def test_no_room_for_tasks_means_working_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(fd: int, count: int) -> int:
        raise workers.NoRoom

    monkeypatch.setattr(workers, "_fill", refuse)
    before = open_fds()
    got = list(map_ordered(square_with_pid, range(10), 2))
    assert [v for v, _ in got] == [i * i for i in range(10)]
    assert {pid for _, pid in got} == {os.getpid()}
    assert open_fds() == before


def test_a_drain_that_cannot_start_shows_its_own_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def cannot_start(self: object) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(workers.Drain, "start", cannot_start)
    before = open_fds()
    with pytest.raises(RuntimeError, match="can't start new thread"):
        list(map_ordered(abs, range(10), 2))
    assert open_fds() == before
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def meet(job: tuple[Path, int]) -> tuple[int, int]:
    """Each process marks its own flag, then waits for the other's: neither can finish
    an item before the other has started one, so both surely take items."""
    folder, x = job
    mine, theirs = ("child", "caller") if os.getpid() != PARENT else ("caller", "child")
    (folder / mine).touch()
    wait_for(folder / theirs)
    return x, os.getpid()


def test_the_caller_and_a_child_both_work(tmp_path: Path) -> None:
    got = list(map_ordered(meet, [(tmp_path, i) for i in range(8)], 2))
    assert [x for x, _ in got] == list(range(8))
    pids = {pid for _, pid in got}
    assert len(pids) == 2 and os.getpid() in pids
