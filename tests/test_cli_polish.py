"""Small things users notice: --version, side calls in their own order."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import REAL, ROOT


def test_version_names_the_scanner_and_the_prices() -> None:
    for pure, scanner in (("", None), ("1", "line scanner: Python (CACHEDIAG_PURE_PYTHON is set)")):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "CACHEDIAG_PURE_PYTHON": pure}
        out = subprocess.run(
            [sys.executable, "-m", "cachediag", "--version"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        assert out[0].startswith("cachediag 0.")
        assert out[1].startswith("line scanner: ")
        if scanner is not None:
            assert out[1] == scanner
        assert out[2].startswith("prices: genai-prices ")


def test_side_calls_listed_in_their_numbered_order() -> None:
    capture = REAL / "claude-trace" / "test-traffic.jsonl"
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", "0", str(capture)])
    ids = [s["id"] for s in json.loads(result.stdout)["streams"] if s["kind"] == "side_call"]
    numbers = [int(i.rsplit("-", 1)[1]) for i in ids]
    assert len(numbers) > 10 and numbers == sorted(numbers)
