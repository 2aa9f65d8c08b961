"""Every ``$ cachediag ...`` example in docs/statusline.md runs and prints what it shows."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOC = ROOT / "docs" / "statusline.md"


def examples() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for block in re.findall(r"```console\n(.*?)```", DOC.read_text(), flags=re.S):
        command: str | None = None
        output: list[str] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    found.append((command, "\n".join(output)))
                command, output = line[2:], []
            else:
                output.append(line)
        if command is not None:
            found.append((command, "\n".join(output)))
    return found


EXAMPLES = examples()


def test_doc_has_examples() -> None:
    assert len(EXAMPLES) >= 6
    assert all(cmd.startswith("cachediag ") for cmd, _ in EXAMPLES)


@pytest.mark.parametrize(("command", "expected"), EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_doc_example(command: str, expected: str, tmp_path: Path) -> None:
    if "| jq" in command and shutil.which("jq") is None:
        pytest.skip("needs jq")
    runner = f"{shlex.quote(sys.executable)} -m cachediag"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path),
        "NO_COLOR": "1",
    }
    result = subprocess.run(
        ["bash", "-c", "set -o pipefail; " + runner + command.removeprefix("cachediag")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip("\n") == expected
