"""``cachediag export`` over logs that change between exports, and over bad inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, REAL
from tests.dataset_support import assert_same, audit_json, export, require_module, run

SESSION = FIXTURES / "proxy" / "session.jsonl"


@pytest.fixture(scope="module")
def duckdb() -> Any:
    require_module("pyarrow")
    return require_module("duckdb")


def _streamed(lines: list[str]) -> tuple[list[str], list[str]]:
    """The session as Claude Code writes it while its last response streams (its
    first content block, output count so far), and once that response is whole."""
    last = json.loads(lines[-1])
    first_block = json.loads(lines[-1])
    first_block["message"]["usage"]["output_tokens"] = 7
    first_block["uuid"] = last["uuid"] + "-0"
    before = lines[:-1]
    return [*before, json.dumps(first_block)], [*before, json.dumps(first_block), lines[-1]]


def test_a_response_exported_while_written_is_replaced_by_its_whole_copy(
    duckdb: Any, tmp_path: Path
) -> None:
    partial, whole = _streamed(SESSION.read_text().splitlines())
    log = tmp_path / "logs" / "s.jsonl"
    log.parent.mkdir()
    log.write_text("\n".join(partial) + "\n")
    out = tmp_path / "ds"
    export([log], out, "host=h")
    before = audit_json(str(out))["totals"]
    assert before["output_tokens"] == 4 * 200 + 7
    log.write_text("\n".join(whole) + "\n")
    again = export([log], out, "host=h")
    assert "0 new written" in again.stderr
    assert "1 grown since the last export updated" in again.stderr
    got = audit_json("--by", "session", str(out))
    assert got["totals"]["output_tokens"] == 5 * 200
    assert_same(got, audit_json("--by", "session", str(log)))
    # One row per request still, and nothing half-written beside the parts.
    assert sum(1 for _ in out.rglob("*.parquet")) == 1
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    # A smaller copy (the same log cut again) never replaces the larger one.
    log.write_text("\n".join(partial) + "\n")
    export([log], out, "host=h")
    assert audit_json(str(out))["totals"]["output_tokens"] == 5 * 200


def test_export_into_a_dataset_with_a_corrupt_part_names_it(duckdb: Any, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    export([REAL / "spotter"], out, "host=h")
    [part, *_] = sorted(out.rglob("*.parquet"))
    good = part.read_bytes()
    part.write_bytes(good[: len(good) // 2])
    parts = sorted(out.rglob("*"))
    result = run("export", str(REAL), "--output", str(out), "--label", "host=h")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and str(part) in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.splitlines()) == 1
    # Its audit says the same, in one line.
    audited = run("audit", str(out))
    assert audited.exit_code == 1 and len(audited.stderr.splitlines()) == 1
    assert audited.stderr.startswith(f"Error: {part}: not a readable Parquet file")
    # Nothing was written, nothing lost: the part restored, the export goes on.
    assert sorted(out.rglob("*")) == parts and len(part.read_bytes()) == len(good) // 2
    part.write_bytes(good)
    export([REAL], out, "host=h")
    assert audit_json(str(out))["totals"]["requests"] == audit_json(str(REAL))["totals"]["requests"]


def test_export_of_a_path_that_does_not_exist_fails_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    result = run("export", str(missing), "--output", str(tmp_path / "ds"))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == f"Error: {missing}: no such file or directory"


def test_audit_of_a_dataset_with_nothing_in_the_window_says_so(duckdb: Any, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    export([REAL / "spotter"], out, "host=h")
    result = run("audit", "--since", "2027-01-01", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == "No sessions in that window.\n"


def test_a_grown_response_in_a_file_from_before_the_agent_column(
    duckdb: Any, tmp_path: Path
) -> None:
    from tests.test_dataset_agreement import without_agent

    partial, whole = _streamed(SESSION.read_text().splitlines())
    log = tmp_path / "logs" / "s.jsonl"
    log.parent.mkdir()
    log.write_text("\n".join(partial) + "\n")
    out = tmp_path / "ds"
    export([log], out, "host=h")
    without_agent(out)
    log.write_text("\n".join(whole) + "\n")
    again = export([log], out, "host=h")
    assert "1 grown since the last export updated" in again.stderr
    # The file is written again whole, each of its rows with its agent.
    [part] = out.rglob("*.parquet")
    pq = require_module("pyarrow.parquet")
    assert pq.read_table(part).column("agent").to_pylist() == ["claude"] * 5
    assert_same(audit_json("--by", "agent", str(out)), audit_json("--by", "agent", str(log)))
