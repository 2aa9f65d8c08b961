"""From paths (or stdin) to analysed sessions: the library call behind ``analyze``."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Generic, TypeVar

from cachediag.analysis.ledgers import analyze_log
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.errors import CachediagError, InputError
from cachediag.ingest.agents import AGENTS, agent_of, session_folders
from cachediag.ingest.discover import SessionSource, claude_projects_dirs, discover
from cachediag.ingest.reader import Claims, read_sessions, read_stdin
from cachediag.ingest.skipped import Skipped
from cachediag.model import LineIssue, SessionLog
from cachediag.parallel import map_ordered, total_bytes, workers_for


def stdin_is_piped(stream: IO[bytes] | None = None) -> bool:
    """True when data is piped or redirected in (not a terminal, not /dev/null)."""
    try:
        fd = (stream or sys.stdin.buffer).fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


Agents = frozenset[str] | None
"""The agents a run reads (``ingest.agents`` names); ``None``: every agent found."""


def default_paths(agents: Agents = frozenset({"claude"})) -> list[Path]:
    """The history with no path given: every Claude Code history folder that exists
    (``claude_projects_dirs``) and each other agent's session files (``ingest.agents``:
    its home's override, else under ``$HOME``), for the agents asked for."""
    wanted = [name for name in AGENTS if agents is None or name in agents]
    found: list[Path] = []
    tried: list[str] = []
    for name in wanted:
        if name == "claude":
            places = claude_projects_dirs()
            found += [p for p in places if p.is_dir()]
            via = " ($CLAUDE_CONFIG_DIR)" if os.environ.get("CLAUDE_CONFIG_DIR", "").strip() else ""
            tried.append(", ".join(str(p) for p in places) + via)
        else:
            found += session_folders(name)
            agent = AGENTS[name]
            tried.append(f"{agent.home()}/{agent.pattern}")
    if not found:
        if "claude" in wanted:
            whose = "Claude Code history found" + (
                "" if wanted == ["claude"] else " (nor another agent's)"
            )
        else:
            whose = f"{' or '.join(wanted)} sessions found"
        raise InputError(
            f"no path given and no {whose}; tried {'; '.join(tried)} "
            "(pass a transcript, a folder, or pipe a log on stdin)"
        )
    return found


T = TypeVar("T")
Enrich = Callable[[SessionLog], SessionLog]


def _same(a: SessionAnalysis) -> SessionAnalysis:
    return a


@dataclass(slots=True)  # not frozen: one per session (cachediag.analysis says why)
class SourceResult(Generic[T]):
    """One source read: what ``render`` made of it, its skipped lines, or why not."""

    value: T | None
    issues: list[LineIssue]
    passed_over: bool = False
    """A stray file in a scanned folder (e.g. history.jsonl): not a session."""
    error: str | None = None
    unreadable: list[LineIssue] = field(default_factory=list)
    """Files of the session that could not be read (the rest of it was)."""
    agent: str = "claude"
    """Whose session it is (``ingest.agents.agent_of`` its format)."""


def analyze_source(
    src: SessionSource,
    now: float,
    render: Callable[[SessionAnalysis], T],
    claimed: Claims | None = None,
    enrich: Enrich | None = None,
    seen: set[tuple[str, str, str]] | None = None,
) -> list[SourceResult[T]]:
    """Read, analyse and render one source's sessions (an OpenTelemetry export holds many).

    Rendering where the session was read matters: a JSON line travels back from a worker
    process far cheaper than the analysis it was made from.
    """
    try:
        logs = read_sessions(src, claimed)
    except CachediagError as exc:
        return [SourceResult(None, [], error=str(exc))]
    results: list[SourceResult[T]] = []
    for log in logs:
        if src.reader is not None and seen is not None:
            # Gemini CLI's reader gives a resumed session whole for each of its files.
            key = (log.format, log.session_id, log.source)
            if key in seen:
                continue
            seen.add(key)
        if enrich is not None:
            log = enrich(log)
        unreadable = log.unreadable
        if len(unreadable) == len(src.paths):
            results.append(SourceResult(None, log.issues, unreadable=unreadable))
        elif log.main_unreadable and not any(s.items for s in log.streams.values()):
            results.append(SourceResult(None, log.issues, passed_over=True, unreadable=unreadable))
        else:
            value = render(analyze_log(log, now))
            agent = agent_of(log.format)
            results.append(SourceResult(value, log.issues, unreadable=unreadable, agent=agent))
    return results


