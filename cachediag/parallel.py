"""Sessions are independent: many of them are read in worker processes, one per core."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from cachediag.ingest.discover import SessionSource

T = TypeVar("T")
R = TypeVar("R")

PARALLEL_MIN_BYTES = 4 << 20
"""Below this much input for the other processes a fork costs more than it saves
(measured on 2 cores with the caller working too; the figures are in docs/benchmarks.md)."""


def workers_for(weights: Sequence[int], requested: int | None = None) -> int:
    """How many processes to use for work items of ``weights`` bytes (one item, a project
    folder's sessions, is read by one process); ``requested``: the user's say.

    Forking pays when the items other than the largest hold ``PARALLEL_MIN_BYTES``: the
    process reading the largest one takes at least its time, so a 10 MB tree whose one
    folder holds 9 MB gains nothing from a second process but its cost (on a loaded
    2-core machine, 1.14x the wall time of one process)."""
    if requested is not None:
        return max(1, requested)
    if len(weights) < 2 or sum(weights) - max(weights) < PARALLEL_MIN_BYTES:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, len(weights)))


def total_bytes(sources: Iterable[SessionSource]) -> int:
    """The size of every file of ``sources`` (a file that cannot be reached counts 0)."""
    total = 0
    for src in sources:
        for path in src.paths:
            st = src.stat(path)
            if st is not None:
                total += st[0]
    return total


def map_ordered(
    fn: Callable[[T], R],
    items: Iterable[T],
    jobs: int,
    weights: Sequence[int] | None = None,
) -> Iterator[R]:
    """``map(fn, items)`` across ``jobs`` processes, results in input order.

    The calling process works too and forks ``jobs - 1`` children: on a two-core
    machine a pool of two workers beside an idle parent cost more (the pool's
    imports, feeder threads, per-item round trips). Items are handed out one at a time,
    heaviest ``weights`` first (e.g. bytes to read), so a process that finishes early
    takes more: fixed shares left one process idle while the other finished.
    A thread reads the children's results as they come, so output (and the caller's
    progress) flows while the work goes on. As with ``map``, the results before the
    first item whose ``fn`` raised come out, then its exception. ``fn``'s results must
    pickle. Nothing is forked with one job, where ``fork`` does not exist, or while
    another thread runs (a child would inherit its locks in whatever state they were).
    """
    todo = list(items)
    if jobs <= 1 or len(todo) <= 1 or not hasattr(os, "fork") or _other_threads():
        yield from map(fn, todo)
        return
    from cachediag.workers import map_forked

    yield from map_forked(fn, todo, min(jobs, len(todo)), weights)


def _other_threads() -> bool:
    import sys

    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1
