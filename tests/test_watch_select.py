"""Which events a watch shows (``follow.select``) and its signal handling, alone."""

from __future__ import annotations

import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from cachediag.follow.events import RequestSeen, SessionSeen, Tally, WatchEvent
from cachediag.follow.select import Selection
from cachediag.follow.source import Loop, stopped_by_signals
from tests.statusline_support import T0, THREE, write
from tests.watch_support import Recorder


@dataclass(frozen=True)
class Between:
    since: float | None = None
    until: float | None = None

    @property
    def open(self) -> bool:
        return self.since is None and self.until is None

    def holds(self, at: float) -> bool:
        return (self.since is None or at >= self.since) and (self.until is None or at < self.until)


def three_events(tmp_path: Path) -> list[WatchEvent]:
    """THREE read from the start: a header, then cold (T0), hit (T0+60), miss (T0+1000)."""
    write(tmp_path / "s1.jsonl", THREE)
    recorder = Recorder(tmp_path, from_start=True)
    recorder.follower.start()
    assert [type(e).__name__ for e in recorder.events] == ["SessionSeen"] + ["RequestSeen"] * 3
    return recorder.events


def shown(selection: Selection, events: list[WatchEvent]) -> list[str]:
    out = []
    for event in events:
        for each in selection.shown(event):
            if isinstance(each, RequestSeen):
                out.append(each.entry.outcome.value)
            else:
                assert isinstance(each, SessionSeen)
                out.append("header")
    return out


def test_open_window_shows_everything(tmp_path: Path) -> None:
    events = three_events(tmp_path)
    selection = Selection(Between(), alerts_only=False, min_cost=None)
    assert shown(selection, events) == ["header", "cold", "hit", "miss"]
    everything: list[Tally] = []
    assert selection.summaries(everything) is everything  # the follower's own tallies


def test_window_holds_the_header_until_its_first_event(tmp_path: Path) -> None:
    events = three_events(tmp_path)
    selection = Selection(Between(since=T0 + 30), alerts_only=False, min_cost=None)
    assert shown(selection, events) == ["header", "hit", "miss"]
    (tally,) = selection.summaries([])
    assert (tally.requests, tally.outcomes) == (2, {"hit": 1, "miss": 1})


def test_window_that_leaves_a_session_out_leaves_its_header_out(tmp_path: Path) -> None:
    events = three_events(tmp_path)
    selection = Selection(Between(until=T0 - 1), alerts_only=False, min_cost=None)
    assert shown(selection, events) == []
    assert selection.summaries([]) == []


def test_alerts_show_misses_only_and_no_header(tmp_path: Path) -> None:
    events = three_events(tmp_path)
    # No prices: the miss's cost is unknown, and an unknown cost is still shown.
    assert shown(Selection(Between(), alerts_only=True, min_cost=None), events) == ["miss"]
    assert shown(Selection(Between(), alerts_only=False, min_cost=5.0), events) == ["miss"]


def test_signal_sets_stop_and_handlers_are_put_back() -> None:
    stop = threading.Event()
    before = signal.getsignal(signal.SIGTERM)
    with stopped_by_signals(stop, Loop()):
        assert signal.getsignal(signal.SIGTERM) is not before
        os.kill(os.getpid(), signal.SIGTERM)  # the loop is not idle: only stop is set
        assert stop.wait(5)
    assert signal.getsignal(signal.SIGTERM) is before