def analyze_group(
    group: list[SessionSource],
    now: float,
    render: Callable[[SessionAnalysis], T],
    enrich: Enrich | None = None,
) -> list[SourceResult[T]]:
    """The sessions of one project folder, in one process, sharing what they have read.

    A continued session's file starts with copies of the earlier session's responses;
    reading the files oldest first (by modification time) lets each response count once,
    in the session that made it. Results come back in the group's own order.
    """
    claimed: Claims = {}
    seen: set[tuple[str, str, str]] = set()
    order = sorted(range(len(group)), key=lambda i: (_mtime(group[i]), i))
    # Memory: the claims hold one key per response of the group, never its lines.
    results: dict[int, list[SourceResult[T]]] = {}
    for i in order:
        results[i] = analyze_source(group[i], now, render, claimed, enrich, seen)
    return [result for i in range(len(group)) for result in results[i]]


def _mtime(src: SessionSource) -> float:
    """When the session was first written: the oldest of its copies (a copy made later
    by ``cp`` is newer than the session it holds)."""
    times = []
    for path in src.mains or [a.path for a in src.agents[:1]]:
        st = src.stat(path)
        if st is not None:
            times.append(st[1])
    return min(times, default=0.0)


def project_groups(sources: list[SessionSource]) -> list[list[SessionSource]]:
    """Sources that may share responses, together: the sessions of one folder (a
    continued session's file starts with copies of the earlier one's responses), and
    every folder holding a copy of one of them. Groups come in the order of their
    first source; a tree without copies gives one group per folder, as ``discover``
    found them."""
    parent: dict[str, str] = {}

    def root(folder: str) -> str:
        while parent.setdefault(folder, folder) != folder:
            parent[folder] = parent[parent[folder]]
            folder = parent[folder]
        return folder

    folders = [_folders(src) for src in sources]
    for mine in folders:
        first = root(mine[0])
        for other in mine[1:]:
            top = root(other)
            if top != first:
                parent[top] = first
    groups: dict[str, list[SessionSource]] = {}
    for src, mine in zip(sources, folders, strict=True):
        groups.setdefault(root(mine[0]), []).append(src)
    return list(groups.values())


def _folders(src: SessionSource) -> list[str]:
    """The project folders holding a file of ``src``, as ``str`` of their ``Path``: a
    tree of 10,000 sessions spent more on building and hashing parent paths than on
    grouping them."""
    found = [_parent(p) for p in src.mains]
    for agent in src.agents:
        parts = agent.path.parts
        if "subagents" in parts[:-1]:
            # <project>/<session>/subagents/[workflows/...]/agent-*.jsonl
            idx = len(parts) - 1 - parts[::-1].index("subagents")
            found.append(str(Path(*parts[: idx - 1])))
        else:
            found.append(_parent(agent.path))
    if len(found) > 1:
        return list(dict.fromkeys(found))
    return found or [str(Path(src.key))]


def _parent(path: Path) -> str:
    """``str(path.parent)`` without building it: a ``Path`` is kept normalised, so its
    text's folder part is its parent's text (``.`` for a bare name)."""
    return os.path.dirname(str(path)) or "."


