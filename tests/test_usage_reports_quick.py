"""The usage reports' quick path (``commands.usage_quick``): the bytes click's commands
print, for the arguments it takes, and click for every other."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.commands.usage import REPORTS
from cachediag.commands.usage_quick import FLAGS, usage_args
from tests.conftest import FIXTURES, ROOT

TREE = FIXTURES / "real" / "spotter"
PROBE = """
import atexit, sys
atexit.register(lambda: print("click loaded:", "click" in sys.modules, file=sys.stderr))
from cachediag.commands.usage_quick import main
main(sys.argv[1:])
print("click was needed", file=sys.stderr)
sys.exit(99)
"""


def _quick(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, cwd=ROOT
    )


@pytest.mark.parametrize("report", REPORTS)
def test_quick_reports_print_what_click_prints(report: str, tmp_path: Path) -> None:
    env = dict(os.environ, TZ="UTC", XDG_CACHE_HOME=str(tmp_path))
    for args in ([report, str(TREE), "--json"], [report, "-O", "-j", str(TREE), str(TREE)]):
        done = _quick(args, env)
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines()[-1] == "click loaded: False"
        theirs = CliRunner().invoke(main, args, env={"TZ": "UTC"}, catch_exceptions=False)
        assert done.stdout == theirs.stdout and done.stdout.startswith("{")


def test_quick_errors_exit_as_click_does(tmp_path: Path) -> None:
    missing = str(tmp_path / "none")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    done = _quick(["daily", "--json", missing], env)
    theirs = CliRunner().invoke(main, ["daily", "--json", missing])
    stderr = done.stderr.removesuffix("click loaded: False\n")
    assert (done.returncode, stderr) == (theirs.exit_code, theirs.stderr)
    assert done.returncode != 0 and missing in done.stderr


def test_anything_else_goes_to_click() -> None:
    tree = str(TREE)
    for args in (
        ["daily", tree],  # tables
        ["daily", "--json", "-z", "UTC", tree],
        ["daily", "--json", "--help"],
        ["daily", "--json", "-"],
        ["analyze", "--json", tree],
        ["blocks", "--json", "--active", tree],
    ):
        assert usage_args(args) is None, args
    taken = usage_args(["weekly", "-O", tree, "-j"])
    assert taken is not None and taken.report == "weekly" and taken.paths == (TREE,)


def test_quick_flags_are_the_click_commands_own() -> None:
    from cachediag.cli.usage import daily

    declared = {opt: param.name for param in daily.params for opt in getattr(param, "opts", [])}
    assert {flag: declared[flag] for flag in FLAGS} == {
        "-j": "as_json",
        "--json": "as_json",
        "-O": "offline",
        "--offline": "offline",
    }
