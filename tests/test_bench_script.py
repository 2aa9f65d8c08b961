"""The benchmark's transcript tree: fresh, consistent session ids and faithful copies."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import REAL, ROOT, bench_analyze_module

SESSION_ID = re.compile(rb'"sessionId":"([^"]+)"')
MESSAGE_ID = re.compile(rb'"id":"(msg_[^"]+)"')


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return bench_analyze_module()


def _totals(path: Path) -> Counter[tuple[int, ...]]:
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", "0", str(path)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line)["totals"] for line in result.stdout.splitlines()]
    return Counter(tuple(row.values()) for row in rows)


def test_units_are_transcripts_only(bench: ModuleType) -> None:
    units = bench.read_units(REAL)
    # claude-trace holds a request log, not a transcript: no sessionId, not copied.
    assert {u.project for u in units} == {"spotter", "claude-code-viewer"}
    by_id = {u.session_id: u for u in units}
    # The two Claude Code 2.0 agent files beside a session travel with that session.
    names = {rel.name for rel, _ in by_id["5c0375b4-57a5-4f26-b12d-d022ee4e51b7"].files}
    assert {"agent-test-hash-123.jsonl", "agent-test-hash-456.jsonl"} <= names


def test_tree_ids_are_fresh_and_consistent(bench: ModuleType, tmp_path: Path) -> None:
    units = bench.read_units(REAL)
    corpus_bytes = sum(u.size for u in units)
    size, files, sessions = bench.build_tree(tmp_path, units, int(corpus_bytes * 2.5))
    assert size >= corpus_bytes * 2.5
    assert 2 * len(units) < sessions <= 3 * len(units)  # two whole copies, part of a third

    projects = tmp_path / "projects"
    seen_ids: set[str] = set()
    owner_of_message: dict[str, str] = {}
    for path in sorted(projects.rglob("*.jsonl")):
        data = path.read_bytes()
        ids = {m.decode() for m in SESSION_ID.findall(data)}
        assert len(ids) == 1, path
        (sid,) = ids
        rel = path.relative_to(projects)
        if "subagents" in rel.parts:
            assert rel.parts[1] == sid  # <project>/<session>/subagents/...
        elif not path.name.startswith("agent-"):
            assert path.stem == sid
        seen_ids.add(sid)
        for message_id in {m.decode() for m in MESSAGE_ID.findall(data)}:
            # A response id may repeat inside one copy of a session, never across copies.
            assert owner_of_message.setdefault(message_id, sid) == sid, path
    assert len(seen_ids) == sessions
    assert files == sum(1 for _ in projects.rglob("*.jsonl"))


def test_copies_keep_every_token(bench: ModuleType, tmp_path: Path) -> None:
    units = bench.read_units(REAL)
    bench.build_tree(tmp_path, units, int(sum(u.size for u in units) * 1.5))
    for project in ("spotter", "claude-code-viewer"):
        copy = tmp_path / "projects" / f"{project}-copy01"
        assert _totals(copy) == _totals(REAL / project)


def test_token_check_folds_agent_files_by_folder_not_cwd(bench: ModuleType) -> None:
    """The check agrees with ccusage's recorded answer on the bundled sessions.

    Their transcripts carry a cwd (`/path/to/Demo`), which cachediag names the project by,
    while ccusage names it by the folder: the agent-*.jsonl rows must still be folded.
    """
    recorded = json.loads((ROOT / "tests/data/ccusage_sessions_fixtures.json").read_text())
    trees = [str(ROOT / tree) for tree in recorded["trees"]]
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", "0", *trees])
    assert result.exit_code == 0, result.output
    ccusage_stdout = json.dumps({"sessions": recorded["sessions"]}).encode()
    assert bench.check_totals(result.stdout.encode(), ccusage_stdout)
