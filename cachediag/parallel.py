"""Sessions are independent: many of them are read in worker processes, one per core."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar

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


def map_ordered(
    fn: Callable[[T], R],
    items: Iterable[T],
    jobs: int,
    weights: Sequence[int] | None = None,
) -> Iterator[R]:
    """``map(fn, items)`` across ``jobs`` processes, results in input order.

    The calling process takes a share itself and forks ``jobs - 1`` children for the
    rest: on a two-core machine a pool of two workers beside an idle parent cost ~30 ms
    more (the pool's imports, feeder threads, per-item round trips). Shares are balanced
    by ``weights`` (e.g. bytes to read). Children send each result as it is made, so
    results (and the caller's progress) flow while the work goes on. ``fn``'s results
    must pickle; with one job, or where ``fork`` does not exist, nothing is forked.
    """
    todo = list(items)
    if jobs <= 1 or len(todo) <= 1 or not hasattr(os, "fork"):
        yield from map(fn, todo)
        return
    shares = balance(weights if weights is not None else [1] * len(todo), min(jobs, len(todo)))
    children: list[_Child[R]] = []
    try:
        for share in shares[1:]:
            children.append(_Child.start(fn, todo, share))
        done: dict[int, R] = {}
        waiting = 0
        for i in shares[0]:
            done[i] = fn(todo[i])
            for child in children:
                done.update(child.receive(block=False))
            while waiting in done:
                yield done.pop(waiting)
                waiting += 1
        for child in children:
            done.update(child.receive(block=True))
            while waiting in done:
                yield done.pop(waiting)
                waiting += 1
        if waiting != len(todo):
            raise RuntimeError(f"worker processes returned {waiting} of {len(todo)} results")
    finally:
        for child in children:
            child.stop()


def balance(weights: Sequence[int], parts: int) -> list[list[int]]:
    """Indices split into ``parts`` shares of near-equal total weight, each in order.

    Heaviest first, each to the lightest share: the classic greedy, within 4/3 of best.
    """
    shares: list[list[int]] = [[] for _ in range(parts)]
    loads = [0] * parts
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
        lightest = loads.index(min(loads))
        shares[lightest].append(i)
        loads[lightest] += max(weights[i], 0)
    return [sorted(share) for share in shares]


_FRAME = struct.Struct("<Q")


class _Child(Generic[R]):
    """A forked worker: it maps ``fn`` over its share and writes one length-prefixed
    pickle per result, ``(index, ok, result or exception)``, to a pipe."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        self.buffer = bytearray()
        self.open = True

    @classmethod
    def start(cls, fn: Callable[[T], R], todo: list[T], share: list[int]) -> _Child[R]:
        import pickle  # here, not at the top: one-process runs need none of this

        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid:
            os.close(write_fd)
            return cls(pid, read_fd)
        status = 0
        try:
            os.close(read_fd)
            with os.fdopen(write_fd, "wb") as out:
                for i in share:
                    try:
                        frame = pickle.dumps((i, True, fn(todo[i])), pickle.HIGHEST_PROTOCOL)
                    except BaseException as exc:  # raised again in the parent
                        frame = pickle.dumps((i, False, _picklable(exc)), pickle.HIGHEST_PROTOCOL)
                        status = 1
                    out.write(_FRAME.pack(len(frame)) + frame)
                    out.flush()
                    if status:
                        break
        except BaseException:
            status = 2
        finally:
            # Never return into the parent's code: its finally blocks, atexit, buffers.
            os._exit(status)

    def receive(self, *, block: bool) -> dict[int, R]:
        """The results that have arrived; with ``block``, all of them (to the end)."""
        import pickle

        while self.open and (block or select.select([self.fd], [], [], 0)[0]):
            data = os.read(self.fd, 1 << 20)
            if not data:
                self.close()
                break
            self.buffer += data
        results: dict[int, R] = {}
        while len(self.buffer) >= _FRAME.size:
            (size,) = _FRAME.unpack_from(self.buffer)
            if len(self.buffer) < _FRAME.size + size:
                break
            index, ok, value = pickle.loads(self.buffer[_FRAME.size : _FRAME.size + size])
            del self.buffer[: _FRAME.size + size]
            if not ok:
                raise value
            results[index] = value
        if block and self.buffer:
            raise RuntimeError("a worker process ended in the middle of a result")
        return results

    def close(self) -> None:
        if self.open:
            self.open = False
            os.close(self.fd)
            _, status = os.waitpid(self.pid, 0)
            if status != 0 and not self.buffer:
                raise RuntimeError(f"a worker process failed (wait status {status})")

    def stop(self) -> None:
        """On the way out, also after an error: no orphan left running."""
        if self.open:
            self.open = False
            os.close(self.fd)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)


def _picklable(exc: BaseException) -> BaseException:
    import pickle
    import traceback

    try:
        pickle.dumps(exc)
    except Exception:
        return RuntimeError("".join(traceback.format_exception(exc)))
    return exc
