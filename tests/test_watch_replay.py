"""A corpus transcript written in random chunks while it is watched: the events are the
requests ``cachediag analyze --requests`` finds in the finished file, each reported as
soon as its line is complete."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cachediag.follow.events import RequestSeen
from cachediag.follow.source import WatchdogSource, run
from cachediag.pricing import price_function
from cachediag.report.watch import event_dict
from tests.conftest import SPOTTER_SESSION
from tests.statusline_support import THREE, write
from tests.watch_support import (
    COMPARED,
    Recorder,
    ScriptedSource,
    analyze_requests,
    complete_requests,
)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


class Growing:
    """The spotter session (main transcript and two subagent files) copied into a
    project folder a chunk at a time; the agent files appear mid-way and grow in step."""

    def __init__(self, project: Path, seed: int, chunks: int) -> None:
        self.main = project / SPOTTER_SESSION.name
        self.data = {self.main: SPOTTER_SESSION.read_bytes()}
        agents = SPOTTER_SESSION.with_suffix("") / "subagents"
        self.agent_dir = project / SPOTTER_SESSION.stem / "subagents"
        for p in sorted(agents.glob("*.jsonl")):
            self.data[self.agent_dir / p.name] = p.read_bytes()
        self.written = dict.fromkeys(self.data, 0)
        rng = random.Random(seed)
        size = len(self.data[self.main])
        # Random cut points fall inside lines almost always; a few land just after one.
        points = sorted(rng.sample(range(1, size), chunks - 1))
        newline = self.data[self.main].find(b"\n", size // 3) + 1
        self.points = sorted({*points, newline, size})

    def step(self, i: int) -> list[Path]:
        """Write up to the i-th cut point; the paths that changed (a new folder by name)."""
        share = self.points[i] / self.points[-1]
        changed: list[Path] = []
        for path, full in self.data.items():
            target = self.points[i] if path == self.main else int(len(full) * share)
            if target <= self.written[path]:
                continue
            created = not path.exists()
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("ab") as fp:
                fp.write(full[self.written[path] : target])
            self.written[path] = target
            changed.append(path.parent if created and path != self.main else path)
        return changed

    def complete_so_far(self) -> int:
        return sum(len(complete_requests(full[: self.written[p]])) for p, full in self.data.items())


def projected(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: obj.get(k) for k in COMPARED} for obj in objects]


def by_stream(recorder: Recorder) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for obj in recorder.dicts("request"):
        out.setdefault(obj["stream"], []).append(obj)
    return {stream: projected(objs) for stream, objs in out.items()}


@pytest.mark.parametrize("seed", [1, 2])
def test_events_equal_analyze_on_the_finished_file(tmp_path: Path, seed: int) -> None:
    project = tmp_path / "projects" / "spotter"
    project.mkdir(parents=True)
    growing = Growing(project, seed, chunks=60)
    recorder = Recorder(tmp_path / "projects", price_of=price_function())
    stop = threading.Event()
    reported: list[tuple[int, int]] = []

    def step(i: int) -> list[Path]:
        # What the previous step wrote has been read: every complete response reported.
        if i:
            reported.append((len(recorder.requests()), growing.complete_so_far()))
        return growing.step(i) if i < len(growing.points) else []

    steps = [lambda i=i: step(i) for i in range(len(growing.points) + 1)]
    source = ScriptedSource(steps, stop)
    run(recorder.follower, source, stop)

    assert source.closed and source.opened == [str(tmp_path / "projects")]
    assert growing.main.read_bytes() == SPOTTER_SESSION.read_bytes()
    assert len(reported) == len(growing.points)
    assert all(got == want for got, want in reported), reported
    # Requests were reported along the way, not only at the end.
    assert len({got for got, _ in reported}) > 20
    expected = {k: projected(v) for k, v in analyze_requests(growing.main).items()}
    # 139 main requests, 12 in the subagent, 1 in the compaction agent (analyze's count).
    assert [len(v) for v in expected.values()] == [139, 12, 1]
    assert by_stream(recorder) == expected
    kinds = [d["event"] for d in recorder.dicts()]
    assert kinds[0] == "session" and recorder.dicts("session")[0]["new"] is True
    assert [d["stream"] for d in recorder.dicts("stream")] == [
        "agent-a2898e3",
        "agent-acompact-e1f845",
    ]
    assert [(d["stream"], d["kind"]) for d in recorder.dicts("rebuild")] == [("main", "compaction")]


def test_real_watchdog_follows_files_being_appended(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "spotter"
    project.mkdir(parents=True)
    growing = Growing(project, seed=7, chunks=40)
    recorder = Recorder(tmp_path / "projects", price_of=price_function())
    stop = threading.Event()
    source = WatchdogSource()
    watcher = threading.Thread(target=run, args=(recorder.follower, source, stop))
    watcher.start()
    try:
        deadline = time.monotonic() + 10
        while source._observer is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # the initial scan
        rng = random.Random(7)
        for i in range(len(growing.points)):
            growing.step(i)
            time.sleep(rng.uniform(0, 0.03))
        deadline = time.monotonic() + 30
        while len(recorder.requests()) < 152 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert not watcher.is_alive()
    expected = {k: projected(v) for k, v in analyze_requests(growing.main).items()}
    assert by_stream(recorder) == expected
    # Each request was reported once, as it landed.
    ids = [e.entry.record.message_id for e in recorder.requests() if isinstance(e, RequestSeen)]
    assert len(ids) == len(set(ids)) == 152
    assert all(event_dict(e)["event"] for e in recorder.events)


def test_polling_when_the_system_refuses_file_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import watchdog.observers

    def refused() -> None:
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watchdog.observers, "Observer", refused)
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:1])
    recorder = Recorder(tmp_path)
    stop = threading.Event()
    source = WatchdogSource()
    watcher = threading.Thread(target=run, args=(recorder.follower, source, stop))
    watcher.start()
    try:
        time.sleep(0.5)
        write(t, THREE[1:], "a")
        deadline = time.monotonic() + 15
        while len(recorder.requests()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert source.fell_back
    assert [(d["message_id"], d["outcome"]) for d in recorder.dicts("request")] == [
        ("msg_2", "hit"),
        ("msg_3", "miss"),
    ]
    assert "polling every 2 s" in capsys.readouterr().err
