"""Rows summed into report lines: days, weeks, months, sessions (ccusage's groupings).

A ``Bucket`` sums what ccusage shows for a line (the four token counts, the cost, the
models in first-seen order, a breakdown per model) and what the prompt cache made of
the same requests (hits, misses, expected rebuilds, re-cache cost by cause).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo

from cachediag.usage.rows import EXPECTED, HIT, MISS, RequestRow

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
"""``--start-of-week`` choices, in ``date.weekday()`` order; ccusage's default: sunday."""

NOT_A_MODEL = "<synthetic>"
"""What Claude Code writes as the model of a message it made up itself."""


@dataclass(slots=True)
class Tokens:
    """The four token counts and the cost of some requests."""

    input: int = 0
    output: int = 0
    cache_creation: int = 0
    cache_read: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    """Requests whose model has no price: counted, never priced at $0."""
    hidden_output: int = 0
    """Output in the total and cost but not in ``output`` (``RequestRow``)."""
    reasoning: int = 0
    """Of ``output``, the reasoning tokens (Codex's)."""

    def add(self, row: RequestRow) -> None:
        self.input += row.input_tokens
        self.output += row.output_tokens
        self.cache_creation += row.cache_creation_tokens
        self.cache_read += row.cache_read_tokens
        self.hidden_output += row.hidden_output_tokens
        self.reasoning += row.reasoning_tokens
        if row.cost_usd is None:
            self.unpriced += 1
        else:
            self.cost_usd += row.cost_usd

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_creation + self.cache_read + self.hidden_output

    def merge(self, o: Tokens) -> None:
        self.input += o.input
        self.output += o.output
        self.cache_creation += o.cache_creation
        self.cache_read += o.cache_read
        self.cost_usd += o.cost_usd
        self.unpriced += o.unpriced
        self.hidden_output += o.hidden_output
        self.reasoning += o.reasoning


@dataclass(slots=True)
class CacheTally:
    """The prompt cache over some requests."""

    requests: int = 0
    hits: int = 0
    misses: int = 0
    expected_rebuilds: int = 0
    recache_usd: float = 0.0
    read_tokens: int = 0
    prompt_tokens: int = 0
    """Read + written + uncached input: what a hit ratio is a share of."""
    cause_usd: dict[str, float] = field(default_factory=dict)
    """Re-cache cost of misses by their first named cause (``unknown`` if none)."""

    def add(self, row: RequestRow) -> None:
        self.requests += 1
        self.read_tokens += row.cache_read_tokens
        self.prompt_tokens += row.cache_read_tokens + row.cache_creation_tokens + row.input_tokens
        outcome = row.outcome
        if outcome == HIT:
            self.hits += 1
            return
        if outcome == MISS:
            self.misses += 1
            cause = row.cause or "unknown"
            self.cause_usd[cause] = self.cause_usd.get(cause, 0.0) + row.recache_usd
        elif outcome == EXPECTED:
            self.expected_rebuilds += 1
        self.recache_usd += row.recache_usd

    def merge(self, o: CacheTally) -> None:
        self.requests += o.requests
        self.hits += o.hits
        self.misses += o.misses
        self.expected_rebuilds += o.expected_rebuilds
        self.recache_usd += o.recache_usd
        self.read_tokens += o.read_tokens
        self.prompt_tokens += o.prompt_tokens
        for cause, usd in o.cause_usd.items():
            self.cause_usd[cause] = self.cause_usd.get(cause, 0.0) + usd

    @property
    def hit_ratio(self) -> float | None:
        return self.read_tokens / self.prompt_tokens if self.prompt_tokens else None

    def costliest_cause(self) -> tuple[str, float] | None:
        """The cause whose misses paid most beyond hits (ties: the name first in order)."""
        if not self.cause_usd:
            return None
        return min(self.cause_usd.items(), key=lambda kv: (-kv[1], kv[0]))


