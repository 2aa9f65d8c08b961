"""Following every transcript below some paths: which file is whose session, what is new.

The ``Follower`` is told which paths changed (by ``follow.source``, or by a test) and
reads them through each session's ``LiveSession``; it never waits and never imports
watchdog. What it reports goes to ``emit`` as ``follow.events`` records.

What counts as new: in ``from_start`` mode everything; otherwise only what a file gains
after the start. A session is then read up to its start-of-watch sizes quietly (so that
the first new request is classified against its real predecessor) when it first shows
activity, or at the start when it was written to within the last hour. Other agents'
session files (told by their names) go to ``follow.agent_files``, which reports through
this follower's sessions and tallies.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from cachediag.analysis.costs import PriceFn, entry_cost
from cachediag.analysis.ledger import LedgerEntry
from cachediag.analysis.session_analysis import project_name
from cachediag.errors import NotALogError
from cachediag.follow.agent_files import AgentFiles
from cachediag.follow.events import (
    FileRemoved,
    FileReset,
    RebuildSeen,
    RequestSeen,
    SessionRef,
    SessionSeen,
    StreamSeen,
    Tally,
    WatchEvent,
    item_key,
)
from cachediag.follow.files import change_of, unchanged_since
from cachediag.follow.layout import (
    Scope,
    cwd_of,
    files_below,
    head_lines,
    session_of,
    watched_file,
)
from cachediag.follow.live_session import LiveSession
from cachediag.follow.tracked import Tracked
from cachediag.ingest.agents import agent_named
from cachediag.ingest.detect import CLAUDE_CODE, detect_format
from cachediag.model import LineIssue, RequestRecord, StreamItem

RECENT_S = 3600.0
"""Sessions written to within this long before the start are read at the start (the
longest cache TTL: older ones cannot be warm, and are read when they wake up)."""


class Follower:
    def __init__(
        self,
        scopes: list[Scope],
        emit: Callable[[WatchEvent], None],
        price_of: PriceFn,
        *,
        from_start: bool = False,
        clock: Callable[[], float] = time.time,
        stop: threading.Event | None = None,
        on_found: Callable[[dict[str, int]], None] | None = None,
        agents: frozenset[str] | None = None,
    ) -> None:
        self.scopes = scopes
        self.emit = emit
        self.price_of = price_of
        self.from_start = from_start
        self.clock = clock
        self.stop = stop
        """Checked between sessions of a long first read (``--once`` on a large tree)."""
        self.on_found = on_found
        """Told how many session files of each agent were found, before any is read: a
        live watch says what it follows at once, where reading a large history first
        would leave it silent."""
        self.agents = agents
        """Only these agents' files are followed (``--agent``); ``None``: every one."""
        self.others = AgentFiles(self)
        self.sessions: dict[str, Tracked] = {}
        self.tallies: dict[str, Tally] = {}
        self.issues: list[LineIssue] = []
        self._owner: dict[str, str] = {}
        self._at_start: dict[str, tuple[int, int, int]] = {}
        """(dev, ino, size) of each file found at the start; their bytes are not new."""
        self._ignored: set[str] = set()
        self._logs: set[str] = set()

    # -- discovery ---------------------------------------------------------------------

    def folders(self) -> list[str]:
        return sorted({s.folder() for s in self.scopes})

    def start(self) -> None:
        """Find what exists; read it all (``from_start``) or note where it ends."""
        found: list[str] = []
        for scope in self.scopes:
            if scope.is_file:
                found.append(scope.path)
                found.extend(files_below(self.scopes, os.path.splitext(scope.path)[0]))
            else:
                found.extend(files_below(self.scopes, scope.path))
        recent = self.clock() - RECENT_S
        warm: set[str] = set()
        for path in sorted(set(found)):
            if (agent := self._agent_of(path)) != "claude":
                if agent is not None:
                    self.others.add(path, agent, at_start=True)
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not self.from_start:
                self._at_start[path] = (st.st_dev, st.st_ino, st.st_size)
            owner = self._attach(path)
            if owner is not None and (self.from_start or st.st_mtime >= recent):
                warm.add(owner)
        if self.on_found is not None:
            self.on_found(self.found_counts())
        for main in sorted(warm):
            if self._stopping():
                return
            self._update(self.sessions[main])
        self.others.start(recent, self.from_start, self._stopping)

    def _agent_of(self, path: str) -> str | None:
        """Whose file ``path`` is, by its name; ``None``: an agent not followed."""
        agent = agent_named(os.path.basename(path)) or "claude"
        return agent if self.agents is None or agent in self.agents else None

    def found_counts(self) -> dict[str, int]:
        """Session files found per agent (Claude Code's: sessions; opencode: databases)."""
        counts = {"claude": len(self.sessions)} if self.sessions else {}
        for file in self.others.files.values():
            counts[file.agent] = counts.get(file.agent, 0) + 1
        return counts

    def _attach(self, path: str) -> str | None:
        main = self._owner.get(path)
        if main is None:
            main = session_of(path, self.scopes)
            if main is None:
                return None
            self._owner[path] = main
        tracked = self.sessions.get(main)
        if tracked is None:
            project = os.path.basename(os.path.dirname(main)) or None
            ref = SessionRef(os.path.basename(main)[: -len(".jsonl")], project, main)
            tracked = self.sessions[main] = Tracked(ref)
        tracked.files.add(path)
        return main

    # -- changes -----------------------------------------------------------------------

    def changed(self, paths: Iterable[str]) -> None:
        """Read what the given files (or every transcript below given folders) gained."""
        touched: dict[str, Tracked] = {}
        for path in sorted(set(paths)):
            path = os.path.abspath(path)
            if os.path.isdir(path):
                candidates: Iterable[str] = list(files_below(self.scopes, path))
            elif any(s.holds(f := watched_file(path) or path) for s in self.scopes):
                candidates = [f]
            else:
                candidates = [p for p in self._owner if p.startswith(path + os.sep)]
                candidates += [p for p in self.others.files if p.startswith(path + os.sep)]
            for candidate in candidates:
                if (agent := self._agent_of(candidate)) != "claude":
                    if agent is not None and (
                        candidate in self.others.files or os.path.isfile(candidate)
                    ):
                        self.others.add(candidate, agent, at_start=False)
                        self.others.changed(candidate)
                    continue
                is_new = candidate not in self._owner and candidate not in self._at_start
                if is_new and not os.path.isfile(candidate):
                    continue  # created and gone before we looked: nothing to follow
                main = self._attach(candidate)
                if main is None:
                    continue
                tracked = self.sessions[main]
                if is_new and candidate == main and not tracked.shown:
                    self._name_fromhead_lines(tracked)
                    self.show(tracked, new=True)
                touched[main] = tracked
        for main in sorted(touched):
            self._update(touched[main])
        self.others.due()

    def _update(self, tracked: Tracked) -> None:
        if tracked.live is None:
            tracked.live = self._live(tracked)
            self._prime(tracked)
        main = tracked.ref.transcript
        for path in sorted(tracked.files, key=lambda p: (p != main, p)):
            self._read(tracked, path)

    def _live(self, tracked: Tracked) -> LiveSession:
        def landed(item: StreamItem, entry: LedgerEntry | None) -> None:
            self._landed(tracked, item, entry)

        def bad_line(source: str, line: int, reason: str) -> None:
            self.issues.append(LineIssue(source, line, reason))

        from cachediag.proxy.index import live_join

        live = LiveSession(tracked.ref.transcript, landed, bad_line)
        live.enrich = live_join()  # exact causes when the capture proxy saw the requests
        return live

    def _prime(self, tracked: Tracked) -> None:
        """Read quietly what the session's files held at the start."""
        live = tracked.live
        assert live is not None
        tracked.quiet = True
        try:
            for path in sorted(tracked.files):
                known = self._at_start.get(path)
                if known is None or not self._is_log(path):
                    continue
                try:
                    st = os.stat(path)
                    if (st.st_dev, st.st_ino) == known[:2] and st.st_size >= known[2]:
                        live.read(path, until=known[2], stop=self._stopping)
                except OSError:
                    continue
        finally:
            tracked.quiet = False

    def _stopping(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def _read(self, tracked: Tracked, path: str) -> None:
        live = tracked.live
        assert live is not None
        saved = live.files.get(path)
        if not os.path.isfile(path):  # deleted, or something else moved over it (a FIFO)
            if saved is not None and path not in tracked.gone:
                tracked.gone.add(path)
                self.report(tracked, FileRemoved(tracked.ref, self.clock(), path))
            return
        if saved is not None:
            if unchanged_since(saved, path):
                return
            why = change_of(path, saved)
            if why == "gone":
                return  # gone between the checks: the next event says so
            if why is not None:
                self._reset(tracked, path, why)
                return
        if not self._is_log(path):
            return
        tracked.gone.discard(path)
        try:
            live.read(path, stop=self._stopping)
        except OSError:
            return  # gone between the check and the read: the next event says so

    def _reset(self, tracked: Tracked, path: str, reason: str) -> None:
        """Read the whole session again; ``known`` keeps what was reported from repeating."""
        self.report(tracked, FileReset(tracked.ref, self.clock(), path, reason))
        tracked.gone.clear()
        self._logs.discard(path)
        self._ignored.discard(path)
        tracked.live = self._live(tracked)
        main = tracked.ref.transcript
        for other in sorted(tracked.files, key=lambda p: (p != main, p)):
            if os.path.isfile(other) and self._is_log(other):
                try:
                    tracked.live.read(other, stop=self._stopping)
                except OSError:
                    continue

    def _name_fromhead_lines(self, tracked: Tracked) -> None:
        """A new session is announced before its lines are read: its project is named,
        as everywhere else, by the path its first lines give as their ``cwd``."""
        for raw in head_lines(tracked.ref.transcript) or []:
            cwd = cwd_of(raw)
            if cwd is not None:
                tracked.ref = replace(tracked.ref, project=project_name(cwd, tracked.ref.project))
                return

    def _is_log(self, path: str) -> bool:
        """False for a file that is not a Claude Code transcript (noted once, then left)."""
        if path in self._logs:
            return True
        if path in self._ignored:
            return False
        complete = head_lines(path)
        if complete is None:
            return False
        if not any(raw.strip() for raw in complete):
            return True  # nothing to judge yet; the reader waits for whole lines anyway
        try:
            fmt = detect_format(complete, path)
        except NotALogError as exc:
            reason = str(exc).removeprefix(f"{path}: ")
        else:
            if fmt == CLAUDE_CODE:
                self._logs.add(path)
                return True
            reason = f"a {fmt} log, not a Claude Code transcript"
        self._ignored.add(path)
        self.issues.append(LineIssue(path, 0, reason))
        return False

    # -- reporting ---------------------------------------------------------------------

    def _landed(self, tracked: Tracked, item: StreamItem, entry: LedgerEntry | None) -> None:
        live = tracked.live
        assert live is not None
        named = project_name(live.log.cwd, tracked.ref.project)
        if named != tracked.ref.project:  # the transcript names its path: events say it
            tracked.ref = replace(tracked.ref, project=named)
            tally = self.tallies.get(tracked.ref.key)
            if tally is not None:  # and so does its summary
                tally.session = tracked.ref
        key = item_key(item)
        first_time = key not in tracked.known
        tracked.known.add(key)
        new_stream = item.stream not in tracked.streams
        tracked.streams.add(item.stream)
        if tracked.quiet or not first_time:
            return
        stream = live.log.streams[item.stream]
        if new_stream:
            self.report(
                tracked, StreamSeen(tracked.ref, item.at, stream.id, stream.kind, stream.source)
            )
        if entry is None:
            assert not isinstance(item, RequestRecord)
            self.report(tracked, RebuildSeen(tracked.ref, item))
            return
        seen = RequestSeen(tracked.ref, stream.kind, entry, entry_cost(entry, self.price_of))
        self.report(tracked, seen)
        self.tally(tracked).add(seen)

    def tally(self, tracked: Tracked) -> Tally:
        key = tracked.ref.key
        found = self.tallies.get(key)
        if found is None:
            found = self.tallies[key] = Tally(tracked.ref)
        return found

    def show(self, tracked: Tracked, *, new: bool) -> None:
        tracked.shown = True
        self.tally(tracked)
        self.emit(SessionSeen(tracked.ref, self.clock(), new))

    def report(self, tracked: Tracked, event: WatchEvent) -> None:
        if not tracked.shown:
            self.show(tracked, new=False)
        if isinstance(event, RebuildSeen):
            self.tally(tracked).compactions += 1
        self.emit(event)

    def all_issues(self) -> list[LineIssue]:
        """Lines skipped in transcripts, then in other agents' files (as last read)."""
        return [*self.issues, *self.others.all_issues()]

    def summaries(self) -> list[Tally]:
        """One tally per session that showed activity, in the order they did."""
        return list(self.tallies.values())
