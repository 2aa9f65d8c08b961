"""Forked workers: results in input order, errors carried back, nothing left running."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachediag.parallel import balance, map_ordered


def square_with_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


@pytest.mark.parametrize("jobs", [1, 2, 3, 8])
def test_results_come_back_in_input_order(jobs: int) -> None:
    got = list(map_ordered(square_with_pid, range(40), jobs, weights=[i % 7 for i in range(40)]))
    assert [value for value, _ in got] == [i * i for i in range(40)]
    pids = {pid for _, pid in got}
    assert os.getpid() in pids  # the caller takes a share itself
    assert len(pids) == min(jobs, 40)


def fail_on_seven(x: int) -> int:
    if x == 7:
        raise ValueError("seven")
    return x


class Unpicklable(Exception):
    def __reduce__(self) -> object:
        raise TypeError("no")


def fail_unpicklably(x: int) -> int:
    if x == 3:
        raise Unpicklable("three")
    return x


@pytest.mark.parametrize("jobs", [2, 3])
def test_an_error_in_any_worker_reaches_the_caller(jobs: int) -> None:
    with pytest.raises(ValueError, match="seven"):
        list(map_ordered(fail_on_seven, range(20), jobs))
    with pytest.raises(Exception, match="three"):
        list(map_ordered(fail_unpicklably, range(20), jobs))


def test_children_are_reaped_when_the_caller_stops_early() -> None:
    results = map_ordered(square_with_pid, range(50), 3)
    assert next(results)[0] == 0
    results.close()  # e.g. the reader of our stdout went away
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def big(x: int) -> bytes:
    return bytes([x % 256]) * 300_000  # larger than a pipe buffer


def test_results_larger_than_a_pipe_buffer() -> None:
    assert list(map_ordered(big, range(6), 2)) == [big(i) for i in range(6)]


@settings(max_examples=200, deadline=None)
@given(
    weights=st.lists(st.integers(min_value=0, max_value=1000), max_size=40),
    parts=st.integers(min_value=1, max_value=5),
)
def test_balance_splits_every_index_once_near_evenly(weights: list[int], parts: int) -> None:
    shares = balance(weights, parts)
    assert len(shares) == parts
    assert sorted(i for share in shares for i in share) == list(range(len(weights)))
    assert all(share == sorted(share) for share in shares)
    loads = [sum(weights[i] for i in share) for share in shares]
    # Greedy heaviest-first: no share exceeds the mean by more than the heaviest item.
    assert max(loads) <= sum(weights) / parts + max(weights, default=0)
