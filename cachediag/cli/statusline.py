"""``cachediag statusline``: help text, ``install`` and ``uninstall``; the line itself runs
in ``cachediag.statusline.fast``, which ``entry`` reaches without importing click."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from cachediag.cli.common import EPOCH, finite
from cachediag.commands.options import BUDGET, PRESET, WIDTH
from cachediag.statusline.render import DEFAULT_FORMAT


@click.group(invoke_without_command=True, context_settings={"ignore_unknown_options": True})
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="The stdin object back, with prompt_cache and a cachediag object.",
)
@click.option(
    "--format", "fmt", metavar="TEMPLATE", help=f"Fields and order; default {DEFAULT_FORMAT!r}."
)
@click.option(
    "--preset",
    type=click.Choice(PRESET.choices),
    help="A ready-made line instead of --format: full (today and the 5-hour block too), "
    "compact, or cache (the cache alone).",
)
@click.option(
    "--color/--no-color",
    default=None,
    help="Force colours on/off (default: on unless NO_COLOR or TERM=dumb).",
)
@click.option("--now", type=EPOCH, metavar="EPOCH", help="Pin the clock (Unix seconds).")
@click.option(
    "--budget",
    type=finite(BUDGET, "seconds"),
    metavar="SECONDS",
    help="Time budget of one run (default 1, or $CACHEDIAG_STATUSLINE_BUDGET); a run that "
    "cannot finish shows what it read so far, marked partial, and the next goes on.",
)
@click.option(
    "--width",
    type=click.IntRange(WIDTH.low, WIDTH.high),
    metavar="COLUMNS",
    help="Width the line must fit (default: $CACHEDIAG_STATUSLINE_WIDTH, $COLUMNS, else the "
    "terminal's): tool names shorten, then whole fields go from the right; when no width "
    "is known only tool names shorten, to 80.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Diagnose the set-up: what was read from stdin, which transcript and state file, "
    "the line, and every reason for a fallback; exit 1 on a problem.",
)
@click.pass_context
def statusline(
    ctx: click.Context,
    as_json: bool,
    fmt: str | None,
    preset: str | None,
    color: bool | None,
    now: float | None,
    budget: float | None,
    width: int | None,
    check: bool,
) -> None:
    """Print one status line for Claude Code from the JSON it pipes on stdin.

    Reads only what the transcript gained since the last run (state in
    $XDG_CACHE_HOME/cachediag/), never fails: on any problem it prints 'cache ?' and logs
    to statusline.log there (and says why on stderr when run at a terminal, where a bad
    option such as an unknown --format field is one Error: line and exit 2 instead).

    \b
    Fields for --format: {model} {session_cost} {today_cost} {block_cost}
    {block_left} {context_tokens} {context_pct} {rate_5h} {rate_7d} {hit} {warm}
    {misses} {cost} {last} {agents} {rebuilds} {ttl} {requests} {source}
    {partial}.
    An empty field drops with the text before it. Ready-made templates:
    --preset full|compact|cache (cache: the cache alone).
    \b
    Set it up:  cachediag statusline install
    Test it:    cachediag statusline --check < object.json
    """
    if ctx.invoked_subcommand is not None:
        return
    from cachediag.statusline.fast import run

    args = ["--json"] if as_json else []
    if fmt is not None:
        args += ["--format", fmt]
    if preset is not None:
        args += ["--preset", preset]
    if color is not None:
        args.append("--color" if color else "--no-color")
    if now is not None:
        args += ["--now", repr(now)]
    if budget is not None:
        args += ["--budget", repr(budget)]
    if width is not None:
        args += ["--width", str(width)]
    if check:
        args.append("--check")
    ctx.exit(run(args, sys.stdin.buffer, sys.stdout))


@statusline.command()
@click.option(
    "--settings",
    "settings",
    type=click.Path(path_type=Path, dir_okay=False),
    help="settings.json to change (default: $CLAUDE_CONFIG_DIR or ~/.claude).",
)
@click.option(
    "--script",
    metavar="NAME",
    help="Use a ready-made bash+jq script instead: 'jq' (Claude Code's prompt_cache only), "
    "'cachediag-jq' (pipes through 'cachediag statusline --json'), or a path.",
)
@click.option("--force", is_flag=True, help="Replace a different status line already set.")
def install(settings: Path | None, script: str | None, force: bool) -> None:
    """Write the statusLine entry into Claude Code's settings.json.

    Every change keeps a backup, a new 0600 file named by the time
    (settings.json.YYYYMMDDTHHMMSSZ.bak), none ever overwritten; 'cachediag statusline
    uninstall' puts back the status line you had before.
    """
    from cachediag.claude_settings import settings_path
    from cachediag.statusline import install as setup

    path = settings_path(settings)
    command = setup.script_command(script, path) if script else setup.fast_command()
    done = setup.install(path, command, force=force)
    if not done.changed:
        click.echo(f"{path}: status line already installed; nothing changed.")
        return
    backup = f" (backup: {done.backup})" if done.backup else ""
    click.echo(f"{path}: statusLine set to: {command}{backup}")
    if script and shutil.which("jq") is None:
        click.echo(
            "warning: jq not found on PATH; the script prints 'cache ? (jq not found)' until "
            "jq is installed and 'cachediag statusline install --script ...' is run again",
            err=True,
        )


@statusline.command()
@click.option(
    "--settings",
    "settings",
    type=click.Path(path_type=Path, dir_okay=False),
    help="settings.json to change (default: $CLAUDE_CONFIG_DIR or ~/.claude).",
)
def uninstall(settings: Path | None) -> None:
    """Put back the status line you had before cachediag's install (removed if there was
    none; a backup kept).

    When nothing else changed since, settings.json is put back byte for byte. A status
    line set by someone else since the install is left alone (exit 1).
    """
    from cachediag.claude_settings import settings_path
    from cachediag.statusline import install as setup

    path = settings_path(settings)
    click.echo(setup.uninstall(path).line("statusLine"))
