"""Other agents' session files in a watch: Codex rollouts, Gemini CLI chats, opencode's
database.

Their readers read a file whole (``ingest.agents.read_logs``: a rollout's settings and a
chat's history run from its first line; opencode's database is read as one snapshot,
read-only and in one transaction, never locked against the agent: ``ingest.opencode_db``).
So a changed file is read again whole and each of its sessions counted again by its
provider's ledger (``analysis.ledgers.analyze_log``); what is reported is what had not
been before (by item key, as after a reset of a transcript). A file whose last read took
``t`` is read again no sooner than ``READ_SPACING`` times ``t`` later (a change meanwhile
waits for ``due``): opencode rewrites its database many times a second while it streams,
and reading a large one at that rate would take the whole core.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from cachediag.analysis.costs import entry_cost
from cachediag.analysis.ledger import LedgerEntry
from cachediag.analysis.session_analysis import SessionAnalysis, project_name
from cachediag.follow.events import (
    FileRemoved,
    ItemKey,
    RebuildSeen,
    RequestSeen,
    SessionRef,
    StreamSeen,
    item_key,
)
from cachediag.follow.layout import JOURNALS
from cachediag.follow.tracked import Tracked
from cachediag.model import MAIN_STREAM, LineIssue, RequestRecord, SessionLog, StreamItem

if TYPE_CHECKING:
    from cachediag.analysis.costs import PriceFn
    from cachediag.follow.events import Tally, WatchEvent

READ_SPACING = 9.0
"""Reads of one file take at most a tenth of the time (one part reading, nine waiting)."""

SETTLED_S = 0.1
"""A file's times tick coarsely (the kernel's clock, milliseconds): one looked at within
this long of its last write may change again with the same size and times (a database's
write-ahead log is written over in place), so the same look does not prove it unchanged."""

Signature = tuple[tuple[int, int, int, int], ...]


def signature(path: str) -> Signature | None:
    """What tells the file (and its journals) unchanged; ``None`` when it is gone."""
    found = []
    for p in (path, *(path + j for j in JOURNALS)):
        try:
            st = os.stat(p)
        except OSError:
            if p == path:
                return None
            continue
        found.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(found)


def last_written(path: str) -> float:
    """When the file or its journal was last written (0 when gone)."""
    times = []
    for p in (path, *(path + j for j in JOURNALS)):
        try:
            times.append(os.stat(p).st_mtime)
        except OSError:
            continue
    return max(times, default=0.0)


class Reporter(Protocol):
    """What reports a session's events (``follow.follower.Follower``)."""

    price_of: PriceFn

    def clock(self) -> float: ...
    def report(self, tracked: Tracked, event: WatchEvent) -> None: ...
    def show(self, tracked: Tracked, *, new: bool) -> None: ...
    def tally(self, tracked: Tracked) -> Tally: ...


@dataclass(slots=True)
class AgentFile:
    """One session file of another agent, as the watch knows it."""

    path: str
    agent: str
    at_start: bool
    """Found at the start (so its sessions are not new)."""
    since: float | None = None
    """Not read at the start: what it held before this moment is not new."""
    seen: Signature | None = None
    settled: bool = False
    """``seen`` was taken well after the file's last write: the same look is no change."""
    sessions: set[str] = field(default_factory=set)
    """The keys of its sessions (``SessionRef.key``)."""
    found: tuple[float, Signature | None] | None = None
    """When the watch found it at the start, and what it was then."""
    reads: int = 0
    """Reads so far: a session first seen after the first is new in this watch."""
    next_read: float = 0.0
    pending: bool = False