@dataclass(slots=True)
class Bucket:
    """One line of a report: its requests summed, per model too."""

    key: str
    tokens: Tokens = field(default_factory=Tokens)
    cache: CacheTally = field(default_factory=CacheTally)
    models: dict[str, Tokens] = field(default_factory=dict)
    """Per model, in the order each was first seen (``modelsUsed``'s order)."""
    model_cache: dict[str, CacheTally] = field(default_factory=dict)
    model_place: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Per model, the first (file, line) naming it: ccusage's order for days, sessions."""
    first_at: float = float("inf")
    last_at: float = float("-inf")
    project: str = ""
    entries: int = 0
    agents: dict[str, None] = field(default_factory=dict)
    """The agents of its requests, in the order first seen (an ordered set)."""
    session: str = ""
    """Its first request's session, as ccusage names it (``RequestRow.transcript_session``)."""
    source: str = ""
    """Its first request's file."""
    session_id: str = ""
    """Its first request's session id (``RequestRow.session_id``: Codex's thread id)."""

    def add(self, row: RequestRow) -> None:
        self.entries += 1
        self.agents[row.agent] = None
        self.tokens.add(row)
        self.cache.add(row)
        model = row.model
        if model and model != NOT_A_MODEL:
            per = self.models.get(model)
            if per is None:
                per = self.models[model] = Tokens()
            per.add(row)
            self.model_cache.setdefault(model, CacheTally()).add(row)
            place = (row.source, row.line)
            if place < self.model_place.get(model, place) or model not in self.model_place:
                self.model_place[model] = place
        self.first_at = min(self.first_at, row.at)
        self.last_at = max(self.last_at, row.at)
        if not self.project:
            self.project = row.project
        if not self.session:
            self.session, self.source = row.transcript_session, row.source
            self.session_id = row.session_id


KeyFn = Callable[[RequestRow], str]

MODEL_ORDERS = ("time", "file", "name")


def models_used(bucket: Bucket, order: str = "time") -> list[str]:
    """The line's models as ccusage 20 lists them, which differs by report: blocks in
    the order they were first used (``time``), days and sessions in the order their
    files, sorted by path, first name them (``file``), weeks and months by name."""
    if order == "name":
        return sorted(bucket.models)
    if order == "file":
        return sorted(bucket.models, key=lambda m: bucket.model_place[m])
    return list(bucket.models)


def group_rows(rows: Iterable[RequestRow], key: KeyFn) -> dict[str, Bucket]:
    """Rows summed by ``key``, oldest row first within each bucket (rows are sorted by
    time first, so the models come in the order they were first used)."""
    buckets: dict[str, Bucket] = {}
    for row in sorted(rows, key=lambda r: r.at):
        k = key(row)
        bucket = buckets.get(k)
        if bucket is None:
            bucket = buckets[k] = Bucket(k)
        bucket.add(row)
    return buckets


def local_date(at: float, zone: tzinfo) -> date:
    return datetime.fromtimestamp(at, zone).date()


def day_key(zone: tzinfo) -> KeyFn:
    return lambda row: local_date(row.at, zone).isoformat()


def week_key(zone: tzinfo, start_of_week: str = "sunday") -> KeyFn:
    """The week's first day (``YYYY-MM-DD``), weeks starting on ``start_of_week``."""
    first = WEEKDAYS.index(start_of_week)

    def key(row: RequestRow) -> str:
        day = local_date(row.at, zone)
        return (day - timedelta(days=(day.weekday() - first) % 7)).isoformat()

    return key


def month_key(zone: tzinfo) -> KeyFn:
    return lambda row: local_date(row.at, zone).isoformat()[:7]


def session_key(row: RequestRow) -> str:
    """ccusage's session: one transcript file (a subagent's belongs to its session's
    folder) within one project folder; another agent's session by its own name."""
    if row.agent != "claude":
        return f"{row.agent}:{row.transcript_session}"
    return f"{row.project}/{row.transcript_session}"


def project_key(row: RequestRow) -> str:
    return row.project
