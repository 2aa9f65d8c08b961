"""``audit DIR`` reads the dataset named, as named: no pattern in its path, and no
partition folder above it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REAL
from tests.dataset_support import audit_json, export, require_module


@pytest.fixture(scope="module")
def duckdb() -> Any:
    require_module("pyarrow")
    return require_module("duckdb")


@pytest.mark.parametrize(("name", "sibling"), [("ds[1]", "ds1"), ("x*y", "xAAy"), ("q?r", "qZr")])
def test_glob_characters_in_a_dataset_path_are_literal(
    duckdb: Any, tmp_path: Path, name: str, sibling: str
) -> None:
    export([REAL / "spotter"], tmp_path / sibling, "host=other")
    export([REAL / "claude-trace"], tmp_path / name, "host=mine")
    # The export compared keys with its own files only (none of the sibling's).
    want = audit_json(str(REAL / "claude-trace"))["totals"]
    got = audit_json("--by", "host", str(tmp_path / name))
    assert [g["key"] for g in got["groups"]] == ["mine"]
    assert got["totals"]["requests"] == want["requests"]
    # A part file named alone, and the top misses read again from their files.
    [part, *_] = sorted((tmp_path / name).rglob("*.parquet"))
    alone = audit_json("--by", "host", str(part))
    assert [g["key"] for g in alone["groups"]] == ["mine"]


def test_partition_folders_above_a_dataset_are_not_its_columns(duckdb: Any, tmp_path: Path) -> None:
    ds = tmp_path / "hp" / "host=shared" / "day=1999-01-01" / "ds"
    export([REAL], ds, "host=laptop")
    by_host = audit_json("--by", "host", str(ds))
    assert [g["key"] for g in by_host["groups"]] == ["laptop"]
    days = [g["key"] for g in audit_json("--by", "day", str(ds))["groups"]]
    assert days == [g["key"] for g in audit_json("--by", "day", str(REAL))["groups"]]


def test_a_file_named_twice_is_read_once(duckdb: Any, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    export([REAL / "claude-trace"], ds, "host=mine")
    once = audit_json(str(ds))["totals"]
    [part, *_] = sorted(ds.rglob("*.parquet"))
    (tmp_path / "link.parquet").symlink_to(part)
    for named in (
        [ds, ds],
        [ds, part],
        [part, ds],
        [ds, tmp_path / "." / "ds"],
        [ds, tmp_path / "link.parquet"],
    ):
        assert audit_json(*map(str, named))["totals"] == once, named