@dataclass(slots=True)
class Run:
    """What one run read: its sessions as they are analysed, and errors kept for the end."""

    errors: list[str] = field(default_factory=list)
    issues: list[LineIssue] = field(default_factory=Skipped)
    """Lines skipped, and files passed over as not being sessions (line 0): counted, the
    first few kept (``Skipped``)."""
    unreadable: list[LineIssue] = field(default_factory=list)
    """Files and folders that could not be read (vanished, no permission): line 0."""
    sessions_read: int = 0
    """Sessions that gave a result (any of their files could be read)."""
    on_progress: Callable[[int, int], None] | None = None
    """Called with (sessions read, sessions found) after each session file, and with
    (0, sessions found) once they are found, before any is read."""
    jobs: int | None = None
    """Worker processes; ``None``: one per core when the input is large."""
    enrich: Enrich | None = None
    """Applied to each session read, before analysis (e.g. joining capture records);
    must pickle, like ``render``."""
    agents: Agents = None
    """Only these agents' sessions (``--agent``); ``None``: every session read."""
    agents_found: set[str] = field(default_factory=set)
    """Whose files the paths hold, as their names say (``SessionSource.reader``), known
    once they are found, before the first session is yielded: whether rows name it."""

    def sessions(
        self, paths: list[Path], stdin: IO[bytes] | None, now: float
    ) -> Iterator[SessionAnalysis]:
        return self.rendered(paths, stdin, now, _same)

    def rendered(
        self,
        paths: list[Path],
        stdin: IO[bytes] | None,
        now: float,
        render: Callable[[SessionAnalysis], T],
    ) -> Iterator[T]:
        """``render`` of every session, in input order; ``render`` must pickle."""
        return (value for _, value in self.tagged(paths, stdin, now, render))

    def tagged(
        self,
        paths: list[Path],
        stdin: IO[bytes] | None,
        now: float,
        render: Callable[[SessionAnalysis], T],
    ) -> Iterator[tuple[str, T]]:
        """(agent, ``render`` of the session) of every session, in input order."""
        file_paths = [p for p in paths if str(p) != "-"]
        if stdin is not None and len(file_paths) != len(paths):
            for log in read_stdin(stdin):
                log = self.enrich(log) if self.enrich is not None else log
                self.issues.extend(log.issues)
                self.sessions_read += 1
                whose = agent_of(log.format)
                self.agents_found.add(whose)
                if self.agents is None or whose in self.agents:
                    yield whose, render(analyze_log(log, now))
        sources = discover(file_paths, self.unreadable.append) if file_paths else []
        if self.agents is not None:
            sources = self._agents_only(sources)
        self.agents_found.update(src.reader or "claude" for src in sources)
        if self.on_progress is not None and sources:
            # The count before any is read: a project folder is read whole before its
            # first result, so the first call after reading would come late.
            self.on_progress(0, len(sources))
        groups = project_groups(sources)
        # Each file is looked at once: its size decides both whether to fork and the order.
        weights = [total_bytes(group) for group in groups]
        jobs = workers_for(weights, self.jobs)
        work = partial(analyze_group, now=now, render=render, enrich=self.enrich)
        batches = map_ordered(work, groups, jobs, weights)
        results = (result for batch in batches for result in batch)
        for done, result in enumerate(results, start=1):
            if self.on_progress is not None:
                self.on_progress(done, max(done, len(sources)))
            if result.error is not None:
                self.errors.append(result.error)
            self.issues.extend(result.issues)
            self.unreadable.extend(result.unreadable)
            if result.value is not None:
                if self.agents is not None and result.agent not in self.agents:
                    continue
                self.sessions_read += 1
                yield result.agent, result.value

    def _agents_only(self, sources: list[SessionSource]) -> list[SessionSource]:
        """The sources of the agents asked for, by their names: another agent's files in
        a folder are not read at all. A file named on its own is read by the one agent
        asked for whatever its name, and is an error when it is not that agent's log."""
        assert self.agents is not None
        kept = []
        (only,) = self.agents if len(self.agents) == 1 else (None,)
        for src in sources:
            if (src.reader or "claude") in self.agents:
                kept.append(src)
            elif src.explicit and only is not None:
                if only != "claude":
                    src.reader = only
                    src.strict = True
                kept.append(src)
        return kept

    @property
    def nothing_read(self) -> bool:
        """Files were found, none could be read: the one case where unreadable files
        fail the run (a file that vanished among many is only reported)."""
        return bool(self.unreadable) and self.sessions_read == 0
