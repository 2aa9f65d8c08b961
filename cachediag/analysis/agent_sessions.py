"""The sessions of an agent with its own reader (``ingest.agents``), analysed with the
ledger of the provider that served them: what ``--agent`` reads.

With no path an agent's default home is read (its environment override, else under
``$HOME``); a folder named is searched for the agent's session files; a file named is
read as one, and a file that holds none of the agent's lines is an error, as a non-log
is for Claude Code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cachediag.analysis.ledgers import analyze_log
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.ingest.agents import AGENTS, is_session, not_a_log, read_logs, session_files
from cachediag.model import LineIssue, SessionLog


@dataclass(slots=True)
class AgentRun:
    """What ``--agent NAME`` read: each session analysed, what was skipped, what failed."""

    analyses: list[SessionAnalysis] = field(default_factory=list)
    issues: list[LineIssue] = field(default_factory=list)
    unreadable: list[LineIssue] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """One line per path that is not one of the agent's logs (exit 1)."""
    seen: set[tuple[str, str, str]] = field(default_factory=set)
    """Sessions already analysed: a reader that returns a file's whole session (Gemini
    CLI's resumed chats span several files) returns it again for its other files."""


def _files(name: str, paths: list[Path]) -> tuple[list[Path], list[str]]:
    if not paths:
        return session_files(name), []
    pattern = AGENTS[name].pattern.rsplit("/", 1)[-1]
    found: list[Path] = []
    errors = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob(pattern) if p.is_file() and not p.is_symlink())
        elif path.is_file():
            found.append(path)
        else:
            errors.append(f"{path}: no such file or folder")
    return found, errors


def analyze_agent(name: str, paths: list[Path], now: float) -> AgentRun:
    """Every session of agent ``name`` under ``paths`` (none: its home), analysed."""
    if name not in AGENTS or (AGENTS[name].reader is None and AGENTS[name].many is None):
        raise ValueError(f"{name} sessions are read by the Claude Code pipeline")
    files, errors = _files(name, paths)
    run = AgentRun(errors=errors)
    for path in files:
        for log in read_logs(name, path):
            _add(run, name, path, log, now)
    return run


def _add(run: AgentRun, name: str, path: Path, log: SessionLog, now: float) -> None:
    run.unreadable += log.unreadable
    if log.unreadable:
        return
    if not is_session(log):
        run.errors.append(not_a_log(name, path, [log]))
        return
    key = (log.format, log.session_id, log.source)
    if key in run.seen:
        return
    run.seen.add(key)
    run.issues += log.issues
    run.analyses.append(analyze_log(log, now))
