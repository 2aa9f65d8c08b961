"""``cachediag audit --sql``: the printed SQL, run by DuckDB and by Spark over the same
dataset, gives the figures of ``audit --json`` (the promise of docs/teams.md).

The Spark test runs pyspark in local mode (the engine a cluster runs) with Debian's Java;
.ci/run installs both, so it runs in CI rather than skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from cachediag.cli.audit import BY_CHOICES
from cachediag.report.audit_report import GroupRow
from tests.conftest import REAL
from tests.dataset_support import assert_same, audit_json, export, require_module, run

BY = BY_CHOICES
GROUP_FIELDS = [f.name for f in fields(GroupRow)]
"""The JSON contract's group row: what the printed queries' columns must be named."""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_module("pyarrow")
    require_module("duckdb")
    out = tmp_path_factory.mktemp("sql") / "dataset"
    export([REAL / "spotter"], out, "host=laptop-1", "user=ada")
    export([REAL / "claude-code-viewer", REAL / "claude-trace"], out, "host=laptop-2", "user=bob")
    return out


def statements(sql: str) -> list[tuple[str, str]]:
    """The printed statements (each ends with ``;``), each with the comment above it."""
    out = []
    for chunk in sql.split(";\n"):
        lines = chunk.splitlines()
        body = "\n".join(line for line in lines if not line.startswith("--"))
        titles = [line[3:] for line in lines if line.startswith("-- ")]
        if body.strip():
            out.append((titles[-1] if titles else "", body.strip().rstrip(";")))
    return out


def check_against_json(
    dataset: Path, by: str, dialect: str, query: Callable[[str], list[dict[str, Any]]]
) -> None:
    common = ["--by", by, "--top", "5", "--timezone", "UTC"]
    result = run("audit", "--sql", "--sql-dialect", dialect, *common)
    assert result.exit_code == 0, result.output
    # Every statement runs, in order; the first ones build audit_parts and return nothing.
    answers = [(title, query(body)) for title, body in statements(result.stdout)]

    def answer(title: str) -> list[dict[str, Any]]:
        [rows] = [rows for t, rows in answers if t.startswith(title)]
        return rows

    report = audit_json(*common, str(dataset))

    def rounded(row: dict[str, Any], fields: list[str]) -> dict[str, Any]:
        return {f: round(row[f], 6) if isinstance(row[f], float) else row[f] for f in fields}

    groups = answer("groups (")
    assert_same([rounded(g, GROUP_FIELDS) for g in groups], report["groups"], "groups")
    assert_same(rounded(answer("totals")[0], GROUP_FIELDS), report["totals"], "totals")
    policies = [rounded(p, list(report["whatif"]["policies"][0])) for p in answer("what-if")]
    order = [p["policy"] for p in report["whatif"]["policies"]]
    assert_same(
        sorted(policies, key=lambda p: order.index(p["policy"])), report["whatif"]["policies"]
    )
    misses = [
        {**rounded(m, list(m)), "causes": m["causes"].split("+"), "gap_s": round(m["gap_s"], 3)}
        for m in answer("the 5 most expensive misses")
    ]
    assert_same(misses, report["top_misses"], "top_misses")
    sessions = answer("sessions (whatif_by_session)")
    assert [s["session_id"] for s in sessions] == [
        s["session_id"] for s in report["whatif_by_session"]
    ]
    [count] = answer("sessions in all")
    assert_same(
        count,
        {k: report[k] for k in ("sessions", "first_at", "last_at", "skipped_lines")},
        "sessions in all",
    )
    models = [m["model"] for m in answer("models without a price")]
    assert models == report["unpriced_models"]
    sources = [s["pricing_source"] for s in answer("price sources")]
    assert ", ".join(sources) == report["pricing_source"]
    assert [a["agent"] for a in answer("agents")] == report["agents"]


@pytest.mark.parametrize("by", BY)
def test_duckdb_sql_over_a_view_named_requests(dataset: Path, by: str) -> None:
    duckdb = require_module("duckdb")
    con = duckdb.connect()
    con.execute(
        f"CREATE VIEW requests AS SELECT * FROM read_parquet('{dataset}/**/*.parquet', "
        "hive_partitioning = true)"
    )

    def query(sql: str) -> list[dict[str, Any]]:
        cur = con.execute(sql)
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    try:
        check_against_json(dataset, by, "duckdb", query)
    finally:
        con.close()


SPARK_RUNNER = """
import json, sys
from pyspark.sql import SparkSession

dataset, sql_files = sys.argv[1], sys.argv[2:]
spark = (
    SparkSession.builder.master("local[1]")
    .appName("cachediag-test")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.sql.session.timeZone", "UTC")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
spark.read.parquet(dataset).createOrReplaceTempView("requests")
out = {}
for path in sql_files:
    out[path] = [[row.asDict() for row in spark.sql(q).collect()] for q in json.load(open(path))]
spark.stop()
print(json.dumps(out))
"""


def test_spark_sql_gives_the_same_totals_and_breakdowns(dataset: Path, tmp_path: Path) -> None:
    """pyspark runs in a process of its own: its JVM gateway leaves threads behind, and
    this process forks workers in other tests."""
    if shutil.which("java") is None:
        if os.environ.get("CI"):
            pytest.fail("java is not installed, but .ci/run installs default-jre-headless")
        pytest.skip("no Java runtime (apt-get install default-jre-headless)")
    require_module("pyspark")
    files = []
    for by in BY:
        result = run(
            "audit",
            "--sql",
            "--sql-dialect",
            "spark",
            "--by",
            by,
            "--top",
            "5",
            "--timezone",
            "UTC",
        )
        assert result.exit_code == 0, result.output
        path = tmp_path / f"{by}.json"
        path.write_text(json.dumps([body for _, body in statements(result.stdout)]))
        files.append(path)
    runner = tmp_path / "spark_runner.py"
    runner.write_text(SPARK_RUNNER)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, str(runner), str(dataset), *map(str, files)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    for by, path in zip(BY, files, strict=True):
        results = iter(answers[str(path)])
        check_against_json(dataset, by, "spark", lambda sql, it=results: next(it))


def test_duckdb_sql_by_agent_over_every_agent(tmp_path: Path) -> None:
    """The printed --by agent query names each row's agent from its format, as the audit
    of the logs does, over a dataset of all four agents' sessions."""
    from tests.test_dataset_agreement import every_agent

    duckdb = require_module("duckdb")
    out = tmp_path / "dataset"
    export(every_agent(tmp_path), out, "host=h")
    con = duckdb.connect()
    con.execute(
        f"CREATE VIEW requests AS SELECT * FROM read_parquet('{out}/**/*.parquet', "
        "hive_partitioning = true)"
    )

    def query(sql: str) -> list[dict[str, Any]]:
        cur = con.execute(sql)
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    try:
        check_against_json(out, "agent", "duckdb", query)
        agents = [r["agent"] for r in query("SELECT DISTINCT agent FROM requests ORDER BY 1")]
        assert agents == audit_json(str(out))["agents"] == ["claude", "codex", "gemini", "opencode"]
    finally:
        con.close()
