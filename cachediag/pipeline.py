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

from cachediag.analysis.session import SessionAnalysis, analyze_session
from cachediag.errors import CachediagError, InputError
from cachediag.ingest.discover import SessionSource, claude_projects_dirs, discover
from cachediag.ingest.reader import Claims, read_sessions, read_stdin
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


def default_paths() -> list[Path]:
    found = [p for p in claude_projects_dirs() if p.is_dir()]
    if not found:
        tried = ", ".join(str(p) for p in claude_projects_dirs())
        raise InputError(
            f"no path given and no Claude Code history found at {tried} "
            "(pass a transcript, a folder, or pipe a log on stdin)"
        )
    return found


T = TypeVar("T")
Enrich = Callable[[SessionLog], SessionLog]


def _same(a: SessionAnalysis) -> SessionAnalysis:
    return a


@dataclass(slots=True, frozen=True)
class SourceResult(Generic[T]):
    """One source read: what ``render`` made of it, its skipped lines, or why not."""

    value: T | None
    issues: list[LineIssue]
    passed_over: bool = False
    """A stray file in a scanned folder (e.g. history.jsonl): not a session."""
    error: str | None = None


def analyze_source(
    src: SessionSource,
    now: float,
    render: Callable[[SessionAnalysis], T],
    claimed: Claims | None = None,
    enrich: Enrich | None = None,
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
        if enrich is not None:
            log = enrich(log)
        if log.main_unreadable and not any(s.items for s in log.streams.values()):
            results.append(SourceResult(None, log.issues, passed_over=True))
        else:
            results.append(SourceResult(render(analyze_session(log, now)), log.issues))
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
    order = sorted(range(len(group)), key=lambda i: (_mtime(group[i]), i))
    results: dict[int, list[SourceResult[T]]] = {}
    for i in order:
        results[i] = analyze_source(group[i], now, render, claimed, enrich)
    return [result for i in range(len(group)) for result in results[i]]


def _mtime(src: SessionSource) -> float:
    path = src.main if src.main is not None else (src.agents[0].path if src.agents else None)
    try:
        return path.stat().st_mtime if path is not None else 0.0
    except OSError:
        return 0.0


def project_groups(sources: list[SessionSource]) -> list[list[SessionSource]]:
    """Consecutive sources of the same folder, together (``discover`` sorts by path)."""
    groups: list[list[SessionSource]] = []
    last: Path | None = None
    for src in sources:
        folder = _folder(src)
        if groups and folder == last:
            groups[-1].append(src)
        else:
            groups.append([src])
        last = folder
    return groups


def _folder(src: SessionSource) -> Path | None:
    if src.main is not None:
        return src.main.parent
    if src.agents:
        # <project>/<session>/subagents/agent-*.jsonl: the project folder is three up.
        return src.agents[0].path.parents[2]
    return None


@dataclass(slots=True)
class Run:
    """What one run read: its sessions as they are analysed, and errors kept for the end."""

    errors: list[str] = field(default_factory=list)
    issues: list[LineIssue] = field(default_factory=list)
    """Lines skipped, and files passed over as not being sessions (line 0)."""
    on_progress: Callable[[int, int], None] | None = None
    """Called with (sessions read, sessions found) after each session file."""
    jobs: int | None = None
    """Worker processes; ``None``: one per core when the input is large."""
    enrich: Enrich | None = None
    """Applied to each session read, before analysis (e.g. joining capture records);
    must pickle, like ``render``."""

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
        file_paths = [p for p in paths if str(p) != "-"]
        if stdin is not None and len(file_paths) != len(paths):
            for log in read_stdin(stdin):
                log = self.enrich(log) if self.enrich is not None else log
                self.issues.extend(log.issues)
                yield render(analyze_session(log, now))
        sources = discover(file_paths) if file_paths else []
        groups = project_groups(sources)
        # Each file is looked at once: its size decides both whether to fork and the order.
        weights = [total_bytes(group) for group in groups]
        jobs = workers_for(len(sources), sum(weights), self.jobs)
        work = partial(analyze_group, now=now, render=render, enrich=self.enrich)
        batches = map_ordered(work, groups, jobs, weights)
        results = (result for batch in batches for result in batch)
        for done, result in enumerate(results, start=1):
            if self.on_progress is not None:
                self.on_progress(done, max(done, len(sources)))
            if result.error is not None:
                self.errors.append(result.error)
            self.issues.extend(result.issues)
            if result.value is not None:
                yield result.value
