"""``cachediag analyze``: per-session prompt-cache report."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from cachediag.cli.common import (
    CachediagError,
    emit_json,
    pricing_option,
    report_issues,
    stderr_progress,
)
from cachediag.model import LineIssue


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per session (JSON Lines).")
@click.option(
    "--requests", is_flag=True, help="Add a 'requests' array: one record per API request."
)
@click.option(
    "--now",
    type=float,
    metavar="EPOCH",
    help="Pin the clock (Unix seconds) for 'warm' and 'expires_at'; default: now.",
)
@pricing_option
@click.option(
    "--jq",
    "jq_filter",
    metavar="FILTER",
    help="Apply a jq program to each JSON object (implies --json); strings print raw.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    metavar="N",
    help="Worker processes (default: one per core for inputs over 256 MB, else 1).",
)
def analyze(
    paths: tuple[Path, ...],
    as_json: bool,
    requests: bool,
    now: float | None,
    jq_filter: str | None,
    pricing_file: Path | None = None,
    jobs: int | None = None,
) -> None:
    """Analyse Claude Code transcripts and API request logs: hits, misses and their causes.

    PATHS may be transcript files (a session's subagents/ folder is read with it), session
    folders, project folders or a whole projects tree, or request logs (claude-trace and
    other request/response captures, API responses, OpenAI usage, cachediag records).
    With no PATHS, logs piped on stdin are read ('-' names stdin explicitly); otherwise
    all of ~/.claude/projects (or $CLAUDE_CONFIG_DIR/projects).

    \b
    Examples:
      cachediag analyze ~/.claude/projects/-home-me-app/0d1e...jsonl
      cat s.jsonl | cachediag analyze --json | jq '.prompt_cache.hit_ratio'
      cachediag analyze --requests --jq '.requests[] | select(.outcome=="miss")' s.jsonl
    """
    from cachediag.pipeline import Run, default_paths, stdin_is_piped
    from cachediag.pricing import price_function, pricing_source

    stdin = sys.stdin.buffer if (not paths and stdin_is_piped()) or "-" in map(str, paths) else None
    path_list = list(paths) if paths else ([Path("-")] if stdin is not None else default_paths())
    clock = time.time() if now is None else now
    run = Run(jobs=jobs)
    progress = stderr_progress("reading sessions")
    run.on_progress = progress.update if progress else None
    issues: list[LineIssue] = []
    analyses = run.sessions(path_list, stdin, clock)
    price_of = price_function(pricing_file)
    source = pricing_source(pricing_file)

    if as_json or jq_filter is not None or requests:
        from cachediag.report.serialize import session_dict

        def objects() -> Iterable[dict[str, Any]]:
            for a in analyses:
                issues.extend(a.log.issues)
                yield session_dict(a, requests=requests, price_of=price_of, pricing_source=source)

        emit_json(objects(), jq_filter)
    else:
        from rich.console import Console

        from cachediag.report.tables import print_session

        console = Console()
        count = 0
        for a in analyses:
            issues.extend(a.log.issues)
            if count:
                console.print()
            print_session(console, a, price_of, source)
            count += 1
        if count == 0 and not run.errors:
            click.echo("No sessions found.", err=True)
    if progress:
        progress.close()
    report_issues(run.skipped + issues)
    if run.errors:
        for message in run.errors[:-1]:
            click.echo(f"Error: {message}", err=True)
        raise CachediagError(run.errors[-1])
