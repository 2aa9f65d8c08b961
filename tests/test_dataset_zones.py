"""``audit DIR --timezone ZONE`` takes every zone the logs' audit takes, with the same
days: local times come from Python's zone rules (``sql.zone_offsets``), not the engine's."""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from cachediag.dataset.dialect import zone_offsets
from tests.conftest import REAL
from tests.dataset_support import assert_same, audit_json, export, require_module, run

ZONES = ["posix/Europe/Paris", "Australia/Lord_Howe", "America/St_Johns", "localtime"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_module("pyarrow")
    require_module("duckdb")
    out = tmp_path_factory.mktemp("zones") / "ds"
    export([REAL], out, "host=h")
    return out


@pytest.mark.parametrize("by", ["day", "week", "month"])
@pytest.mark.parametrize("zone", ZONES)
def test_every_zone_of_the_logs_works_on_a_dataset(dataset: Path, zone: str, by: str) -> None:
    want = audit_json("--by", by, "--timezone", zone, str(REAL))
    assert_same(audit_json("--by", by, "--timezone", zone, str(dataset)), want)


@pytest.mark.parametrize("name", ["Australia/Lord_Howe", "Europe/Dublin", "Asia/Kathmandu"])
def test_zone_offsets_are_the_zones_own(name: str) -> None:
    zone: Any = ZoneInfo(name)
    start, end = 1_600_000_000.0, 1_700_000_000.0
    offsets = zone_offsets(zone, start, end)
    assert len(offsets) > 1 or name == "Asia/Kathmandu"
    rng = random.Random(name)
    # Every change to the second, and random instants between them.
    instants = [t for at, _ in offsets[1:] for t in (at - 1, at)]
    instants += [rng.uniform(start, end) for _ in range(2_000)]
    for at in instants:
        in_force = [off for begin, off in offsets if begin <= at][-1]
        want = datetime.fromtimestamp(at, zone).utcoffset()
        assert want is not None and in_force == want.total_seconds(), at


def test_printed_sql_names_a_posix_zone_as_engines_know_it() -> None:
    result = run("audit", "--sql", "--by", "day", "--timezone", "posix/Europe/Paris")
    assert result.exit_code == 0
    assert "timezone('Europe/Paris'" in result.stdout and "posix/" not in result.stdout
