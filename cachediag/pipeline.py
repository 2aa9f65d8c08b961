"""From paths (or stdin) to analysed sessions: the library call behind ``analyze``."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from cachediag.analysis.session import SessionAnalysis, analyze_session
from cachediag.errors import CachediagError, InputError
from cachediag.ingest.discover import SessionSource, claude_projects_dirs, discover
from cachediag.ingest.reader import read_session, read_stdin
from cachediag.model import LineIssue, SessionLog


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


@dataclass(slots=True)
class Run:
    """What one run read: its sessions as they are analysed, and errors kept for the end."""

    errors: list[str] = field(default_factory=list)
    skipped: list[LineIssue] = field(default_factory=list)
    """Notes of files that were passed over as not being sessions."""
    on_progress: Callable[[int, int], None] | None = None
    """Called with (sessions read, sessions found) after each session file."""

    def sessions(
        self, paths: list[Path], stdin: IO[bytes] | None, now: float
    ) -> Iterator[SessionAnalysis]:
        for log in self._logs(paths, stdin):
            yield analyze_session(log, now)

    def _logs(self, paths: list[Path], stdin: IO[bytes] | None) -> Iterator[SessionLog]:
        file_paths = [p for p in paths if str(p) != "-"]
        if stdin is not None and len(file_paths) != len(paths):
            yield from read_stdin(stdin)
        sources: list[SessionSource] = discover(file_paths) if file_paths else []
        for done, src in enumerate(sources, start=1):
            if self.on_progress is not None:
                self.on_progress(done, len(sources))
            try:
                log = read_session(src)
            except CachediagError as exc:
                self.errors.append(str(exc))
                continue
            if log.main_unreadable and not any(s.items for s in log.streams.values()):
                # A stray JSONL file in a scanned folder (e.g. history.jsonl): not a
                # session; its note still reaches stderr.
                self.skipped.extend(log.issues)
                continue
            yield log
