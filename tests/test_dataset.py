"""The Parquet dataset: export, then audit over it equals the audit of the logs.

docs/teams.md is the user's side of this; the schema is cachediag.dataset.schema.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cachediag.dataset.schema import NAMES, SCHEMA_FILE, SCHEMA_VERSION
from tests.conftest import FIXTURES, REAL
from tests.dataset_support import assert_same, audit_json, export, require_module, run

BY = ["project", "session", "day", "week", "month", "gap", "model", "cause", "stream-kind"]


@pytest.fixture(scope="module")
def duckdb() -> Any:
    require_module("pyarrow")
    return require_module("duckdb")


@pytest.fixture(scope="module")
def real_dataset(duckdb: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ds") / "dataset"
    export([REAL], out, "host=laptop-1", "user=ada", "team=payments")
    return out


def _rows(duckdb: Any, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    try:
        return [tuple(r) for r in con.execute(sql).fetchall()]
    finally:
        con.close()


def _count(duckdb: Any, root: Path) -> tuple[int, int]:
    [row] = _rows(
        duckdb,
        f"SELECT count(*), count(DISTINCT request_key) FROM "
        f"read_parquet('{root}/**/*.parquet', hive_partitioning=true)",
    )
    return int(row[0]), int(row[1])


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
@pytest.mark.parametrize("by", BY)
def test_audit_of_the_dataset_equals_the_audit_of_the_logs(
    real_dataset: Path, by: str, zone: str
) -> None:
    want = audit_json("--by", by, "--timezone", zone, str(REAL))
    got = audit_json("--by", by, "--timezone", zone, str(real_dataset))
    assert_same(got, want)


def test_corpus_round_trip(duckdb: Any, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    export([corpus], out)
    for by in BY:
        assert_same(audit_json("--by", by, str(out)), audit_json("--by", by, str(corpus)), by)
    total = audit_json(str(corpus))["totals"]["requests"]
    assert _count(duckdb, out) == (total, total)


def test_export_twice_adds_no_row(duckdb: Any, tmp_path: Path) -> None:
    out = tmp_path / "d"
    first = export([REAL], out, "host=h1")
    files = sorted(out.rglob("*.parquet"))
    again = export([REAL], out, "host=h1")
    assert sorted(out.rglob("*.parquet")) == files
    assert " 0 new written" in again.stderr and "420 new written" in first.stderr
    assert _count(duckdb, out) == (420, 420)
    # Nothing half-written is left beside the parts.
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_export_adds_only_what_is_new(duckdb: Any, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(REAL / "spotter", logs / "spotter")
    out = tmp_path / "d"
    export([logs], out)
    before = _count(duckdb, out)[0]
    shutil.copytree(REAL / "claude-code-viewer", logs / "claude-code-viewer")
    export([logs], out)
    added = audit_json(str(REAL / "claude-code-viewer"))["totals"]["requests"]
    assert _count(duckdb, out) == (before + added, before + added)


def test_layout_schema_and_labels(real_dataset: Path, duckdb: Any) -> None:
    parts = sorted(real_dataset.rglob("*.parquet"))
    assert parts and all(p.name.startswith("part-") for p in parts)
    assert {p.parent.name for p in parts} == {"host=laptop-1"}
    assert all(p.parent.parent.name.startswith("day=20") for p in parts)
    doc = json.loads((real_dataset / SCHEMA_FILE).read_text())
    assert doc["schema_version"] == SCHEMA_VERSION
    assert [c["name"] for c in doc["columns"]] == [*NAMES, "day", "host"]
    pq = require_module("pyarrow.parquet")
    from cachediag.dataset.schema import arrow_schema

    assert pq.read_schema(parts[0]).remove_metadata() == arrow_schema()
    rows = _rows(
        duckdb,
        f"SELECT DISTINCT user, labels['team'] AS team, host FROM read_parquet("
        f"'{real_dataset}/**/*.parquet', hive_partitioning=true)",
    )
    assert rows == [("ada", "payments", "laptop-1")]


def test_many_hosts_into_one_folder(duckdb: Any, tmp_path: Path) -> None:
    out = tmp_path / "shared"
    export([REAL / "spotter"], out, "host=a", "user=ada")
    export([REAL / "claude-code-viewer"], out, "host=b", "user=bob")
    by_host = {g["key"]: g for g in audit_json("--by", "host", str(out))["groups"]}
    spotter = audit_json(str(REAL / "spotter"))["totals"]
    viewer = audit_json(str(REAL / "claude-code-viewer"))["totals"]
    assert_same({**by_host["a"], "key": "total"}, spotter)
    assert_same({**by_host["b"], "key": "total"}, viewer)
    users = {g["key"] for g in audit_json("--by", "user", str(out))["groups"]}
    assert users == {"ada", "bob"}
    # Two folders (or many) audit as one.
    split = tmp_path / "other"
    export([REAL / "claude-trace"], split, "host=c")
    both = audit_json(str(out), str(split))["totals"]["requests"]
    assert both == audit_json(str(REAL))["totals"]["requests"]


def test_windows(real_dataset: Path) -> None:
    for window in (["--since", "2026-02-11"], ["--until", "2026-02-11"], ["--since", "7d"]):
        common = ["--by", "day", "--now", "1770940800", *window]
        want = audit_json(*common, str(REAL))
        got = audit_json(*common, str(real_dataset))
        for key in ("totals", "groups", "top_misses", "sessions", "first_at", "last_at"):
            assert_same(got[key], want[key], key)


def test_no_text_in_the_dataset(duckdb: Any, tmp_path: Path) -> None:
    out = tmp_path / "d"
    export([FIXTURES / "captures" / "tools_changed.jsonl"], out)
    cells = _rows(
        duckdb, f"SELECT * FROM read_parquet('{out}/**/*.parquet', hive_partitioning=true)"
    )
    text = repr(cells)
    assert "PROMPT-SECRET" not in text and "sk-ant" not in text
    assert "tools_changed" in text  # the cause is there, not the tool list


def test_dataset_only_options(real_dataset: Path) -> None:
    result = run("audit", "--by", "host", str(REAL))
    assert result.exit_code == 2 and "needs a dataset" in result.output
    result = run("audit", "--pricing", str(REAL / "x.json"), str(real_dataset))
    assert result.exit_code == 1 and "priced at export" in result.output
    result = run("export", str(REAL), "--output", str(real_dataset), "--label", "nolabel")
    assert result.exit_code == 2 and "key=value" in result.output


def test_a_newer_schema_is_not_written_into(duckdb: Any, tmp_path: Path) -> None:
    out = tmp_path / "d"
    out.mkdir()
    (out / SCHEMA_FILE).write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1}))
    result = run("export", str(REAL / "spotter"), "--output", str(out))
    assert result.exit_code == 1 and "schema version" in result.output
    assert not list(out.rglob("*.parquet"))


def test_empty_dataset_is_a_clear_error(duckdb: Any, tmp_path: Path) -> None:
    (tmp_path / SCHEMA_FILE).write_text("{}")
    result = run("audit", str(tmp_path))
    assert result.exit_code == 1 and "no Parquet files" in result.output


def test_otel_rows_say_their_ttl_was_assumed(duckdb: Any, tmp_path: Path) -> None:
    otel = tmp_path / "otel.jsonl"
    line = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "timeUnixNano": "1764460800000000000",
                                "body": {"stringValue": "claude_code.api_request"},
                                "attributes": [
                                    {"key": "session.id", "value": {"stringValue": "s"}},
                                    {"key": "model", "value": {"stringValue": "claude-opus-4-5"}},
                                    {"key": "input_tokens", "value": {"intValue": "5"}},
                                    {"key": "cache_creation_tokens", "value": {"intValue": "900"}},
                                ],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    otel.write_text(json.dumps(line) + "\n")
    result = export([otel], tmp_path / "d")
    assert "1h assumed" not in result.stderr and "5m assumed" in result.stderr
    result = run("export", str(otel), "--output", str(tmp_path / "e"), "--otel-ttl", "1h")
    assert result.exit_code == 0 and "1h assumed" in result.stderr
    rows = _rows(duckdb, f"SELECT ttl, ttl_assumed FROM read_parquet('{tmp_path}/e/**/*.parquet')")
    assert rows == [("1h", True)]


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_duckdb(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("duckdb"):
            raise ImportError("No module named 'duckdb'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_duckdb)
    monkeypatch.delitem(__import__("sys").modules, "duckdb", raising=False)
    from cachediag.dataset import require
    from cachediag.errors import CachediagError

    with pytest.raises(CachediagError, match=r"pip install '\.\[fleet\]'.*the fleet extra"):
        require("duckdb")


@pytest.mark.parametrize("by", ["cause", "session", "day"])
def test_tables_and_csv_of_the_dataset_are_those_of_the_logs(real_dataset: Path, by: str) -> None:
    """Tables and CSV count the sessions without listing them (``Audit.span``); what they
    print must not change for it."""
    env = {"COLUMNS": "120", "NO_COLOR": "1"}
    sessions = audit_json(str(REAL))["sessions"]
    for extra in (["--csv"], []):
        args = ["audit", "--by", by, "--timezone", "UTC", *extra]
        want = run(*args, str(REAL), env=env)
        got = run(*args, str(real_dataset), env=env)
        assert want.exit_code == got.exit_code == 0, got.output
        assert got.stdout == want.stdout
    assert f"Audit of {sessions} sessions" in got.stdout


def test_unpriced_models_and_the_price_source(duckdb: Any, tmp_path: Path) -> None:
    """Prices that leave a model out (the golden price file has no Haiku 3.5): it is
    unpriced in the dataset as in the logs (``unpriced_models`` comes from its own
    query, run only when something is unpriced)."""
    prices = FIXTURES / "prices" / "golden.json"
    out = tmp_path / "dataset"
    result = run("export", str(REAL), "--output", str(out), "--pricing", str(prices))
    assert result.exit_code == 0, result.output
    for by in ("model", "cause"):
        want = audit_json("--by", by, "--pricing", str(prices), str(REAL))
        assert want["unpriced_models"] and want["totals"]["unpriced_requests"] > 0
        assert want["pricing_source"].startswith("golden test prices")
        assert_same(audit_json("--by", by, str(out)), want, by)


def _full_pass_misses(
    duckdb: Any, roots: list[Path], top: int, window: Any
) -> list[dict[str, Any]]:
    """The top misses as one pass over every file would find them (what ``audit --sql``
    prints): the answer the narrowed read must give."""
    from cachediag.dataset.dialect import Dialect
    from cachediag.dataset.sql import top_misses_sql

    con = duckdb.connect()
    try:
        con.execute(
            "CREATE VIEW requests AS SELECT * FROM read_parquet(["
            + ", ".join(f"'{root}/**/*.parquet'" for root in roots)
            + "], hive_partitioning = true)"
        )
        cur = con.execute(top_misses_sql(top, window, Dialect.DUCKDB))
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


@pytest.mark.parametrize("top", [1, 3, 10, 40, 100_000])
def test_top_misses_read_from_the_files_that_hold_them(
    duckdb: Any, tmp_path: Path, top: int
) -> None:
    """``run_audit`` reads the top misses only from the files holding a part's dearest
    miss: the same misses, in the same order, as a pass over every file, whether the
    top is shorter or longer than the misses, in a window, and with unpriced misses
    (they rank last, as cost -1)."""
    from cachediag.analysis.group_keys import GroupBy
    from cachediag.dataset.dialect import Window
    from cachediag.dataset.query import run_audit

    folders = [tmp_path / name for name in ("a", "b")]
    export([REAL], folders[0], "host=a")
    # The same requests again, Opus unpriced: the golden prices without it.
    golden = json.loads((FIXTURES / "prices" / "golden.json").read_text())
    del golden["models"]["claude-opus-4-6"]
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(golden))
    result = run("export", str(REAL), "--output", str(folders[1]), "--pricing", str(prices))
    assert result.exit_code == 0, result.output
    assert len(list(tmp_path.glob("*/day=*/host=*/*.parquet"))) > 6
    for window in (Window(), Window(since=1770800000.0), Window(until=1770800000.0)):
        for by in (GroupBy.CAUSE, GroupBy.SESSION):
            audit = run_audit(folders, by, window, top=top, session_lines=False).audit
            got = [
                (m.cost_usd, m.reprocessed_tokens, m.at, m.session_id, m.index)
                for m in audit.top_misses
            ]
            full = _full_pass_misses(duckdb, folders, top, window)
            want = [
                (w["cost_usd"], w["reprocessed_tokens"], w["at"], w["session_id"], w["index"])
                for w in full
            ]
            # The same ranks in the same order; the same misses above the last rank
            # (misses that tie with the last one may be either).
            assert [g[:3] for g in got] == [w[:3] for w in want]
            last = want[-1][:3] if want else None
            assert {g for g in got if g[:3] != last} == {w for w in want if w[:3] != last}
    every = run_audit(folders, GroupBy.CAUSE, Window(), top=100_000).audit.top_misses
    assert any(m.cost_usd is None for m in every) and any(m.cost_usd for m in every)
