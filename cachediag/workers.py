"""Forked worker processes: the machinery behind ``parallel.map_ordered``.

- ``Tasks``: item indices in a pipe, taken one at a time by every process, so a process
  that finishes early takes more;
- ``Child``: a forked process mapping a function over the items it takes, sending each
  outcome back as a length-prefixed pickle on a pipe of its own;
- ``Drain``: a thread of the calling process that reads every child's pipe as data
  arrives, so no child ever waits on a full pipe while the caller works on its own items.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import selectors
import signal
import struct
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from cachediag.errors import WorkerError

T = TypeVar("T")
R = TypeVar("R")

RETRY = "; --jobs 1 reads everything in one process"
_TOKEN = struct.Struct("<I")
_FRAME = struct.Struct("<Q")
_PIPE_BUF: int = getattr(select, "PIPE_BUF", 512)
"""A pipe write of at most this many bytes is all or nothing (Linux 4096, macOS 512)."""


@dataclass(slots=True, frozen=True)
class Failed:
    """An item whose function raised; raised again when its turn to come out arrives."""

    error: BaseException


def map_forked(
    fn: Callable[[T], R], todo: list[T], jobs: int, weights: Sequence[int] | None
) -> Iterator[R]:
    """``map(fn, todo)`` in this process and ``jobs - 1`` forked ones (see map_ordered)."""
    weight = weights if weights is not None else [1] * len(todo)
    try:
        tasks = Tasks(sorted(range(len(todo)), key=lambda i: -weight[i]))
    except NoRoom:
        yield from map(fn, todo)
        return
    children: list[Child[R]] = []
    drain: Drain[R] | None = None
    try:
        for _ in range(jobs - 1):
            children.append(Child.start(fn, todo, tasks, children))
        started: Drain[R] = Drain(children)
        started.start()
        drain = started
        done: dict[int, R | Failed] = {}
        waiting = 0
        for i in tasks:
            try:
                done[i] = fn(todo[i])
            except Exception as exc:
                done[i] = Failed(exc)
                break  # the children take what is left
            for child in children:
                done.update(drain.take(child, block=False))
            waiting = yield from _in_order(done, waiting)
        for child in children:
            done.update(drain.take(child, block=True))
            waiting = yield from _in_order(done, waiting)
        if waiting != len(todo):
            raise WorkerError(f"worker processes returned {waiting} of {len(todo)} results{RETRY}")
    finally:
        tasks.close()
        for child in children:
            # One whose pipe ended has exited: no signal for a pid that may be reused.
            child.reap(kill=not child.ended)
        if drain is not None:
            drain.join()
        else:
            for child in children:
                os.close(child.fd)


def _in_order(done: dict[int, R | Failed], waiting: int) -> Generator[R, None, int]:
    """Yield the outcomes from index ``waiting`` on while they are there; returns the
    next index still missing. A failure is raised in its turn, as ``map`` would."""
    while waiting in done:
        outcome = done.pop(waiting)
        if isinstance(outcome, Failed):
            raise outcome.error
        yield outcome
        waiting += 1
    return waiting


class NoRoom(Exception):
    """The task pipe took no token: the work is done in this process instead."""


class Tasks:
    """Item indices to be taken, shared by forked processes through a pipe.

    The tokens are written before the first fork and the write end closed, so a take is
    one 4-byte read, which the kernel serves whole to one reader, and an empty pipe
    reads as the end. Items go out in batches of consecutive entries of ``order`` when
    there are more items than the pipe holds tokens (a small pipe, e.g. under Linux's
    per-user pipe limits, holds only 8 KiB); nothing is written that could block.
    """

    def __init__(self, order: list[int]) -> None:
        self.fd, write_fd = os.pipe()
        try:
            room = max(1, _pipe_capacity(write_fd) // _TOKEN.size)
            size = -(-len(order) // room) or 1
            self.batches = [order[k : k + size] for k in range(0, len(order), size)]
            written = _fill(write_fd, len(self.batches))
        except BaseException:
            os.close(self.fd)
            raise
        finally:
            os.close(write_fd)
        if written < len(self.batches):
            # The pipe held less than it said: the last token written takes the rest.
            tail = [i for batch in self.batches[written - 1 :] for i in batch]
            self.batches[written - 1 :] = [tail]

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


def _pipe_capacity(fd: int) -> int:
    """Bytes the pipe holds before a writer blocks (Linux tells; elsewhere assume little)."""
    try:
        import fcntl

        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (ImportError, AttributeError, OSError):
        return _PIPE_BUF


def _fill(write_fd: int, count: int) -> int:
    """Write tokens 0..count-1 without ever blocking; returns how many went in.

    Writes of at most PIPE_BUF bytes are whole or refused, so no token is ever cut."""
    os.set_blocking(write_fd, False)
    per_write = max(1, _PIPE_BUF // _TOKEN.size)
    written = 0
    while written < count:
        data = b"".join(_TOKEN.pack(k) for k in range(written, min(count, written + per_write)))
        try:
            sent = os.write(write_fd, data)
        except BlockingIOError:
            break
        if sent != len(data):  # a kernel that cut an atomic write: trust nothing
            raise NoRoom
        written += len(data) // _TOKEN.size
    if written == 0:
        raise NoRoom
    return written


def _widen(fd: int, size: int = 1 << 20) -> None:
    """Let a child write up to ``size`` bytes before it waits: the drain thread needs the
    GIL to take them, which a busy caller hands over only every few milliseconds."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (ImportError, AttributeError, OSError):
        pass  # not Linux, or over the per-user limit: the default pipe still works


