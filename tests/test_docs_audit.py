"""Every ``$ cachediag ...`` example in docs/audit.md is run and its output compared."""

from __future__ import annotations

import re
import shlex

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import ROOT

DOC = ROOT / "docs" / "audit.md"
BLOCK = re.compile(r"```console\n(.*?)```", re.S)


def examples() -> list[tuple[str, str]]:
    found = []
    for block in BLOCK.findall(DOC.read_text()):
        command, output = None, []
        for line in block.splitlines():
            if line.startswith("$ cachediag "):
                if command is not None:
                    found.append((command, "\n".join(output)))
                command, output = line[2:], []
            else:
                output.append(line)
        if command is not None:
            found.append((command, "\n".join(output)))
    return found


def test_doc_has_examples() -> None:
    assert len(examples()) >= 4


@pytest.mark.parametrize(("command", "expected"), examples(), ids=lambda v: v[:60])
def test_example(command: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from genai_prices import __version__

    monkeypatch.chdir(ROOT)
    args = shlex.split(command)[1:]
    result = CliRunner(env={"COLUMNS": "100"}).invoke(main, args)
    assert result.exit_code == 0, result.output
    got = "\n".join(line.rstrip() for line in result.stdout.rstrip("\n").splitlines())
    # The doc names the genai-prices release it was written with; a newer one may differ.
    want = expected.rstrip("\n").replace("genai-prices 0.2.3", f"genai-prices {__version__}")
    assert got == "\n".join(line.rstrip() for line in want.splitlines())


