"""``audit PATHS`` and ``export`` + ``audit DIR`` count the same requests: one rule
(``pipeline_audit.rendered_once``) says which file a response counts in, for both."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.dataset_support import assert_same, audit_json, export, require_module

PROXY = FIXTURES / "proxy"
FOLDERS = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and not p.name.startswith("."))


@pytest.fixture(scope="module")
def duckdb() -> Any:
    require_module("pyarrow")
    return require_module("duckdb")


def _rows(duckdb: Any, root: Path) -> int:
    con = duckdb.connect()
    try:
        [(n,)] = con.execute(
            "SELECT count(*) FROM read_parquet(?, hive_partitioning = false)",
            [[str(p) for p in sorted(root.rglob("*.parquet"))]],
        ).fetchall()
        return int(n)
    finally:
        con.close()


def test_a_transcript_and_its_capture_count_each_request_once() -> None:
    # session.jsonl and the proxy's day file hold the same five responses (same ids).
    report = audit_json("--by", "session", str(PROXY / "session.jsonl"), str(PROXY / "state"))
    assert report["totals"]["requests"] == 5
    # Counted in the first file that holds them: the transcript.
    assert [g["key"] for g in report["groups"]] == ["session"]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_audit_of_the_logs_equals_the_audit_of_their_export(
    duckdb: Any, folder: Path, tmp_path: Path
) -> None:
    want = audit_json("--by", "session", str(folder))
    out = tmp_path / "ds"
    export([folder], out, "host=h")
    if want["totals"]["requests"] == 0:  # prices, status line inputs: no requests
        assert not list(out.rglob("*.parquet"))
        return
    assert _rows(duckdb, out) == want["totals"]["requests"]
    for by in ("session", "cause", "day"):
        logs = audit_json("--by", by, str(folder))
        # Sessions left without a request (all of theirs counted in an earlier file)
        # have no row to be in a dataset.
        logs["empty_sessions"] = 0
        assert_same(audit_json("--by", by, str(out)), logs, by)


def test_the_same_folder_named_twice_counts_once(duckdb: Any, tmp_path: Path) -> None:
    logs = FIXTURES / "real" / "spotter"
    once = audit_json(str(logs))["totals"]
    twice = audit_json(str(logs), str(logs.resolve()))["totals"]
    assert_same(twice, once)


DATA = Path(__file__).parent / "data"
AGENT_HOMES = (DATA / "codex_home_changes", DATA / "gemini_home", DATA / "opencode_home_changes")
TRANSCRIPT = FIXTURES / "real" / "spotter" / "tool_heavy.jsonl"
AGENTS = {"claude", "codex", "gemini", "opencode"}


def every_agent(tmp_path: Path) -> list[Path]:
    """A Claude Code project folder and the recorded homes of the three other agents
    (tests/test_agent_surfaces.py combines them so too)."""
    claude = tmp_path / "-p"
    claude.mkdir()
    shutil.copy(TRANSCRIPT, claude / TRANSCRIPT.name)
    return [claude, *AGENT_HOMES]


def without_agent(root: Path) -> None:
    """``root`` as a cachediag before the ``agent`` column wrote it: its files and its
    ``_schema.json`` without the column."""
    pq = require_module("pyarrow.parquet")
    for path in root.rglob("*.parquet"):
        pq.write_table(pq.read_table(path).drop_columns(["agent"]), path)
    schema = root / "_schema.json"
    document = json.loads(schema.read_text())
    document["columns"] = [c for c in document["columns"] if c["name"] != "agent"]
    schema.write_text(json.dumps(document))


def _agents_column(duckdb: Any, root: Path) -> dict[tuple[str, str], int]:
    con = duckdb.connect()
    try:
        rows = con.execute(
            "SELECT agent, source_format, count(*) FROM read_parquet(?, hive_partitioning = "
            "false) GROUP BY ALL",
            [[str(p) for p in sorted(root.rglob("*.parquet"))]],
        ).fetchall()
        return {(a, f): int(n) for a, f, n in rows}
    finally:
        con.close()


def test_every_agents_export_audits_as_its_logs(duckdb: Any, tmp_path: Path) -> None:
    paths = [str(p) for p in every_agent(tmp_path)]
    out = tmp_path / "ds"
    export([Path(p) for p in paths], out, "host=h")
    # Every row names its agent, the one its format belongs to.
    column = _agents_column(duckdb, out)
    assert {a for a, _ in column} == AGENTS
    assert all(a is not None for a, _ in column)
    for by in ("agent", "session", "cause", "model"):
        logs = audit_json("--by", by, *paths)
        logs["empty_sessions"] = 0
        assert_same(audit_json("--by", by, str(out)), logs, by)
    by_agent = audit_json("--by", "agent", str(out))
    assert by_agent["agents"] == sorted(AGENTS)
    assert {g["key"] for g in by_agent["groups"]} == AGENTS
    requests = {g["key"]: g["requests"] for g in by_agent["groups"]}
    for (agent, _format), n in column.items():
        requests[agent] -= n
    assert set(requests.values()) == {0}


def test_a_dataset_written_before_the_agent_column_is_claude_codes(
    duckdb: Any, tmp_path: Path
) -> None:
    # Not the transcript every_agent copies: two hosts' copies of one response are two.
    spotter = FIXTURES / "real" / "claude-code-viewer"
    out = tmp_path / "ds"
    export([spotter], out, "host=old")
    without_agent(out)
    old = audit_json("--by", "agent", str(out))
    assert [(g["key"], g["requests"]) for g in old["groups"]] == [
        ("claude", old["totals"]["requests"])
    ]
    assert {s["agent"] for s in old["whatif_by_session"]} == {"claude"}
    # Another laptop exports every agent into it: old files and new are read as one.
    paths = every_agent(tmp_path)
    export(paths, out, "host=new")
    assert "agent" in (out / "_schema.json").read_text()
    mixed = audit_json("--by", "agent", str(out))
    assert {g["key"] for g in mixed["groups"]} == AGENTS
    for by in ("agent", "session"):
        logs = audit_json("--by", by, str(spotter), *map(str, paths))
        logs["empty_sessions"] = 0
        assert_same(audit_json("--by", by, str(out)), logs, by)
