"""Every ```console example in README.md and docs/*.md runs and prints what it shows.

A block holds commands (lines starting with ``$ ``) each followed by its expected output
(stdout and stderr together, trailing spaces ignored). ``cachediag`` runs this checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

BLOCK = re.compile(r"```console\n(.*?)```", re.S)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def examples() -> list[tuple[str, str, str]]:
    found = []
    for doc in DOCS:
        for block in BLOCK.findall(doc.read_text()):
            command: str | None = None
            output: list[str] = []
            for line in block.splitlines():
                if line.startswith("$ "):
                    if command is not None:
                        found.append((doc.name, command, "\n".join(output)))
                    command, output = line[2:], []
                else:
                    output.append(line)
            if command is not None:
                found.append((doc.name, command, "\n".join(output)))
    return found


EXAMPLES = examples()


def normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def run_example(command: str, scratch: Path | None = None) -> str:
    """Run one documented command as a user would (``cachediag`` is this checkout).

    With ``scratch``, the examples' ``/tmp/`` is that folder instead (and is shown as
    ``/tmp/`` again), so two suites running at once never share a demo folder."""
    if scratch is not None:
        command = command.replace("/tmp/", f"{scratch}/")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "COLUMNS": "80",
        "TZ": "UTC",
        "NO_COLOR": "1",
        "CACHEDIAG_PYTHON": sys.executable,
    }
    prelude = 'cachediag() { "$CACHEDIAG_PYTHON" -m cachediag "$@"; }\n'
    result = subprocess.run(
        ["bash", "-c", prelude + command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    printed = result.stdout + result.stderr
    if scratch is not None:
        printed = printed.replace(f"{scratch}/", "/tmp/")
    return normalise(printed)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("docs-tmp")


@pytest.mark.skipif(shutil.which("jq") is None, reason="examples pipe into jq")
@pytest.mark.parametrize(
    ("doc", "command", "expected"), EXAMPLES, ids=[f"{d}:{c[:50]}" for d, c, _ in EXAMPLES]
)
def test_example(doc: str, command: str, expected: str, scratch: Path) -> None:
    assert run_example(command, scratch) == normalise(expected)


def test_readme_has_examples() -> None:
    assert sum(1 for d, _, _ in EXAMPLES if d == "README.md") >= 4
