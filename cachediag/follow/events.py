"""What ``watch`` reports, as plain records, and the per-session tally behind its summary.

``report.watch`` turns these into JSON Lines and ``report.watch_view`` into lines for
people; nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cachediag.analysis.costs import EntryCost
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.model import RebuildAnnounced, RequestRecord, StreamItem, StreamKind


@dataclass(slots=True, frozen=True)
class SessionRef:
    session_id: str
    project: str | None
    transcript: str
    """The main transcript's path (it may not exist: a session seen through its agents);
    another agent's session file (a rollout, a chat, opencode's database)."""
    agent: str | None = None
    """Another agent's session (``ingest.agents`` name); ``None``: Claude Code's."""

    @property
    def key(self) -> str:
        """What tells sessions apart: the transcript, and in a file that holds many
        (opencode's database) the session id too."""
        return self.transcript if self.agent is None else f"{self.transcript}\0{self.session_id}"


@dataclass(slots=True, frozen=True)
class SessionSeen:
    """A session shows activity for the first time in this watch."""

    session: SessionRef
    at: float
    new: bool
    """Its transcript appeared after the watch started."""


@dataclass(slots=True, frozen=True)
class StreamSeen:
    """A subagent, compaction agent or sidechain stream started."""

    session: SessionRef
    at: float
    stream: str
    kind: StreamKind
    source: str | None


@dataclass(slots=True, frozen=True)
class RequestSeen:
    """One API request with its ledger outcome (hit, miss with causes, ...)."""

    session: SessionRef
    kind: StreamKind
    entry: LedgerEntry
    cost: EntryCost


@dataclass(slots=True, frozen=True)
class RebuildSeen:
    """A compaction (or clearing of old tool results) announced a rebuild."""

    session: SessionRef
    event: RebuildAnnounced


@dataclass(slots=True, frozen=True)
class FileReset:
    """A file was truncated, replaced or rewritten: its session was read again from the
    start, and only what had not been reported before is reported."""

    session: SessionRef
    at: float
    path: str
    reason: str
    """``truncated``, ``replaced`` (new inode) or ``rewritten`` (same size or longer)."""


@dataclass(slots=True, frozen=True)
class FileRemoved:
    session: SessionRef
    at: float
    path: str


WatchEvent = SessionSeen | StreamSeen | RequestSeen | RebuildSeen | FileReset | FileRemoved


@dataclass(slots=True)
class Tally:
    """What one session did while watched: the requests reported, not the whole history."""

    session: SessionRef
    requests: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    read_tokens: int = 0
    input_tokens: int = 0
    creation_tokens: int = 0
    reprocessed_tokens: int = 0
    """Over misses and expected rebuilds."""
    miss_cost_usd: float = 0.0
    """What misses and rebuilds paid beyond hits, over the priced requests."""
    unpriced_requests: int = 0
    miss_causes: dict[str, int] = field(default_factory=dict)
    streams: set[str] = field(default_factory=set)
    compactions: int = 0

    def add(self, seen: RequestSeen) -> None:
        entry, record = seen.entry, seen.entry.record
        self.requests += 1
        self.outcomes[entry.outcome.value] = self.outcomes.get(entry.outcome.value, 0) + 1
        self.read_tokens += record.cache_read_tokens
        self.input_tokens += record.input_tokens
        self.creation_tokens += record.cache_creation_tokens
        self.reprocessed_tokens += entry.reprocessed_tokens
        self.streams.add(record.stream)
        if seen.cost.miss_cost_usd is None:
            self.unpriced_requests += 1
        else:
            self.miss_cost_usd += seen.cost.miss_cost_usd
        if entry.outcome is Outcome.MISS and entry.diagnosis is not None:
            for cause in entry.diagnosis.causes:
                self.miss_causes[cause.value] = self.miss_causes.get(cause.value, 0) + 1

    def count(self, outcome: Outcome) -> int:
        return self.outcomes.get(outcome.value, 0)

    @property
    def hit_ratio(self) -> float | None:
        total = self.read_tokens + self.input_tokens + self.creation_tokens
        return self.read_tokens / total if total else None


ItemKey = tuple[str, ...]


def item_key(item: StreamItem) -> ItemKey:
    """What identifies an item across two reads of the same session."""
    if isinstance(item, RequestRecord):
        if item.message_id:
            return (item.stream, "message", item.message_id)
        if item.request_id:
            return (item.stream, "request", item.request_id)
        return (item.stream, "line", str(item.line))
    return (item.stream, item.kind.value, repr(item.at))
