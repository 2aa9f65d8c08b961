"""The command line: click commands only, each a thin layer over one library call.

The only package that imports click. One module per command; ``common`` holds what they
share. Commands are imported when the group is built, each module staying small.
"""

from __future__ import annotations

from typing import Any

import click

from cachediag import __version__
from cachediag.errors import CachediagError


class Main(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CachediagError as exc:
            raise click.ClickException(str(exc)) from exc


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cachediag")
def main() -> None:
    """Find every prompt-cache miss in LLM agent sessions, name its cause, count its cost.

    \b
    cachediag analyze                       all Claude Code history (~/.claude/projects)
    cachediag analyze session.jsonl         one session (and its subagents/ folder)
    cat s.jsonl | cachediag analyze --json  the prompt_cache object, for jq and scripts
    """


def _register() -> None:
    from cachediag.cli.analyze import analyze
    from cachediag.cli.statusline import statusline

    main.add_command(analyze)
    main.add_command(statusline)


_register()