class AgentFiles:
    """The other agents' files of a ``Follower``, reported through its sessions and
    tallies (``Follower.report``, ``Follower.tally``)."""

    def __init__(self, follower: Reporter, monotonic: Callable[[], float] = time.monotonic):
        self.follower = follower
        self.monotonic = monotonic
        self.files: dict[str, AgentFile] = {}
        self.sessions: dict[str, Tracked] = {}
        self.issues: dict[str, list[LineIssue]] = {}
        """The lines the last read of each file skipped (a file read again says them once)."""

    def add(self, path: str, agent: str, *, at_start: bool) -> AgentFile:
        found = self.files.get(path)
        if found is None:
            found = self.files[path] = AgentFile(path, agent, at_start)
            if at_start:
                found.found = (self.follower.clock(), signature(path))
        return found

    def start(self, recent: float, from_start: bool, stopping: Callable[[], bool]) -> None:
        """What the files held at the start: reported (``from_start``), read quietly
        (written to since ``recent``), or left for their first change."""
        for path in sorted(self.files):
            if stopping():
                return
            file = self.files[path]
            found_at, found_as = file.found or (self.follower.clock(), None)
            if from_start:
                self.read(file)
            elif last_written(path) >= recent and signature(path) == found_as:
                self.read(file, quiet=True)
            else:
                # Not read at the start, or written to since it was found (Claude Code's
                # transcripts are read up to the size they had then; a whole file cannot
                # be): what is older than that moment is not new.
                file.since = found_at
                if last_written(path) >= recent:
                    self.read(file)

    def changed(self, path: str) -> None:
        file = self.files[path]
        if self.monotonic() < file.next_read:
            file.pending = True  # read when ``due``
            return
        self.read(file)

    def due(self) -> None:
        """Read the files whose change waited for their spacing."""
        now = self.monotonic()
        for file in list(self.files.values()):
            if file.pending and now >= file.next_read:
                self.read(file)

    def flush(self) -> None:
        """Read every file whose change is still waiting (the watch is ending)."""
        for file in list(self.files.values()):
            if file.pending:
                self.read(file)

    @property
    def waiting(self) -> bool:
        return any(f.pending for f in self.files.values())

    def read(self, file: AgentFile, *, quiet: bool = False) -> None:
        from cachediag.analysis.ledgers import analyze_log
        from cachediag.ingest.agents import is_session, read_logs

        file.pending = False
        looked_at = time.time()
        sig = signature(file.path)
        if sig is None:
            self._removed(file)
            return
        if sig == file.seen and file.settled:
            return
        file.settled = looked_at - max(entry[2] for entry in sig) / 1e9 > SETTLED_S
        began = self.monotonic()
        try:
            logs = read_logs(file.agent, Path(file.path))
        except OSError:
            return  # gone between the look and the read: the next event says so
        file.seen = sig
        self.issues[file.path] = [i for log in logs for i in (*log.issues, *log.unreadable)]
        now = self.follower.clock()
        analysed = [(log, analyze_log(log, now)) for log in logs if is_session(log)]
        # The spacing is the reading's: not what reporting costs (the first price
        # lookup loads the price tables, once), nor a first read's (it loads the reader
        # and the ledger, and meets cold caches: seconds on a loaded machine).
        done = self.monotonic()
        if file.reads:
            file.next_read = done + READ_SPACING * (done - began)
        for log, a in analysed:
            self._landed(file, log, a, quiet)
        file.reads += 1

    def _removed(self, file: AgentFile) -> None:
        if file.seen is None:
            return
        file.seen = None
        for key in sorted(file.sessions):
            tracked = self.sessions[key]
            event = FileRemoved(tracked.ref, self.follower.clock(), file.path)
            self.follower.report(tracked, event)

    def _tracked(self, file: AgentFile, log: SessionLog) -> tuple[Tracked, bool]:
        """The session's state, and whether it is new in this watch."""
        project = project_name(log.cwd, log.project)
        ref = SessionRef(log.session_id, project, log.source, file.agent)
        tracked = self.sessions.get(ref.key)
        is_new = tracked is None
        if tracked is None:
            tracked = self.sessions[ref.key] = Tracked(ref)
        elif tracked.ref.project != project:
            tracked.ref = ref
        tracked.files.add(file.path)
        file.sessions.add(ref.key)
        return tracked, is_new

    def _landed(self, file: AgentFile, log: SessionLog, a: SessionAnalysis, quiet: bool) -> None:
        tracked, first_seen = self._tracked(file, log)
        if first_seen and not quiet and (file.reads or not file.at_start):
            # Appeared since the start: in a new file, or one more in a file read before.
            self.follower.show(tracked, new=True)
        for item, entry in _items(a):
            key = _key(item)
            if key in tracked.known:
                continue
            tracked.known.add(key)
            new_stream = item.stream not in tracked.streams
            tracked.streams.add(item.stream)
            if quiet or (file.since is not None and item.at < file.since):
                continue
            stream = log.streams[item.stream]
            if new_stream:
                seen = StreamSeen(tracked.ref, item.at, stream.id, stream.kind, stream.source)
                self.follower.report(tracked, seen)
            if entry is None:
                assert not isinstance(item, RequestRecord)
                self.follower.report(tracked, RebuildSeen(tracked.ref, item))
                continue
            cost = entry_cost(entry, self.follower.price_of)
            request = RequestSeen(tracked.ref, stream.kind, entry, cost)
            self.follower.report(tracked, request)
            self.follower.tally(tracked).add(request)

    def all_issues(self) -> list[LineIssue]:
        return [issue for path in sorted(self.issues) for issue in self.issues[path]]


def _key(item: StreamItem) -> ItemKey:
    """``item_key`` without the stream for a request with an id: a reader may place a
    request in another stream once later lines say what it was (Codex's compaction
    call, named by the ``compacted`` line after it), and it is not reported twice."""
    key = item_key(item)
    return key[1:] if isinstance(item, RequestRecord) and key[1] != "line" else key


def _items(a: SessionAnalysis) -> list[tuple[StreamItem, LedgerEntry | None]]:
    """Every item of every stream with its ledger entry (``None``: an announced rebuild),
    in time order, main's first at the same instant."""
    found: list[tuple[StreamItem, LedgerEntry | None]] = []
    for stream in a.streams:
        entries = iter(stream.entries)
        for item in stream.log.items:
            found.append((item, next(entries) if isinstance(item, RequestRecord) else None))
    found.sort(key=lambda pair: (pair[0].at, pair[0].stream != MAIN_STREAM))
    return found
