"""``audit PATHS`` and ``export`` + ``audit DIR`` count the same requests: one rule
(``pipeline_audit.rendered_once``) says which file a response counts in, for both."""

from __future__ import annotations

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
