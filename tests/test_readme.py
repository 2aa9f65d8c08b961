"""README.md stays a short, task-first page that a new user can follow (issue 28).

The examples themselves run in tests/test_docs.py; this holds the page's shape: its
length, the install steps, the links into docs/ and a section for every command.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import ROOT

README = ROOT / "README.md"
MAX_WORDS = 2_100


def readme() -> str:
    return README.read_text(encoding="utf-8")


def commands_in_help() -> list[str]:
    """The command names `cachediag --help` lists, as a user sees them."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    result = subprocess.run(
        [sys.executable, "-m", "cachediag", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    listing = result.stdout.split("\nCommands:\n", 1)[1]
    return [line.split()[0] for line in listing.splitlines() if line.startswith("  ")]


def section_commands(text: str) -> set[str]:
    """Commands named in headings: `cachediag daily`, and `weekly` beside it."""
    named: set[str] = set()
    for heading in re.findall(r"^#+ .*$", text, flags=re.M):
        if "`cachediag " in heading:
            named.update(re.findall(r"`(?:cachediag )?([a-z]+)`", heading))
    return named


def test_readme_is_short() -> None:
    words = len(readme().split())
    assert words < MAX_WORDS, f"README.md has {words} words; keep it under {MAX_WORDS}"


def test_install_steps() -> None:
    text = readme()
    assert re.search(r"^git clone \S+", text, flags=re.M), "no `git clone` step"
    assert "Python 3.11" in text
    # From a checkout the extra goes on `.`; `cachediag[proxy]` is not installable there.
    assert "pip install '.[proxy]'" in text
    assert not re.search(r"^pip install 'cachediag\[", text, flags=re.M)
    assert "python -m pytest -rs" in text


def test_docs_links_exist() -> None:
    links = set(re.findall(r"\bdocs/[\w./-]*\w", readme()))
    assert links, "README.md links to no page in docs/"
    missing = sorted(link for link in links if not (ROOT / link).exists())
    assert not missing, f"README.md names files that do not exist: {missing}"


def test_every_command_has_a_section() -> None:
    commands = commands_in_help()
    assert len(commands) >= 10, commands  # the help listing was parsed
    missing = sorted(set(commands) - section_commands(readme()))
    assert not missing, f"commands with no README section: {missing}"


def test_section_parser_reads_grouped_headings() -> None:
    text = "## Usage\n### `cachediag daily`, `weekly`\n`cachediag warm` in prose\n"
    assert section_commands(text) == {"daily", "weekly"}
