"""Sessions are independent: many of them are read in worker processes, one per core."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from cachediag.ingest.discover import SessionSource

T = TypeVar("T")
R = TypeVar("R")

PARALLEL_MIN_SESSIONS = 8
PARALLEL_MIN_BYTES = 32 << 20
"""Below this much input, starting worker processes costs more than it saves (measured:
with results rendered in the workers, two workers halve the time on a 100 MB tree)."""


def workers_for(sources: Sequence[SessionSource], requested: int | None = None) -> int:
    """How many processes to use for these sessions (``requested``: the user's say)."""
    if requested is not None:
        return max(1, requested)
    if len(sources) < PARALLEL_MIN_SESSIONS or total_bytes(sources) < PARALLEL_MIN_BYTES:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, len(sources)))


def total_bytes(sources: Iterable[SessionSource]) -> int:
    total = 0
    for src in sources:
        paths = ([src.main] if src.main is not None else []) + [a.path for a in src.agents]
        for path in paths:
            try:
                total += path.stat().st_size
            except OSError:
                continue
    return total


def map_ordered(fn: Callable[[T], R], items: Iterable[T], jobs: int) -> Iterator[R]:
    """``map(fn, items)`` across ``jobs`` processes, results in input order.

    ``fn`` and its results must pickle; with one job nothing is forked.
    """
    if jobs <= 1:
        yield from map(fn, items)
        return
    # Imported here: the process machinery costs ~8 ms that small runs need not pay.
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(fn, items)
