"""``cachediag audit`` prints exactly what it printed before its speed work (issue 14).

Each case's stdout was recorded once, before any change to the audit path, into
``tests/data/audit_golden/``; every later run must print the same bytes: the JSON, the
CSV and the tables, on the bundled real sessions and on a generated history tree (copies,
backups, two config dirs). Prices come from a fixed price file, so the files hold
whatever a genai-prices release says; the cases priced by the bundled genai-prices run
when the installed release is the one they were recorded with.

Re-record (only when an output change is intended, and say so in the commit):
``python -m tests.test_audit_golden``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from cachediag.cli import main
from cachediag.report.audit_report import AuditReport, MissOut, report_json
from tests.conftest import FIXTURES, REAL, ROOT
from tests.history_tree import build_history

GOLDEN = ROOT / "tests" / "data" / "audit_golden"
PRICES = FIXTURES / "prices" / "golden.json"
GENAI_RECORDED = "0.2.3"
"""The genai-prices release the ``genai-*`` cases were recorded with."""
HISTORY = "{history}"
"""Stands for the generated history tree's two project folders."""

FIXED = ["--pricing", str(PRICES), "--now", "1800000000", "--no-progress"]
CASES: dict[str, list[str]] = {
    **{
        f"real-json-{by}": ["--json", "--by", by, str(REAL)]
        for by in ("project", "session", "day", "week", "month", "gap", "model", "cause")
    },
    "real-json-stream-kind-since": [
        "--json",
        "--by",
        "stream-kind",
        "--since",
        "2026-02-11",
        str(REAL),
    ],
    "real-json-paris": ["--json", "--by", "day", "--timezone", "Europe/Paris", str(REAL)],
    "real-json-top0": ["--json", "--top", "0", "--jobs", "1", str(REAL)],
    "real-csv-day": ["--csv", "--by", "day", str(REAL)],
    "real-table": [str(REAL)],
    "real-table-tokens-cause": ["--tokens", "--by", "cause", str(REAL)],
    "real-table-gap": ["--by", "gap", "--jobs", "2", str(REAL)],
    "history-json-session": ["--json", "--by", "session", HISTORY],
    "history-json-model": ["--json", "--by", "model", "--jobs", "2", HISTORY],
    "history-table-day": ["--by", "day", "--tokens", HISTORY],
}
GENAI_CASES: dict[str, list[str]] = {
    "genai-real-json": ["--json", "--now", "1800000000", "--no-progress", str(REAL)],
    "genai-real-table": ["--by", "model", "--now", "1800000000", "--no-progress", str(REAL)],
    "genai-history-json": ["--json", "--by", "day", "--no-progress", HISTORY],
}


@pytest.fixture(scope="module")
def history() -> Iterator[list[str]]:
    root = Path(tempfile.mkdtemp(prefix="cachediag-golden-"))
    try:
        yield [str(d / "projects") for d in build_history(root)]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_case(args: list[str], history: list[str], cache: Path) -> bytes:
    argv = [a for arg in args for a in (history if arg == HISTORY else [arg])]
    env = {"COLUMNS": "100", "TZ": "UTC", "XDG_CACHE_HOME": str(cache)}
    result = CliRunner(env=env).invoke(main, ["audit", *argv])
    assert result.exit_code == 0, result.output
    # Paths in the output (the history tree's temporary folder) are made stable.
    return result.stdout_bytes.replace(os.path.commonpath(history).encode(), b"{history}")


def _check(name: str, args: list[str], history: list[str], tmp_path: Path) -> None:
    expected = (GOLDEN / f"{name}.out").read_bytes()
    assert run_case(args, history, tmp_path) == expected, name


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_unchanged(name: str, history: list[str], tmp_path: Path) -> None:
    _check(name, [*FIXED, *CASES[name]], history, tmp_path)


@pytest.mark.parametrize("name", sorted(GENAI_CASES))
def test_output_unchanged_genai_prices(name: str, history: list[str], tmp_path: Path) -> None:
    if version("genai-prices") != GENAI_RECORDED:
        pytest.skip(f"recorded with genai-prices {GENAI_RECORDED}, not {version('genai-prices')}")
    # Twice: prices converted from genai-prices, then the same prices read back from the
    # disk cache the first run saved.
    for _ in range(2):
        _check(name, GENAI_CASES[name], history, tmp_path)


def test_schema_unchanged() -> None:
    result = CliRunner().invoke(main, ["audit", "--schema"])
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == (GOLDEN / "schema.out").read_bytes()


@pytest.mark.parametrize("name", sorted(n for n in CASES if "-json-" in n))
def test_json_is_what_pydantic_writes(name: str) -> None:
    # The recorded JSON was written by pydantic models; the same types as dataclasses
    # go through orjson now. pydantic, reading and writing them again, must agree.
    recorded = (GOLDEN / f"{name}.out").read_bytes().rstrip(b"\n")
    adapter = TypeAdapter(AuditReport)
    report = adapter.validate_json(recorded)
    assert adapter.dump_json(report) == recorded
    assert report_json(report) == recorded


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
_FLOAT = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1e-7, 1e16, 0.1])


@settings(max_examples=200, deadline=None)
@given(
    st.builds(
        MissOut,
        session_id=_TEXT,
        project=st.none() | _TEXT,
        stream=_TEXT,
        stream_kind=_TEXT,
        index=st.integers(0, 2**53),
        at=_FLOAT,
        model=st.none() | _TEXT,
        causes=st.lists(_TEXT, max_size=3),
        gap_s=st.none() | _FLOAT,
        reprocessed_tokens=st.integers(0, 2**53),
        cost_usd=st.none() | _FLOAT,
    )
)
def test_orjson_writes_what_pydantic_writes(row: MissOut) -> None:
    # Names, paths and models from logs (any text), and any float a cost can be.
    assert orjson.dumps(row) == TypeAdapter(MissOut).dump_json(row)


def test_json_output_imports_neither_pydantic_nor_rich(tmp_path: Path) -> None:
    # The first run converts genai-prices' data (which imports pydantic) and saves the
    # prices it used; a run served from that cache, as most runs are, needs neither.
    code = (
        "import sys; from cachediag.cli import main; "
        "main(['audit', '--json', '--no-progress', sys.argv[1]], standalone_mode=False); "
        "print(sorted(m for m in ('pydantic', 'rich') if m in sys.modules), file=sys.stderr)"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    loaded = [
        subprocess.run(
            [sys.executable, "-c", code, str(REAL)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stderr.splitlines()[-1]
        for _ in range(2)
    ]
    assert loaded == ["['pydantic']", "[]"]


def record() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="cachediag-golden-"))
    try:
        history = [str(d / "projects") for d in build_history(root / "tree")]
        for name, args in {**{k: [*FIXED, *v] for k, v in CASES.items()}, **GENAI_CASES}.items():
            (GOLDEN / f"{name}.out").write_bytes(run_case(args, history, root / "cache"))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    record()
    sys.exit(0)
