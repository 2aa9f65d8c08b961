"""The recorder's worker process: record lines built from exchanges sent over a pipe.

A 200k-token request is about a megabyte. Through a process pool it would be joined into
one bytes object on the event loop, pickled into a second copy by a feeder thread and
written by it, each step holding the interpreter lock the relay needs. Here the chunks
the forwarder relayed cross the pipe as they are, each one ``send_bytes`` (a write that
releases the lock), and only the small rest of the exchange is pickled. One process, one
pipe, driven by the recorder's thread alone: a request, then its line, in order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
from multiprocessing import get_context
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cachediag.proxy.exchange import Exchange

_LINE, _ERROR = b"L", b"E"
JOIN_TIMEOUT_S = 10.0


class WorkerGone(Exception):
    """The worker process died, never started, or closed its pipe."""


class LineWorker:
    """A spawned process that turns each exchange into its record line."""

    def __init__(self) -> None:
        ctx = get_context("spawn")
        self._conn, child = ctx.Pipe(duplex=True)
        self._proc = ctx.Process(
            target=serve_lines, args=(child,), name="cachediag-recorder", daemon=True
        )
        self._proc.start()
        child.close()

    def line(self, ex: Exchange) -> bytes | None:
        """The record line of ``ex``; ``None`` when building it raised in the worker (the
        caller builds it itself to see why). ``WorkerGone`` when the worker is gone."""
        try:
            self._conn.send(dataclasses.replace(ex, request_parts=[], chunks=[]))
            # The answer's pieces (one per SSE event, a few KB in all) cross as one.
            for parts in (ex.request_parts, [b"".join(ex.chunks)]):
                for part in parts:
                    if part:  # an empty one ends the list
                        self._conn.send_bytes(part)
                self._conn.send_bytes(b"")
            reply = self._conn.recv_bytes()
        except (OSError, EOFError) as exc:
            raise WorkerGone from exc
        return reply[1:] if reply[:1] == _LINE else None

    def close(self) -> None:
        self._conn.close()  # the worker reads the end of its pipe and returns
        self._proc.join(JOIN_TIMEOUT_S)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join()


def _quiet() -> None:
    # Ctrl-C reaches the whole process group; the parent decides when recording stops,
    # and the worker must live to build the records still queued.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Records can wait; answers cannot: on a busy machine the relay gets the CPU first.
    with contextlib.suppress(OSError):
        os.nice(10)


def _parts(conn: Connection) -> list[bytes]:
    parts = []
    while part := conn.recv_bytes():
        parts.append(part)
    return parts


def serve_lines(conn: Connection) -> None:
    """The worker's loop: an exchange in, its line (or an error mark) out, until EOF."""
    from cachediag.proxy.recording import record_line

    _quiet()
    while True:
        try:
            ex = conn.recv()
            ex.request_parts = _parts(conn)
            ex.chunks = _parts(conn)
        except (EOFError, OSError):
            return
        try:
            reply = _LINE + record_line(ex)
        except Exception:  # the parent builds this one itself and reports it
            reply = _ERROR
        conn.send_bytes(reply)