class Child(Generic[R]):
    """A forked worker and what has arrived from it (``Drain`` fills ``buffer``)."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        self.buffer = bytearray()
        self.ended = False
        """Its pipe reached the end: every outcome it sent is in ``buffer``."""
        self.reaped = False

    @classmethod
    def start(
        cls, fn: Callable[[T], R], todo: list[T], tasks: Tasks, siblings: list[Child[R]]
    ) -> Child[R]:
        read_fd, write_fd = os.pipe()
        _widen(write_fd)
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            raise
        if pid:
            os.close(write_fd)
            return cls(pid, read_fd)
        status = 0
        try:
            os.close(read_fd)
            # Siblings' result pipes stay open only in the caller: a child holding one
            # would keep a sibling writing on after the caller died.
            for sibling in siblings:
                os.close(sibling.fd)
            with os.fdopen(write_fd, "wb") as out:
                for i in tasks:
                    try:
                        outcome: object = fn(todo[i])
                    except BaseException as exc:  # raised again in the caller, in turn
                        outcome = Failed(_portable(exc))
                    frame = pickle.dumps((i, outcome), pickle.HIGHEST_PROTOCOL)
                    out.write(_FRAME.pack(len(frame)) + frame)
                    out.flush()
                    if isinstance(outcome, Failed):
                        break  # the others take what is left
        except BaseException:
            status = 2  # could not send: the caller sees the pipe end without the rest
        finally:
            # Never return into the caller's code: its finally blocks, atexit, buffers.
            os._exit(status)

    def frames(self) -> dict[int, R | Failed]:
        """The complete outcomes in ``buffer``, removed from it (caller holds the lock)."""
        outcomes: dict[int, R | Failed] = {}
        while len(self.buffer) >= _FRAME.size:
            (size,) = _FRAME.unpack_from(self.buffer)
            if len(self.buffer) < _FRAME.size + size:
                break
            index, outcome = pickle.loads(self.buffer[_FRAME.size : _FRAME.size + size])
            del self.buffer[: _FRAME.size + size]
            outcomes[index] = outcome
        return outcomes

    def reap(self, *, kill: bool = False) -> int:
        """Wait for the process (killing it first when asked); its wait status."""
        if self.reaped:
            return 0
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:  # SIGCHLD ignored: the kernel reaped it already
            status = 0
        self.reaped = True
        return status


class Drain(threading.Thread, Generic[R]):
    """Reads the children's pipes into their buffers until every one has ended."""

    def __init__(self, children: list[Child[R]]) -> None:
        super().__init__(name="cachediag-drain", daemon=True)
        self.children = children
        self.arrived = threading.Condition()

    def run(self) -> None:
        try:
            self._read_all()
        finally:
            # Whatever ended the loop, nobody may wait for a pipe it no longer reads.
            with self.arrived:
                for child in self.children:
                    if not child.ended:
                        child.ended = True
                        os.close(child.fd)
                self.arrived.notify_all()

    def _read_all(self) -> None:
        with selectors.DefaultSelector() as selector:
            for each in self.children:
                selector.register(each.fd, selectors.EVENT_READ, each)
            waiting = len(self.children)
            while waiting:
                for key, _ in selector.select():
                    child: Child[R] = key.data
                    try:
                        data = os.read(child.fd, 1 << 20)
                    except OSError:
                        data = b""
                    with self.arrived:
                        if data:
                            child.buffer += data
                        else:
                            selector.unregister(child.fd)
                            os.close(child.fd)
                            child.ended = True
                            waiting -= 1
                        self.arrived.notify_all()

    def take(self, child: Child[R], *, block: bool) -> dict[int, R | Failed]:
        """The outcomes that have arrived from ``child``; with ``block``, all of them."""
        with self.arrived:
            if block:
                self.arrived.wait_for(lambda: child.ended)
            outcomes = child.frames()
            leftover, ended = bool(child.buffer), child.ended
        if ended and not child.reaped:
            status = child.reap()
            if status != 0:
                raise WorkerError(f"a worker process {_how_it_ended(status)}{RETRY}")
        if ended and leftover:
            raise WorkerError(f"a worker process ended in the middle of a result{RETRY}")
        return outcomes


def _how_it_ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"was killed by {name}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives a pickle round trip, else its traceback as text."""
    try:
        pickle.loads(pickle.dumps(exc, pickle.HIGHEST_PROTOCOL))
    except Exception:
        import traceback

        return RuntimeError("".join(traceback.format_exception(exc)))
    return exc
