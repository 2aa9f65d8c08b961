"""Hostile inputs that used to hang, grow without bound or end in a traceback: FIFOs where
logs are found, endless bad lines, a jq program that never ends, odd flags for the fast
path, window bounds at the ends of the calendar."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "fixtures" / "real"


def run(*args: str, stdin: bytes | None = None) -> Any:
    return CliRunner().invoke(main, list(args), input=stdin)


# --- window bounds at the ends of the calendar ---------------------------------------


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "Pacific/Kiritimati", "America/Adak", "UTC"])
@pytest.mark.parametrize(
    ("bounds", "everything"),
    [
        (["--since", "0001-01-01"], True),
        (["--until", "9999-12-30"], True),
        (["--since", "0001-01-01", "--until", "9999-12-30"], True),
        (["--now", "1e11", "--since", "2w"], False),
        (["--now", "1e11", "--until", "9999-12-30"], True),
    ],
)
@pytest.mark.parametrize(
    "command", [["audit", "--json"], ["audit", "--by", "day"], ["analyze"], ["analyze", "--json"]]
)
def test_window_at_the_ends_of_the_calendar(
    command: list[str], bounds: list[str], everything: bool, zone: str
) -> None:
    """Year 0 or 10000 once a bound is moved to UTC or to the zone, the largest --now:
    every request of the fixtures is inside such a window (none in the last two weeks
    before the year 5138), never a traceback."""
    whole = run(*command, "--timezone", zone, str(REAL))
    result = run(*command, *bounds, "--timezone", zone, str(REAL))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == whole.exit_code == 0, result.output
    if command == ["audit", "--json"]:
        report = json.loads(result.stdout)
        requests = json.loads(whole.stdout)["totals"]["requests"]
        assert requests > 0
        assert report["totals"]["requests"] == (requests if everything else 0)
