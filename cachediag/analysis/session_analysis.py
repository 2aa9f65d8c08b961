"""A whole session analysed: one ledger and one summary per stream."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cachediag.analysis.ledger import Ledger, LedgerEntry, run_ledger
from cachediag.analysis.summary import PromptCache, build_prompt_cache
from cachediag.model import MAIN_STREAM, SessionLog, StreamKind, StreamLog


@dataclass(slots=True)  # not frozen: cachediag.analysis says why
class StreamAnalysis:
    """One stream analysed: its ledger, its entries and its cache state."""

    log: StreamLog
    ledger: Ledger
    entries: list[LedgerEntry]
    prompt_cache: PromptCache


@dataclass(slots=True)  # not frozen: cachediag.analysis says why
class SessionAnalysis:
    """One session analysed: the main conversation and every other stream."""

    log: SessionLog
    main: StreamAnalysis
    others: list[StreamAnalysis]

    @property
    def streams(self) -> list[StreamAnalysis]:
        return [self.main, *self.others]

    @property
    def project(self) -> str | None:
        """The session's project, as every output names it (``project_name``)."""
        return project_name(self.log.cwd, self.log.project)


def project_name(cwd: str | None, folder: str | None) -> str | None:
    """The project's real path when the transcripts carry it (``cwd``), else the name of
    the folder holding them. Claude Code names that folder after the path with every
    character but a letter or a digit turned into ``-``: ``-home-me-my-app`` may be
    ``/home/me/my-app`` or ``/home/me/my_app``, so it is never decoded."""
    return cwd or folder


def analyze_stream(log: StreamLog, now: float) -> StreamAnalysis:
    ledger, entries = run_ledger(log.items)
    return StreamAnalysis(log, ledger, entries, build_prompt_cache(ledger, now))


def analyze_session(log: SessionLog, now: float) -> SessionAnalysis:
    main = analyze_stream(log.streams[MAIN_STREAM], now)
    if len(log.streams) == 1:  # most sessions: nothing to order
        return SessionAnalysis(log, main, [])
    others = [analyze_stream(s, now) for sid, s in log.streams.items() if sid != MAIN_STREAM]
    # Streams in the order they started; those without requests last.
    others.sort(key=lambda a: (a.entries[0].record.at if a.entries else float("inf"), a.log.id))
    # Side calls are numbered as their requests appeared; responses may come back in
    # another order: among their own places they go 1, 2, ..., 9, 10.
    places = [i for i, a in enumerate(others) if a.log.kind is StreamKind.SIDE_CALL]
    numbered = sorted((others[i] for i in places), key=lambda a: _natural(a.log.id))
    for i, a in zip(places, numbered, strict=True):
        others[i] = a
    return SessionAnalysis(log, main, others)


def _natural(name: str) -> tuple[tuple[int, int | str], ...]:
    """``side-call-9`` before ``side-call-10``."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name) if p)
