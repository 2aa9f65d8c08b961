"""What the dataset tests share: the optional extra, exports and audits run in process."""

from __future__ import annotations

import importlib
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main


def require_module(name: str) -> Any:
    """Import an optional test dependency; skip without it, except in CI (.ci/run
    installs it there, so a missing one is a broken CI, not a reason to skip)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed, but .ci/run installs it")
        pytest.skip(f"{name} is not installed (pip install '.[fleet]')")


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    result = CliRunner().invoke(main, list(args), env=env)
    return result


def export(paths: list[Path], out: Path, *labels: str) -> Any:
    args = ["export", *map(str, paths), "--output", str(out)]
    for label in labels:
        args += ["--label", label]
    result = run(*args)
    assert result.exit_code == 0, result.output
    return result


def audit_json(*args: str) -> dict[str, Any]:
    result = run("audit", "--json", *args)
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


COST_TOLERANCE = 2e-6
"""Dollar sums are added in another order by the query engine: equal to the micro-dollar."""


def assert_same(a: Any, b: Any, where: str = "") -> None:
    """Equal, floats within ``COST_TOLERANCE`` (JSON rounds them to 6 decimals)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, int | float) and isinstance(b, int | float), where
        assert math.isclose(a, b, rel_tol=0, abs_tol=COST_TOLERANCE), f"{where}: {a} != {b}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"
