"""Which of a watch's events are shown: those in its ``--since``/``--until`` window, and
with ``--misses-only``/``--min-cost`` the misses alone.

A session's header waits until the session has an event to show, so a window that
leaves a session out leaves out its header too; the summary of a window counts only
what it showed. Nothing here prints.
"""

from __future__ import annotations

from typing import Protocol

from cachediag.follow.events import RebuildSeen, RequestSeen, SessionSeen, Tally, WatchEvent


class TimeWindow(Protocol):
    """``[since, until)`` in epoch seconds (``commands``' ``Window``)."""

    @property
    def open(self) -> bool: ...

    def holds(self, at: float) -> bool: ...


def _at(event: WatchEvent) -> float:
    if isinstance(event, RequestSeen):
        return event.entry.record.at
    if isinstance(event, RebuildSeen):
        return event.event.at
    return event.at


def is_miss(event: WatchEvent) -> bool:
    return isinstance(event, RequestSeen) and event.entry.outcome.value == "miss"


def is_alert(event: WatchEvent, min_cost: float | None) -> bool:
    """A miss, costing at least ``min_cost`` beyond a hit when that is given."""
    if not isinstance(event, RequestSeen) or not is_miss(event):
        return False
    cost = event.cost.miss_cost_usd
    # A miss of unknown price is shown: it may well be an expensive one.
    return min_cost is None or cost is None or cost >= min_cost


class WindowFilter:
    """Events inside the window; a session's header only once it has one, and the
    tallies of what was shown."""

    def __init__(self, window: TimeWindow) -> None:
        self.window = window
        self._headers: dict[str, WatchEvent] = {}
        self._shown: set[str] = set()
        self._tallies: dict[str, Tally] = {}

    def keep(self, event: WatchEvent) -> bool:
        if self.window.open:
            return True
        key = event.session.key
        if isinstance(event, SessionSeen):
            if key not in self._shown:
                self._headers[key] = event
            return False
        if not self.window.holds(_at(event)):
            return False
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = Tally(event.session)
        if isinstance(event, RequestSeen):
            tally.add(event)
        elif isinstance(event, RebuildSeen):
            tally.compactions += 1
        return True

    def headers_for(self, event: WatchEvent) -> list[WatchEvent]:
        key = event.session.key
        self._shown.add(key)
        header = self._headers.pop(key, None)
        return [] if header is None else [header]

    def summaries(self) -> list[Tally]:
        return [t for t in self._tallies.values() if t.requests]


class Selection:
    """The window and the alert options together: ``shown`` gives, for each event the
    follower reports, what to print (its session's held-back header first), if anything."""

    def __init__(self, window: TimeWindow, *, alerts_only: bool, min_cost: float | None) -> None:
        self.windowed = WindowFilter(window)
        self.alerts_only = alerts_only or min_cost is not None
        self.min_cost = min_cost

    def shown(self, event: WatchEvent) -> list[WatchEvent]:
        if not self.windowed.keep(event):
            return []
        if self.alerts_only and not is_alert(event, self.min_cost):
            return []
        return [*self.windowed.headers_for(event), event]

    def summaries(self, everything: list[Tally]) -> list[Tally]:
        """The summary's tallies: the follower's (``everything``), or within a window
        only what it showed."""
        return everything if self.windowed.window.open else self.windowed.summaries()
