"""A session as a watch knows it: what was read and reported of it (``follow.follower``
for Claude Code's transcripts, ``follow.agent_files`` for other agents' files)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cachediag.follow.events import ItemKey, SessionRef
from cachediag.model import MAIN_STREAM

if TYPE_CHECKING:
    from cachediag.follow.live_session import LiveSession


@dataclass(slots=True)
class Tracked:
    """A session as the follower knows it."""

    ref: SessionRef
    files: set[str] = field(default_factory=set)
    live: LiveSession | None = None
    known: set[ItemKey] = field(default_factory=set)
    """Items read so far, reported or not: a session read again reports only the others."""
    quiet: bool = False
    streams: set[str] = field(default_factory=lambda: {MAIN_STREAM})
    shown: bool = False
    gone: set[str] = field(default_factory=set)
