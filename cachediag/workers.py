"""Forked worker processes: the machinery behind ``parallel.map_ordered``.

Three pieces, each with one job:

- ``Tasks``: item indices in a pipe, taken one at a time by every process, so a process
  that finishes early takes more;
- ``Child``: a forked process mapping a function over the items it takes, sending each
  result back as a length-prefixed pickle on a pipe of its own;
- ``Drain``: a thread of the calling process that reads every child's pipe as data
  arrives, so no child ever waits on a full pipe while the caller works on its own items.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from cachediag.errors import WorkerError

T = TypeVar("T")
R = TypeVar("R")

RETRY = "; --jobs 1 reads everything in one process"
_TOKEN = struct.Struct("<I")
_FRAME = struct.Struct("<Q")
_PIPE_BUF = 4096
"""POSIX: a pipe write of at most this many bytes is all or nothing (Linux: 4096)."""


def _pipe_capacity(fd: int) -> int:
    """Bytes the pipe holds before a writer blocks (Linux tells; elsewhere assume 4 KiB)."""
    try:
        import fcntl

        return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    except (ImportError, AttributeError, OSError):
        return _PIPE_BUF


def _widen(fd: int, size: int = 1 << 20) -> None:
    """Let a child write up to ``size`` bytes before it waits: the drain thread needs the
    GIL to take them, which a busy caller hands over only every few milliseconds."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (ImportError, AttributeError, OSError):
        pass  # not Linux, or over the per-user limit: the default pipe still works


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
            written = self._fill(write_fd, len(self.batches))
        finally:
            os.close(write_fd)
        if written < len(self.batches):
            # The pipe held less than it said: the last token written takes the rest.
            tail = [i for batch in self.batches[written - 1 :] for i in batch]
            self.batches[written - 1 :] = [tail]

    @staticmethod
    def _fill(write_fd: int, count: int) -> int:
        """Write tokens 0..count-1 without ever blocking; returns how many went in."""
        os.set_blocking(write_fd, False)
        per_write = _PIPE_BUF // _TOKEN.size
        written = 0
        while written < count:
            chunk = range(written, min(count, written + per_write))
            try:
                os.write(write_fd, b"".join(_TOKEN.pack(k) for k in chunk))
            except BlockingIOError:
                break
            written += len(chunk)
        if written == 0:
            raise WorkerError(f"cannot hand out work: the task pipe holds nothing{RETRY}")
        return written

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


class Child(Generic[R]):
    """A forked worker and what has arrived from it (``Drain`` fills ``buffer``)."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        self.buffer = bytearray()
        self.ended = False
        """Its pipe reached the end: every result it sent is in ``buffer``."""
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
                        frame = pickle.dumps((i, True, fn(todo[i])), pickle.HIGHEST_PROTOCOL)
                    except BaseException as exc:  # raised again in the caller
                        frame = pickle.dumps((i, False, _portable(exc)), pickle.HIGHEST_PROTOCOL)
                        status = 1
                    out.write(_FRAME.pack(len(frame)) + frame)
                    out.flush()
                    if status:
                        break
        except BaseException:
            status = 2
        finally:
            # Never return into the caller's code: its finally blocks, atexit, buffers.
            os._exit(status)

    def frames(self) -> dict[int, R]:
        """The complete results in ``buffer``, removed from it (caller holds the lock)."""
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
        return results

    def reap(self, *, kill: bool = False) -> int:
        """Wait for the process (killing it first when asked); its wait status."""
        if self.reaped:
            return 0
        self.reaped = True
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:  # SIGCHLD ignored: the kernel reaped it already
            return 0
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

    def take(self, child: Child[R], *, block: bool) -> dict[int, R]:
        """The results that have arrived from ``child``; with ``block``, all of them."""
        with self.arrived:
            if block:
                self.arrived.wait_for(lambda: child.ended)
            results = child.frames()  # raises a worker's own exception, if it sent one
            leftover, ended = bool(child.buffer), child.ended
        if ended and not child.reaped:
            status = child.reap()
            if status != 0:
                raise WorkerError(f"a worker process {_how_it_ended(status)}{RETRY}")
        if ended and leftover:
            raise WorkerError(f"a worker process ended in the middle of a result{RETRY}")
        return results


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
