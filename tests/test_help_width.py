"""Every help text fits an 80-column terminal: each command's, each subcommand's and the
top level's, as click prints them there (issue 28: example lines ran to 95 columns)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from cachediag.cli import COMMANDS, main


def _commands() -> list[list[str]]:
    found: list[list[str]] = [[]]
    ctx = click.Context(main)
    for name in sorted(COMMANDS):
        command = main.get_command(ctx, name)
        assert command is not None, name
        found.append([name])
        if isinstance(command, click.Group):
            found += [[name, sub] for sub in sorted(command.list_commands(ctx))]
    return found


@pytest.mark.parametrize("words", _commands(), ids=lambda w: " ".join(w) or "cachediag")
def test_help_fits_80_columns(words: list[str]) -> None:
    result = CliRunner().invoke(main, [*words, "--help"], terminal_width=80, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    long = [line for line in result.output.splitlines() if len(line) > 80]
    assert not long, long


def test_the_check_sees_a_long_line() -> None:
    """The measure itself: a command whose example line is 81 columns is caught."""

    @click.command(help="Example.\n\n\b\n  cachediag wide " + "x" * 80)
    def wide() -> None:
        pass

    result = CliRunner().invoke(wide, ["--help"], terminal_width=80)
    assert any(len(line) > 80 for line in result.output.splitlines())
