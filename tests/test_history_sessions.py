"""Per-session rows kept in the index: computed again exactly when one of the session's
files changed (appended, rewritten at the same size, truncated, replaced, removed), and
only for that session."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from cachediag.history.index import Stats
from cachediag.history.sessions import dataclass_codec, rows_by_session
from tests.conftest import ROOT

CORPUS = ROOT.parent / "shared" / "corpus" / "claude-code"


@dataclass(slots=True, frozen=True)
class Row:
    session: str
    path: str
    size: int
    lines: int
    share: float


def compute_rows(key: str, files: Sequence[str]) -> list[Row]:
    rows = []
    for path in files:
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            continue
        rows.append(Row(key, path, len(data), data.count(b"\n"), len(data) / 3))
    return rows


CODEC = dataclass_codec(Row, "test-1")


def sessions_of(tree: Path) -> list[tuple[str, list[str]]]:
    out = []
    for main in sorted(tree.rglob("*.jsonl")):
        if "subagents" in main.parts:
            continue
        agents = sorted(str(p) for p in (main.parent / main.stem / "subagents").glob("*.jsonl"))
        out.append((main.stem, [str(main), *agents]))
    return out


def test_a_session_is_computed_again_exactly_when_its_files_change(tmp_path: Path) -> None:
    if not CORPUS.is_dir():
        pytest.skip("no shared corpus")
    tree = tmp_path / "projects"
    shutil.copytree(CORPUS, tree)
    cache = str(tmp_path / "cache")
    sessions = sessions_of(tree)
    calls: list[str] = []

    def compute(key: str, files: Sequence[str]) -> list[Row]:
        calls.append(key)
        return compute_rows(key, files)

    def run() -> list[str]:
        calls.clear()
        got = rows_by_session(sessions, compute, CODEC, kind="sessions", root=cache)
        assert got == [compute_rows(k, f) for k, f in sessions]
        return list(calls)

    assert run() == [k for k, _ in sessions]
    assert run() == []
    with_agents = next((k, f) for k, f in sessions if len(f) > 1)
    with open(with_agents[1][-1], "ab") as fp:  # a subagent's file grows
        fp.write(b'{"x": 1}\n')
    assert run() == [with_agents[0]]
    key, files = sessions[0]
    data = Path(files[0]).read_bytes()
    Path(files[0]).write_bytes(data[::-1])  # same size, other bytes
    assert run() == [key]
    Path(files[0]).write_bytes(data[: len(data) // 2])
    assert run() == [key]
    key, files = sessions[1]
    os.unlink(files[0])
    assert run() == [key]
    stats = Stats()
    rows_by_session(sessions[2:], compute, CODEC, kind="sessions", root=cache, stats=stats)
    assert stats.unchanged == len(sessions) - 2
    other = dataclass_codec(Row, "test-2")  # other price data: every session again
    calls.clear()
    rows_by_session(sessions, compute, other, kind="sessions", root=cache)
    assert len(calls) == len(sessions)
