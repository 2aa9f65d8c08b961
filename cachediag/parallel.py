"""Sessions are independent: many of them are read in worker processes, one per core."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from cachediag.errors import WorkerError
from cachediag.ingest.discover import SessionSource

T = TypeVar("T")
R = TypeVar("R")

PARALLEL_MIN_SESSIONS = 2
PARALLEL_MIN_BYTES = 4 << 20
"""Below this much input a fork costs more than it saves. Measured on 2 cores with the
caller working too: a second process takes a 5.5 MB tree of six projects from 131 to
115 ms, a 33 MB tree of two from 176 to 136 ms."""


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

    The calling process works too and forks ``jobs - 1`` children: on a two-core
    machine a pool of two workers beside an idle parent cost ~30 ms more (the pool's
    imports, feeder threads, per-item round trips). Items are handed out one at a time,
    heaviest ``weights`` first (e.g. bytes to read), so a process that finishes early
    takes more: measured, fixed shares left one process idle up to 60 ms of a 0.2 s run.
    Children send each result as it is made, so output (and the caller's progress) flow
    while the work goes on. ``fn``'s results must pickle; with one job, or where ``fork``
    does not exist, nothing is forked.
    """
    todo = list(items)
    if jobs <= 1 or len(todo) <= 1 or not hasattr(os, "fork"):
        yield from map(fn, todo)
        return
    weight = weights if weights is not None else [1] * len(todo)
    tasks = _Tasks(sorted(range(len(todo)), key=lambda i: -weight[i]))
    children: list[_Child[R]] = []
    try:
        for _ in range(min(jobs, len(todo)) - 1):
            children.append(_Child.start(fn, todo, tasks))
        done: dict[int, R] = {}
        waiting = 0
        for i in tasks:
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
            raise WorkerError(f"worker processes returned {waiting} of {len(todo)} results{_RETRY}")
    finally:
        tasks.close()
        for child in children:
            child.stop()


_TOKEN = struct.Struct("<I")
_MAX_TOKENS = 65536 // _TOKEN.size
"""A pipe holds 64 KiB on Linux: all tokens are written before anyone reads."""


class _Tasks:
    """Item indices to be taken, shared by forked processes through a pipe.

    Every token is written before the first fork and the write end closed, so a take is
    one 4-byte read, which the kernel serves whole to one reader, and an empty pipe
    reads as the end. More items than tokens go out in batches of consecutive indices
    of ``order``.
    """

    def __init__(self, order: list[int]) -> None:
        size = -(-len(order) // _MAX_TOKENS) or 1
        self.batches = [order[k : k + size] for k in range(0, len(order), size)]
        self.fd, write_fd = os.pipe()
        try:
            os.write(write_fd, b"".join(_TOKEN.pack(k) for k in range(len(self.batches))))
        finally:
            os.close(write_fd)

    def __iter__(self) -> Iterator[int]:
        while self.fd >= 0:
            token = os.read(self.fd, _TOKEN.size)
            if not token:
                return
            yield from self.batches[_TOKEN.unpack(token)[0]]

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_FRAME = struct.Struct("<Q")
_RETRY = "; --jobs 1 reads everything in one process"


def _how_it_ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        signal_number = os.WTERMSIG(status)
        try:
            name = signal.Signals(signal_number).name
        except ValueError:
            name = f"signal {signal_number}"
        return f"was killed by {name}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


class _Child(Generic[R]):
    """A forked worker: it maps ``fn`` over the items it takes and writes one
    length-prefixed pickle per result, ``(index, ok, result or exception)``, to a pipe."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        self.buffer = bytearray()
        self.open = True

    @classmethod
    def start(cls, fn: Callable[[T], R], todo: list[T], tasks: _Tasks) -> _Child[R]:
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
                for i in tasks:
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
            raise WorkerError(f"a worker process ended in the middle of a result{_RETRY}")
        return results

    def close(self) -> None:
        if self.open:
            self.open = False
            os.close(self.fd)
            _, status = os.waitpid(self.pid, 0)
            if status != 0 and not self.buffer:
                raise WorkerError(f"a worker process {_how_it_ended(status)}{_RETRY}")

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
