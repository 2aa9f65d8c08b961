"""``cachediag proxy``: the capture proxy in the foreground, ``proxy install`` and
``proxy uninstall``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from cachediag.proxy import DEFAULT_LISTEN, DEFAULT_UPSTREAM
from cachediag.proxy.limits import LIMITS, default_of, limits_from
from cachediag.proxy.logfiles import DEFAULT_KEEP_DAYS, default_log_dir

F = TypeVar("F", bound=Callable[..., Any])


def limit_options(command: F) -> F:
    """The limit options, each from its one declaration in ``proxy.limits``."""
    for option in reversed(LIMITS):
        command = click.option(
            option.flag,
            option.field,
            type=click.IntRange(min=1)
            if option.megabytes
            else click.FloatRange(min=0, min_open=True),
            default=default_of(option),
            show_default=True,
            metavar=option.metavar,
            help=option.help,
        )(command)
    return command


@click.group(invoke_without_command=True)
@click.option(
    "--listen",
    default=DEFAULT_LISTEN,
    show_default=True,
    metavar="HOST:PORT",
    help="Where to accept requests (port 0: any free port).",
)
@click.option(
    "--upstream",
    default=DEFAULT_UPSTREAM,
    show_default=True,
    metavar="URL",
    help="Where to forward them.",
)
@click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Where records go (default: $XDG_STATE_HOME/cachediag/captures, "
    "i.e. ~/.local/state/cachediag/captures).",
)
@click.option(
    "--keep-days",
    type=click.IntRange(min=0),
    default=DEFAULT_KEEP_DAYS,
    show_default=True,
    metavar="N",
    help="Delete day files older than N days (0: keep all).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a --listen address other machines can reach (risky: see below).",
)
@click.option(
    "--no-record", is_flag=True, help="Forward only; write nothing (e.g. to time the relay)."
)
@limit_options
@click.pass_context
def proxy(
    ctx: click.Context,
    /,
    listen: str,
    upstream: str,
    log_dir: Path | None,
    keep_days: int,
    allow_remote: bool,
    no_record: bool,
    **limit_values: float,
) -> None:
    """Forward Anthropic API calls unchanged and record what cache analysis needs.

    Every request goes to --upstream byte for byte (SSE streams relayed as they arrive);
    each POST /v1/messages adds one line to today's file in --log-dir: usage, ids, times,
    status and a fingerprint of the request (hashes, names, counts, lengths). Prompts,
    answers and header values (API keys, tokens, cookies) are never stored. Runs until
    Ctrl-C or SIGTERM, then gives the requests in flight --drain seconds to finish and
    exits; a second signal exits at once. Only origin-form targets (/path?query) are
    forwarded, always to --upstream; --upstream takes no user, password or query
    (credentials go in the client's headers).

    \b
    Set up Claude Code (two lines):
      cachediag proxy &              # or in its own terminal
      cachediag proxy install        # env.ANTHROPIC_BASE_URL in settings.json
    Then analyze, explain and statusline name causes transcripts cannot show
    (tools_changed with the tools' names, system_prompt_changed, betas_changed).

    \b
    Read the records:  cachediag analyze ~/.local/state/cachediag/captures

    --allow-remote: whoever reaches a non-loopback address can use the credentials your
    client sends through it and read the answers. Keep the default unless you must.
    Needs the proxy extra: pip install '.[proxy]' in cachediag's checkout.
    """
    if ctx.invoked_subcommand is not None:
        return
    from cachediag.proxy import require_aiohttp

    require_aiohttp()
    from cachediag.proxy.server import (
        ProxyConfig,
        parse_listen,
        parse_upstream,
        ready_line,
        run_proxy,
    )

    host, port = parse_listen(listen, allow_remote)
    cfg = ProxyConfig(
        host=host,
        port=port,
        upstream=parse_upstream(upstream),
        log_dir=(log_dir or default_log_dir()).expanduser(),
        keep_days=keep_days,
        record=not no_record,
        offload=True,
        limits=limits_from(limit_values),
    )

    def ready(bound_host: str, bound_port: int) -> None:
        click.echo(ready_line(bound_host, bound_port, cfg), err=True)

    recorder = run_proxy(cfg, ready)
    if recorder is not None:
        lost = f", {recorder.failed} could not be written" if recorder.failed else ""
        click.echo(f"cachediag proxy: stopped; {recorder.written} records written{lost}", err=True)


@proxy.command()
@click.option(
    "--settings",
    type=click.Path(path_type=Path, dir_okay=False),
    help="settings.json to change (default: $CLAUDE_CONFIG_DIR or ~/.claude).",
)
@click.option(
    "--listen",
    default=DEFAULT_LISTEN,
    show_default=True,
    metavar="HOST:PORT",
    help="The address the proxy listens on ([::1]:PORT for IPv6).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a --listen host that is not loopback (as the proxy's own flag).",
)
@click.option("--force", is_flag=True, help="Replace another ANTHROPIC_BASE_URL already set.")
def install(settings: Path | None, listen: str, allow_remote: bool, force: bool) -> None:
    """Point Claude Code at the proxy: env.ANTHROPIC_BASE_URL in settings.json.

    Claude Code reads it when a session starts: start the proxy first, or its requests
    fail to connect. Every change keeps a backup, a new 0600 file named by the time
    (settings.json.YYYYMMDDTHHMMSSZ.bak), none ever overwritten. To stop using the proxy:
    cachediag proxy uninstall. Needs no proxy extra.
    """
    from cachediag.claude_settings import settings_path
    from cachediag.proxy.install import base_url, install_base_url

    url = base_url(listen, allow_remote=allow_remote)
    path = settings_path(settings)
    done = install_base_url(path, url, force=force)
    if not done.changed:
        click.echo(f"{path}: env.ANTHROPIC_BASE_URL is already {url}; nothing changed.")
        return
    backup = f" (backup: {done.backup})" if done.backup else ""
    click.echo(f"{path}: env.ANTHROPIC_BASE_URL set to {url}{backup}")


@proxy.command()
@click.option(
    "--settings",
    type=click.Path(path_type=Path, dir_okay=False),
    help="settings.json to change (default: $CLAUDE_CONFIG_DIR or ~/.claude).",
)
def uninstall(settings: Path | None) -> None:
    """Stop pointing Claude Code at the proxy: env.ANTHROPIC_BASE_URL as it was before
    cachediag's install (removed if there was none; a backup kept).

    When nothing else changed since, settings.json is put back byte for byte. A URL set
    by someone else since the install is left alone (exit 1).
    """
    from cachediag.claude_settings import settings_path
    from cachediag.proxy.install import uninstall_base_url

    path = settings_path(settings)
    click.echo(uninstall_base_url(path).line("env.ANTHROPIC_BASE_URL"))
