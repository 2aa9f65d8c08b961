"""Helpers of the watch tests: a scripted change source, a follower that records."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from cachediag.analysis.costs import ModelPrices
from cachediag.cli import main
from cachediag.follow.events import RequestSeen, WatchEvent
from cachediag.follow.follower import Follower
from cachediag.follow.layout import scopes_for
from cachediag.model import RequestRecord
from cachediag.report.watch import event_dict

Step = Callable[[], Iterable[str]]


class ScriptedSource:
    """A ``ChangeSource`` that plays scripted steps instead of asking the OS: each
    ``wait`` runs the next step (which changes files) and returns the paths it names;
    after the last step it sets the stop event."""

    def __init__(self, steps: list[Step], stop: threading.Event) -> None:
        self.steps = list(steps)
        self.stop = stop
        self.opened: list[str] | None = None
        self.closed = False

    def open(self, folders: list[str]) -> None:
        self.opened = folders

    def wait(self, timeout_s: float) -> set[str]:
        if not self.steps:
            self.stop.set()
            return set()
        return {str(p) for p in self.steps.pop(0)()}

    def close(self) -> None:
        self.closed = True


def no_prices(record: RequestRecord) -> ModelPrices | None:
    return None


class Recorder:
    """A follower of ``paths`` whose events are kept, as records and as JSON objects."""

    def __init__(
        self,
        *paths: Path,
        from_start: bool = False,
        price_of: Callable[[RequestRecord], ModelPrices | None] = no_prices,
    ) -> None:
        self.events: list[WatchEvent] = []
        self.follower = Follower(
            scopes_for(str(p) for p in paths), self.events.append, price_of, from_start=from_start
        )

    def dicts(self, kind: str | None = None) -> list[dict[str, Any]]:
        out = [event_dict(e) for e in self.events]
        return [d for d in out if kind is None or d["event"] == kind]

    def requests(self) -> list[RequestSeen]:
        return [e for e in self.events if isinstance(e, RequestSeen)]


def analyze_requests(path: Path) -> dict[str, list[dict[str, Any]]]:
    """``cachediag analyze --requests`` on a finished file: requests per stream."""
    result = CliRunner().invoke(main, ["analyze", "--requests", str(path)])
    assert result.exit_code == 0, result.output
    session = json.loads(result.stdout)
    out = {"main": session["requests"]}
    for stream in session["streams"]:
        out[stream["id"]] = stream["requests"]
    return out


COMPARED = (
    "index",
    "at",
    "message_id",
    "request_id",
    "model",
    "input_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "ttl",
    "gap_s",
    "outcome",
    "causes",
    "cause_source",
    "reprocessed_tokens",
    "announced",
    "line",
    "miss_cost_usd",
    "evidence",
)
"""Every request field but ``output_tokens`` and ``cost_usd``, which a live reader sees
at the response's first line (docs/watch.md)."""


def per_stream(objects: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        out.setdefault(obj.get("stream", "main"), []).append({k: obj.get(k) for k in COMPARED})
    return out


def complete_requests(data: bytes) -> set[str]:
    """Distinct API responses in the complete lines of a transcript prefix, worked out
    from the raw JSON (formats.md §1: one response may span several lines that share
    its message id; synthetic error messages are not requests)."""
    found = set()
    for raw in data[: data.rfind(b"\n") + 1].splitlines():
        obj = json.loads(raw)
        message = obj.get("message")
        if obj.get("type") != "assistant" or not isinstance(message, dict):
            continue
        if message.get("model") == "<synthetic>" or obj.get("isApiErrorMessage"):
            continue
        found.add(message.get("id") or obj.get("requestId") or obj.get("uuid"))
    return found
