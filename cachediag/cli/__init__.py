"""The command line: click commands only, each a thin layer over one library call.

The only package that imports click: the rest of cachediag, the fast entry's quick
paths included, imports without it, and nothing below reaches back up into this package
(tests/test_imports.py holds both). What a command does once its options are read lives
in ``cachediag.commands``, what it prints besides its results in ``cachediag.console``.
One module per command; ``common`` holds the options they share. A command's module is
imported only when that command runs (or help lists it): every run after a long session
should not pay for the other commands' imports.
"""

from __future__ import annotations

from typing import Any

import click

from cachediag import __version__
from cachediag.errors import CachediagError

COMMANDS = {
    "analyze": "cachediag.cli.analyze:analyze",
    "audit": "cachediag.cli.audit:audit",
    "blocks": "cachediag.cli.usage:blocks",
    "daily": "cachediag.cli.usage:daily",
    "explain": "cachediag.cli.explain:explain",
    "export": "cachediag.cli.export:export",
    "monthly": "cachediag.cli.usage:monthly",
    "proxy": "cachediag.cli.proxy:proxy",
    "report": "cachediag.cli.report:report",
    "prompt": "cachediag.cli.prompt:prompt",
    "schema": "cachediag.cli.schema:schema",
    "session": "cachediag.cli.usage:session",
    "statusline": "cachediag.cli.statusline:statusline",
    "tune": "cachediag.cli.tune:tune",
    "warm": "cachediag.cli.warm:warm",
    "watch": "cachediag.cli.watch:watch",
    "weekly": "cachediag.cli.usage:weekly",
}


class Main(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        from importlib import import_module

        module, attr = target.split(":")
        command: click.Command = getattr(import_module(module), attr)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (BrokenPipeError, CachediagError) as exc:
            from cachediag.console import ending

            end = ending(exc)
            assert end is not None  # ``ending`` takes both
            if end.usage:
                raise click.UsageError(end.message or "", self._command_context(ctx)) from exc
            if end.message is not None:
                raise click.ClickException(end.message) from exc
            ctx.exit(end.status)

    def _command_context(self, ctx: click.Context) -> click.Context | None:
        """The context a usage error of the command that ran is shown in (its usage
        line and help hint), as click shows one raised by the command itself."""
        name = ctx.invoked_subcommand
        command = None if name is None else self.get_command(ctx, name)
        return None if command is None else click.Context(command, ctx, name)


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """The version, and what a bug report needs beside it: the scanner and the prices."""
    if not value or ctx.resilient_parsing:
        return
    import os
    import sys

    from cachediag.ingest.native import SCANNER
    from cachediag.pricing import pricing_source

    if SCANNER:
        scanner = "compiled (C extension)"
    elif os.environ.get("CACHEDIAG_PURE_PYTHON", "") not in ("", "0"):
        scanner = "Python (CACHEDIAG_PURE_PYTHON is set)"
    else:
        scanner = "Python (the C extension is not built)"
    click.echo(f"cachediag {__version__} (Python {sys.version.split()[0]})")
    click.echo(f"line scanner: {scanner}")
    click.echo(f"prices: {pricing_source()}")
    ctx.exit()


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version, the line scanner in use and the price data, then exit.",
)
def main() -> None:
    """Find every prompt-cache miss in LLM agent sessions, name its cause, count its cost.

    \b
    cachediag analyze                   all history: ~/.claude, ~/.config/claude
    cachediag analyze session.jsonl     one session and its subagents/ folder
    cachediag analyze --json < s.jsonl  the prompt_cache object, for jq
    """
