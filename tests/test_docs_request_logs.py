"""Every example in docs/request-logs.md is run and its output compared, so the doc cannot rot."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.conftest import ROOT

DOC = ROOT / "docs" / "request-logs.md"
_BLOCK = re.compile(r"```console\n(.*?)```", re.DOTALL)


def _examples() -> list[tuple[str, str]]:
    out = []
    for block in _BLOCK.findall(DOC.read_text()):
        command, _, expected = block.partition("\n")
        assert command.startswith("$ cachediag "), command
        out.append((command[2:], expected))
    return out


def test_the_doc_has_examples() -> None:
    assert len(_examples()) >= 5


@pytest.mark.parametrize(("command", "expected"), _examples(), ids=lambda v: str(v)[:60])
def test_example(command: str, expected: str) -> None:
    args = shlex.split(command)[1:]
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="100")
    done = subprocess.run(
        [sys.executable, "-m", "cachediag", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
