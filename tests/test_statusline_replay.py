"""A transcript growing chunk by chunk (boundaries inside lines too): at every step the
status line, reading only the new bytes, shows what a full ``analyze`` shows."""

from __future__ import annotations

import io
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from cachediag.analysis.session_analysis import analyze_session
from cachediag.ingest.discover import sessions_for_file
from cachediag.ingest.reader import read_session
from cachediag.pricing.slots import DayPrices
from cachediag.report.serialize import session_dict
from cachediag.statusline import fast, prices, track
from tests.conftest import REAL, SPOTTER_SESSION

NOW = 1_770_930_000.0
SOURCES = [
    SPOTTER_SESSION,  # 2.1.x: subagent and compaction files in <session>/subagents/
    REAL / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",  # inline sidechains
]


def cut_points(data: bytes, rng: random.Random, steps: int) -> list[int]:
    """Random offsets plus the awkward ones: on, just before and just after a newline."""
    newlines = [i for i, b in enumerate(data) if b == 0x0A]
    points = {rng.randrange(1, len(data)) for _ in range(steps)}
    for nl in rng.sample(newlines, min(len(newlines), steps // 3)):
        points.update({nl, nl + 1, nl + 2})
    return [*sorted(p for p in points if 0 < p < len(data)), len(data)]


def full_analysis(src: Path, complete: Path) -> dict[str, Any]:
    """analyze on the complete lines written so far (a live reader waits for a newline)."""
    data = src.read_bytes()
    complete.write_bytes(data[: data.rfind(b"\n") + 1])
    return session_dict(analyze_session(read_session(sessions_for_file(complete)), NOW))


def status_json(transcript: Path) -> dict[str, Any]:
    out = io.StringIO()
    stdin = io.BytesIO(json.dumps({"transcript_path": str(transcript)}).encode())
    assert fast.run(["--json", "--now", str(NOW)], stdin, out) == 0
    return dict(json.loads(out.getvalue()))


@pytest.mark.parametrize("chunk", [1 << 20, 4093], ids=["1MiB-reads", "4093-byte-reads"])
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.parent.name)
def test_replay_matches_full_analysis_at_every_step(
    source: Path, chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small reads put read boundaries inside lines on top of the growth boundaries.
    monkeypatch.setattr("cachediag.follow.live_session.CHUNK_BYTES", chunk)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(prices, "day_prices", lambda model, day: DayPrices())
    live, mirror = tmp_path / "live", tmp_path / "mirror"
    live.mkdir()
    mirror.mkdir()
    growing = live / source.name
    agents_src = source.with_suffix("") / "subagents"
    agent_data: dict[Path, bytes] = {}
    if agents_src.is_dir():
        for folder in (live, mirror):
            shutil.copytree(agents_src, folder / source.stem / "subagents")
        # The subagent files grow too, in step with the main transcript.
        for p in (live / source.stem / "subagents").glob("*.jsonl"):
            agent_data[p] = p.read_bytes()
            p.write_bytes(b"")

    starts: list[tuple[str, int]] = []
    real_read = track.Session.read

    def spy(self: track.Session, path: str, **kwargs: Any) -> bool:
        starts.append((path, int(self.files.get(path, {}).get("offset", 0))))
        return real_read(self, path, **kwargs)

    monkeypatch.setattr(track.Session, "read", spy)

    data = source.read_bytes()
    rng = random.Random(source.name)
    points = cut_points(data, rng, 45)
    done = 0
    last_offset = 0
    for step, point in enumerate(points):
        with growing.open("ab") as fp:
            fp.write(data[done:point])
        done = point
        share = point / len(data)
        for p, full in agent_data.items():
            # Appended, as Claude Code does (rewriting a file in place is a rewrite).
            with p.open("ab") as fp:
                fp.write(full[p.stat().st_size : int(len(full) * share)])
            mirror_agent = mirror / source.stem / "subagents" / p.name
            mirror_agent.write_bytes(full[: full[: int(len(full) * share)].rfind(b"\n") + 1])

        expected = full_analysis(growing, mirror / source.name)
        got = status_json(growing)
        assert got["prompt_cache"] == expected["prompt_cache"], f"step {step} at byte {point}"
        assert [(s["id"], s["prompt_cache"]) for s in got["cachediag"]["streams"]] == [
            (s["id"], s["prompt_cache"]) for s in expected["streams"]
        ], f"step {step} at byte {point}"
        # Each run read on from where the last one stopped, never from byte 0 again.
        main_starts = [off for path, off in starts if path == str(growing)]
        assert main_starts[-1:] in ([], [last_offset])
        last_offset = data[:point].rfind(b"\n") + 1
        starts.clear()
    # The replay covered real requests, in the main stream and beside it.
    assert expected["prompt_cache"]["requests"] >= 9 and expected["streams"]
