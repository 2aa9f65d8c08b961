"""``cachediag analyze``: per-session prompt-cache report."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import click

from cachediag.analysis.session import SessionAnalysis
from cachediag.cli.captures import capture_join, captures_option
from cachediag.cli.common import (
    CachediagError,
    emit_json,
    pricing_option,
    report_issues,
    stderr_progress,
)


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
@captures_option
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    metavar="N",
    help="Processes, this one included (default: one per core from 4 MB of input, else 1).",
)
def analyze(
    paths: tuple[Path, ...],
    as_json: bool,
    requests: bool,
    now: float | None,
    jq_filter: str | None,
    pricing_file: Path | None = None,
    jobs: int | None = None,
    captures_dir: Path | None = None,
    no_captures: bool = False,
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

    stdin = sys.stdin.buffer if (not paths and stdin_is_piped()) or "-" in map(str, paths) else None
    path_list = list(paths) if paths else ([Path("-")] if stdin is not None else default_paths())
    clock = time.time() if now is None else now
    run = Run(jobs=jobs, enrich=capture_join(captures_dir, no_captures))
    progress = stderr_progress("reading sessions")
    run.on_progress = progress.update if progress else None

    if as_json or jq_filter is not None or requests:
        lines = run.rendered(path_list, stdin, clock, SessionJson(requests, pricing_file))
        if jq_filter is None:
            for line in lines:
                click.echo(line)
        else:
            emit_json(map(json.loads, lines), jq_filter)
    else:
        from rich.console import Console

        from cachediag.pricing import price_function, pricing_source
        from cachediag.report.tables import print_session

        price_of, source = price_function(pricing_file), pricing_source(pricing_file)
        console = Console()
        count = 0
        for a in run.sessions(path_list, stdin, clock):
            if count:
                console.print()
            print_session(console, a, price_of, source)
            count += 1
        if count == 0 and not run.errors:
            click.echo("No sessions found.", err=True)
    if progress:
        progress.close()
    report_issues(run.issues)
    if run.errors:
        for message in run.errors[:-1]:
            click.echo(f"Error: {message}", err=True)
        raise CachediagError(run.errors[-1])


@dataclass(slots=True, frozen=True)
class SessionJson:
    """One session -> its JSON line; built in the worker that analysed it."""

    requests: bool
    pricing_file: Path | None

    def __call__(self, a: SessionAnalysis) -> str:
        from cachediag.pricing import price_function, pricing_source
        from cachediag.report.serialize import session_dict

        obj = session_dict(
            a,
            requests=self.requests,
            price_of=price_function(self.pricing_file),
            pricing_source=pricing_source(self.pricing_file),
        )
        return json.dumps(obj, ensure_ascii=False)
