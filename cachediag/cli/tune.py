"""``cachediag tune``: the prompt-cache TTL the history supports, per kind of request,
and the settings.json change that says so (``--apply``, ``--undo``)."""

from __future__ import annotations

import json
from datetime import tzinfo
from pathlib import Path

import click

from cachediag.cli.common import pricing_option
from cachediag.cli.window import window_options
from cachediag.commands.audit import AuditInputs
from cachediag.commands.options import JOBS
from cachediag.commands.window import Bound, parse_bound
from cachediag.console import echo_safe, finish_reading
from cachediag.errors import CachediagError


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@window_options
@click.option(
    "--now",
    type=float,
    metavar="EPOCH",
    help="Pin the clock (Unix seconds) that spans like --since 30d count back from.",
)
@pricing_option
@click.option(
    "--settings",
    "settings_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The settings.json to read and change (default: $CLAUDE_CONFIG_DIR/settings.json, "
    "else ~/.claude/settings.json).",
)
@click.option("--apply", is_flag=True, help="Write the recommended keys (a backup is kept).")
@click.option(
    "--force",
    is_flag=True,
    help="With --apply: also replace a TTL you set yourself (otherwise kept and reported).",
)
@click.option(
    "--undo",
    is_flag=True,
    help="Put back what --apply replaced (or remove the keys it added), and exit.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of the table.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (default: when stderr is a terminal).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=JOBS.low),
    metavar="N",
    default=None,
    help="Processes, this one included (default: as audit chooses).",
)
def tune(
    paths: tuple[Path, ...],
    since: Bound | None,
    until: Bound | None,
    zone: tzinfo | None,
    now: float | None,
    pricing_file: Path | None,
    settings_file: Path | None,
    apply: bool,
    force: bool,
    undo: bool,
    as_json: bool,
    progress: bool | None,
    jobs: int | None,
) -> None:
    """Choose the prompt-cache TTL (5m or 1h) by your own history, and set it.

    Reads PATHS (default: all Claude Code history, as audit reads it) over the window
    (default: the last 30 days) and, for each kind of request (the main conversation,
    subagents, each named agent type, compaction and side calls), replays it under a
    5-minute and a 1-hour TTL exactly as `audit` does its what-if. The pauses decide:
    one of 5 min to 1 h after a cached prompt is kept by 1h only; one over an hour by
    neither. 1h is recommended only where such pauses exist and it is cheaper by more
    than 1%.

    It then reads settings.json (--settings, $CLAUDE_CONFIG_DIR or ~/.claude) and says
    which TTL is in force and from where, and what would change: promptCacheTtl (main
    conversation) and subagentPromptCacheTtl (subagents), "5m" or "1h", Claude Code
    2.1.243+; for a named agent type, the frontmatter line for its file
    (experimental.cacheTtl, 2.1.248+), printed only. Agent types come from
    agent-<id>.meta.json or the Task call that started the subagent. Only that
    settings file is read: a project's .claude/settings.json or managed settings
    can still override it.

    Without --apply nothing is written. --apply writes the keys the evidence supports
    (a time-named backup beside the file; mode, owner and a symlink kept); a value you
    set yourself is kept and reported unless --force. --undo puts back what --apply
    replaced, byte for byte when nothing else changed.

    \b
    Examples:
      cachediag tune                       what the last 30 days say
      cachediag tune --since 2026-01-01 --json
      cachediag tune --apply               write it (then: cachediag tune --undo)
    """
    from cachediag.claude_settings import settings_path

    path = settings_path(settings_file)
    if undo:
        if apply or force:
            raise click.UsageError("--undo takes no --apply or --force")
        from cachediag.commands.tune_settings import undo_keys
        from cachediag.commands.tune_view import fit

        for line in undo_keys(path):
            for part in fit(line):
                echo_safe(part)
        return
    if force and not apply:
        raise click.UsageError("--force goes with --apply")
    from cachediag.commands.tune import DEFAULT_SINCE, run_tune

    inputs = AuditInputs(
        paths=paths,
        since=since if since is not None else parse_bound(DEFAULT_SINCE),
        until=until,
        zone=zone,
        now=now,
        top=1,
        pricing_file=pricing_file,
        progress=progress,
        jobs=jobs,
        agent="claude",  # the settings tuned are Claude Code's
    )
    result = run_tune(inputs, path)
    run = result.run
    if as_json:
        from cachediag.commands.tune import tune_dict

        tune_json = tune_dict(result)
    if apply:
        from cachediag.commands.tune_settings import apply_plans

        if result.notes:
            raise CachediagError(result.notes[0])
        applied = apply_plans(path, result.plans, force=force)
    if as_json:
        if apply:
            tune_json["applied"] = applied
        click.echo(json.dumps(tune_json, indent=2))
    else:
        _print_table(result, inputs, force, apply)
        from cachediag.commands.tune_view import fit

        for line in applied if apply else []:
            for part in fit(line):
                echo_safe(part)
    finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)


def _print_table(result: object, inputs: AuditInputs, force: bool, apply: bool) -> None:
    from cachediag.commands.tune import Tune
    from cachediag.commands.tune_view import tune_text

    assert isinstance(result, Tune)
    run = result.run
    if not result.rows:
        if run.errors or run.unreadable:
            return  # what could not be read says why (exit 1)
        click.echo(
            "No requests in that window: nothing to tune (try --since with an earlier date).",
            err=True,
        )
        return
    _, display = inputs.window()
    echo_safe(tune_text(result, display, force=force, applying=apply))
