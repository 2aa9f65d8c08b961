"""Where ``watch`` learns that files changed, and the loop that reads them.

``run`` takes a stop event and a ``ChangeSource``: ``WatchdogSource`` uses the operating
system's file events (inotify, FSEvents, kqueue, ReadDirectoryChanges through watchdog);
tests pass a scripted source instead (the way samuelcolvin/watchfiles swaps its OS
watcher for a mock). watchdog is imported only when a ``WatchdogSource`` opens.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from types import FrameType
from typing import Any, Protocol

from cachediag.follow.follower import Follower
from cachediag.follow.layout import watched_file

STOP_CHECK_S = 0.25
"""How often an idle loop looks at the stop event: the only wake-ups without a change,
and the longest a stop (Ctrl-C, SIGTERM) waits."""


class ChangeSource(Protocol):
    def open(self, folders: list[str]) -> None:
        """Start watching ``folders`` (recursively) before they are scanned."""

    def wait(self, timeout_s: float) -> set[str]:
        """Paths changed since the last call (files or folders; created, written, moved
        or deleted); an empty set when ``timeout_s`` passed without a change."""

    def close(self) -> None: ...


class Interrupted(Exception):
    """Raised by a signal handler while the loop is idle (``Loop.idle``): the wait ends
    at once instead of at its next look at the stop event."""


class Loop:
    """What a signal handler may know about the loop: whether it is only waiting (so that
    interrupting it loses nothing)."""

    idle = False


STOPPING_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


@contextlib.contextmanager
def stopped_by_signals(stop: threading.Event, loop: Loop) -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP (the terminal closed) set ``stop`` instead of killing
    the process, so the watch ends cleanly (summary, exit 0); a loop that is only waiting
    is woken at once (``Interrupted``). The previous handlers are put back after."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()
        if loop.idle:
            raise Interrupted

    previous: dict[int, Any] = {}
    for name in STOPPING_SIGNALS:
        sig = getattr(signal, name, None)
        # Not possible outside the main thread (a test running the command in a thread).
        if sig is not None:
            with contextlib.suppress(ValueError):
                previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run(
    follower: Follower,
    source: ChangeSource,
    stop: threading.Event,
    loop: Loop | None = None,
    say: Any = None,
) -> None:
    """Follow until ``stop`` is set; the source is watching before the first scan, so no
    change between the two is lost. A watched folder that is deleted is waited for; when
    it is back, the source is opened again and the folder read (``say`` tells the user)."""
    loop = loop or Loop()
    tell = say or (lambda text: print(f"cachediag: {text}", file=sys.stderr, flush=True))
    folders = follower.folders()
    source.open(folders)
    missing: set[str] = set()
    try:
        follower.start()
        while not stop.is_set():
            try:
                loop.idle = True
                changed = source.wait(STOP_CHECK_S)
            except Interrupted:
                break
            finally:
                loop.idle = False
            gone = {f for f in folders if not os.path.isdir(f)}
            for folder in sorted(gone - missing):
                tell(f"{folder} was removed; waiting for it to come back")
            back = missing - gone
            missing = gone
            if back:
                source.close()  # its watches went with the folder
                source.open([f for f in folders if f not in gone])
                for folder in sorted(back):
                    tell(f"{folder} is back; following it again")
                changed = {*changed, *back}
            if changed or follower.others.waiting:
                # Another agent's file changed too soon after its last read: read now.
                follower.changed(changed)
        follower.others.flush()  # what changed last is in the summary
    finally:
        source.close()


class WatchdogSource:
    """File-system events through watchdog, debounced: the first change of a burst is
    delivered once the burst has been quiet for ``quiet_s``, or ``max_delay_s`` after it
    began, whichever is first (a line appended in several writes is read once)."""

    def __init__(self, quiet_s: float = 0.02, max_delay_s: float = 0.1) -> None:
        self.quiet_s = quiet_s
        self.max_delay_s = max_delay_s
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._last_at = 0.0
        self._ready = threading.Event()
        self._observer: Any = None
        self.fell_back = False
        """The native observer could not start (e.g. the inotify watch limit) and the
        polling one is used."""

    def note(self, *paths: str) -> None:
        with self._lock:
            self._pending.update(paths)
            self._last_at = time.monotonic()
            self._ready.set()

    def open(self, folders: list[str]) -> None:
        from watchdog.events import (
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileSystemEvent,
            FileSystemEventHandler,
        )
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        # watchdog warns when a folder is created together with its parent (mkdir -p) and
        # it sees it twice; it keeps one watch, which is all that is needed here.
        warnings.filterwarnings("ignore", "Callback with id", RuntimeWarning, "watchdog")
        # Its inotify thread logs an error when a folder it watched goes away as it stops
        # (a deleted root, or the end of the watch); the loop says what matters itself.
        logging.getLogger("watchdog").addHandler(logging.NullHandler())

        # Opening and closing a file is not a change (and the follower's own reads would
        # otherwise wake it up again, for ever).
        kinds: list[type[FileSystemEvent]] = [
            FileCreatedEvent,
            FileModifiedEvent,
            FileDeletedEvent,
            FileMovedEvent,
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
        ]
        note = self.note

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                raw = [event.src_path, getattr(event, "dest_path", "")]
                paths = [p if isinstance(p, str) else os.fsdecode(p) for p in raw if p]
                # Transcripts and other agents' session files (a database's journal
                # stands for the database), and folders (a new one may hold some
                # already); agents write other files there too (tool results, todos).
                files = [watched_file(p) for p in paths] if not event.is_directory else paths
                wanted = [p for p in files if p is not None]
                if wanted:
                    note(*wanted)

        def start(observer: Any) -> Any:
            for folder in folders:
                observer.schedule(Handler(), folder, recursive=True, event_filter=kinds)
            observer.start()
            return observer

        try:
            self._observer = start(Observer())
        except OSError as exc:
            self.fell_back = True
            print(
                f"cachediag: file events unavailable ({exc.strerror or exc}); "
                "polling every 2 s instead",
                file=sys.stderr,
            )
            self._observer = start(PollingObserver(timeout=2))

    def wait(self, timeout_s: float) -> set[str]:
        if not self._ready.wait(timeout_s):
            return set()
        began = time.monotonic()
        while True:
            with self._lock:
                quiet_for = time.monotonic() - self._last_at
            waited = time.monotonic() - began
            if quiet_for >= self.quiet_s or waited >= self.max_delay_s:
                break
            time.sleep(min(self.quiet_s - quiet_for, self.max_delay_s - waited))
        with self._lock:
            paths, self._pending = self._pending, set()
            self._ready.clear()
        return paths

    def close(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
