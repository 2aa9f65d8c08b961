"""``cachediag analyze``: per-session prompt-cache report."""

from __future__ import annotations

import sys
import time
from datetime import UTC, tzinfo
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click

from cachediag.cli.captures import capture_join, captures_option
from cachediag.cli.common import EPOCH, agent_option, pricing_option
from cachediag.cli.window import window_options
from cachediag.commands.agents import agents_for
from cachediag.commands.analyze import (
    SessionJson,
    json_lines,
    table_progress,
    writes_json,
)
from cachediag.commands.options import JOBS
from cachediag.commands.session_tables import print_session_tables
from cachediag.commands.window import Bound, resolve_window, zone_or_local
from cachediag.console import finish_reading

if TYPE_CHECKING:
    pass

__all__ = ["analyze"]


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per session (JSON Lines).")
@click.option(
    "--requests",
    is_flag=True,
    help="Add a 'requests' array: one record per API request (implies --json).",
)
@click.option(
    "--now",
    type=EPOCH,
    metavar="EPOCH",
    help="Pin the clock (Unix seconds) for 'warm', 'expires_at' and spans like "
    "--since 7d; default: now.",
)
@window_options
@pricing_option
@click.option(
    "--jq",
    "jq_filter",
    metavar="FILTER",
    help="Apply a jq program to each JSON object (implies --json); strings print raw.",
)
@captures_option
@agent_option
@click.option(
    "--jobs",
    type=click.IntRange(min=JOBS.low),
    metavar="N",
    help="Processes, this one included (default: one per core when 4 MB of the input "
    "lie outside its largest project folder, else 1).",
)
def analyze(
    paths: tuple[Path, ...],
    as_json: bool,
    requests: bool,
    now: float | None,
    jq_filter: str | None,
    since: Bound | None = None,
    until: Bound | None = None,
    zone: tzinfo | None = None,
    pricing_file: Path | None = None,
    jobs: int | None = None,
    captures_dir: Path | None = None,
    no_captures: bool = False,
    agent: str | None = None,
) -> None:
    """Analyse agent sessions and API request logs: hits, misses and their causes.

    PATHS may be transcript files (a session's subagents/ folder is read with it), session
    folders, project folders or a whole projects tree, request logs (claude-trace and
    other request/response captures, API responses, OpenAI usage, cachediag records), or
    Codex, Gemini CLI and opencode sessions (docs/agents.md). With no PATHS, a log piped
    on stdin is read ('-' names stdin explicitly); otherwise, or when the pipe is empty,
    all of ~/.config/claude/projects and ~/.claude/projects (or each dir of
    $CLAUDE_CONFIG_DIR, comma-separated, + /projects) and each other agent's home found
    (--agent picks one). A session found in
    several places (copies, backups, two config dirs) is one session, each response
    counted once; files that cannot be read are named on stderr and the rest is read.
    --since/--until keep the sessions with a request in that window (each is still
    analysed whole). Several sessions are shown oldest first, with a totals line (JSON
    Lines in the same order, sessions only).

    \b
    Examples:
      cachediag analyze ~/.claude/projects/-home-me-app/0d1e...jsonl
      cat s.jsonl | cachediag analyze --json | jq '.prompt_cache.hit_ratio'
      cachediag analyze --requests s.jsonl \\
        --jq '.requests[] | select(.outcome=="miss")'
      cachediag analyze --since 24h --timezone America/New_York
      cachediag analyze --agent codex --requests
    """
    from cachediag.cli.stdin import piped_log
    from cachediag.pipeline import Run, default_paths

    if "-" in map(str, paths):
        stdin: IO[bytes] | None = sys.stdin.buffer
    else:
        # An empty pipe (cron) is "nothing piped": the history is read instead.
        stdin = None if paths else piped_log("analyze")
    agents = agents_for(agent)
    if paths:
        path_list = list(paths)
    else:
        path_list = [Path("-")] if stdin is not None else default_paths(agents)
    clock = time.time() if now is None else now
    as_json = writes_json(as_json, requests, jq_filter)
    # The machine's zone is looked up only when used: by the tables, or to place a bound.
    needs_zone = not as_json or since is not None or until is not None
    display = zone_or_local(zone) if needs_zone else UTC
    window = resolve_window(since, until, clock, display)
    run = Run(jobs=jobs, enrich=capture_join(captures_dir, no_captures), agents=agents)
    # Output comes once every session is read (oldest first): a bar may use the terminal
    # meanwhile.
    progress = table_progress()
    run.on_progress = progress.update if progress else None

    if as_json:
        render = SessionJson(requests, pricing_file, window)
        json_lines(run, path_list, stdin, clock, render, jq_filter, progress, agent)
        progress = None
    else:
        print_session_tables(
            run.sessions(path_list, stdin, clock),
            pricing_file,
            window,
            display,
            read_clean=lambda: not run.errors and not run.unreadable,
            read_done=progress.close if progress else None,
        )
        progress = None
    if progress:
        progress.close()
    finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)
