"""The keys an audit groups requests by (``--by``), pure: calendar days, weeks and
months in a zone, idle-gap buckets, cause keys, a session's agent, and model names made
writable.

``rollup`` sums requests under these keys; the dataset's rows store the same keys at
export (``dataset.rows``), so an audit of the logs and one of a dataset group alike.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from enum import StrEnum

from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.ingest.agents import agent_of
from cachediag.model import SessionLog


def valid_text(text: str) -> str:
    """``text`` as it can be written out (UTF-8): a file or folder name in other bytes
    than UTF-8 (which Python keeps as lone surrogates) or a lone surrogate a log's JSON
    escaped gets U+FFFD in their place. An audit's and an export's sessions have their
    names made so as they are read (``pipeline_audit``); models here, per key."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        raw = text.encode("utf-8", "surrogateescape")  # a name the file system gave
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")  # a surrogate escaped in JSON
    return raw.decode("utf-8", "replace")


def valid_or_none(text: str | None) -> str | None:
    return None if text is None else valid_text(text)


NO_MISS = "no_miss"
EXPECTED_REBUILD = "expected_rebuild"
UNPRICED = "(unpriced)"


class GroupBy(StrEnum):
    SESSION = "session"
    PROJECT = "project"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    GAP = "gap"
    MODEL = "model"
    CAUSE = "cause"
    STREAM_KIND = "stream-kind"
    AGENT = "agent"
    """The coding agent whose log a session is (``ingest.agents.agent_of``)."""
    # Labels given at export (cachediag export --label): datasets only.
    HOST = "host"
    USER = "user"


DATASET_ONLY = frozenset({GroupBy.HOST, GroupBy.USER})

CALENDAR = (GroupBy.DAY, GroupBy.WEEK, GroupBy.MONTH)


class Calendar:
    """``day_of``, ``week_of`` and ``month_of`` of many instants in one zone.

    One conversion per minute: from 1973 on (after the last offset change of the
    zone database at a moment that is not a whole minute) an instant's local
    minute decides its day whenever the zone's offset is a whole number of
    minutes, as every offset in force since then is."""

    __slots__ = ("_dates", "_memo", "zone")

    def __init__(self, zone: tzinfo = UTC) -> None:
        self.zone = zone
        self._memo: dict[int, tuple[str, str, str]] = {}
        self._dates: dict[int, tuple[str, str, str]] = {}
        """The keys of each local date seen (by ordinal): a minute not seen before
        needs its date, not the text of its keys again."""

    def keys(self, at: float) -> tuple[str, str, str]:
        minute = int(at // 60) if at >= _MEMO_FROM else None
        if minute is not None:
            found = self._memo.get(minute)
            if found is not None:
                return found
        d = datetime.fromtimestamp(at, self.zone)
        if d.year < 1000:  # strftime does not pad such years; keep its spelling
            return day_of(at, self.zone), week_of(at, self.zone), month_of(at, self.zone)
        date = d.toordinal()
        keys = self._dates.get(date)
        if keys is None:
            year, week, _ = d.isocalendar()
            day = f"{d.year:04d}-{d.month:02d}-{d.day:02d}"
            keys = self._dates[date] = (day, f"{year}-W{week:02d}", day[:7])
        offset = d.utcoffset()
        if minute is not None and offset is not None and offset.total_seconds() % 60 == 0:
            self._memo[minute] = keys
        return keys


_MEMO_FROM = 94_694_400.0
"""1973-01-01 UTC."""


def day_of(at: float, zone: tzinfo = UTC) -> str:
    return datetime.fromtimestamp(at, zone).strftime("%Y-%m-%d")


def week_of(at: float, zone: tzinfo = UTC) -> str:
    """The ISO week (Monday to Sunday) in ``zone``: ``2026-W07``."""
    year, week, _ = datetime.fromtimestamp(at, zone).isocalendar()
    return f"{year}-W{week:02d}"


def month_of(at: float, zone: tzinfo = UTC) -> str:
    return datetime.fromtimestamp(at, zone).strftime("%Y-%m")


GAP_BUCKETS: tuple[tuple[float, str], ...] = (
    (60, "<1m"),
    (300, "1-5m"),
    (600, "5-10m"),
    (1800, "10-30m"),
    (3600, "30-60m"),
    (float("inf"), ">1h"),
)
FIRST_REQUEST = "first request"
"""The gap bucket of a stream's first request: nothing before it to be idle after."""


def gap_key(gap_s: float | None, ttl_in_force: str) -> str:
    """The idle-gap bucket of a request, with the TTL that was in force across the gap
    when it was the hour (a 20-minute pause means a miss under 5m, a hit under 1h)."""
    if gap_s is None:
        return FIRST_REQUEST
    for limit, label in GAP_BUCKETS:
        if gap_s < limit:
            return label if ttl_in_force == "5m" else f"{label} @{ttl_in_force}"
    raise ValueError(f"no gap bucket for {gap_s!r}")


def gap_order(key: str) -> tuple[int, int, str]:
    """Buckets shortest first, each before its variant under the hour's TTL."""
    label, _, ttl = key.partition(" @")
    names = [name for _, name in GAP_BUCKETS]
    rank = names.index(label) if label in names else -1
    return (rank, 1 if ttl else 0, key)


def cause_key(entry: LedgerEntry) -> str:
    if entry.outcome is Outcome.EXPECTED:
        return EXPECTED_REBUILD
    if entry.outcome is not Outcome.MISS:
        return NO_MISS
    d = entry.diagnosis
    return "+".join(c.value for c in d.causes) if d is not None and d.causes else "unknown"


def agent_key(log: SessionLog) -> str:
    """The ``--by agent`` key of a session: the agent its format belongs to (``claude``,
    ``codex``, ``gemini``, ``opencode``); a dataset's rows store it at export."""
    return agent_of(log.format)
