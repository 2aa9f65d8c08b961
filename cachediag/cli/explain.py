"""``cachediag explain``: one request against its predecessor, in words or JSON."""

from __future__ import annotations

import sys
import time
from datetime import tzinfo
from pathlib import Path
from typing import IO, Any

import click

from cachediag.analysis.costs import ModelPrices
from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.cli.captures import capture_join, captures_option
from cachediag.cli.common import agent_option, jq_option
from cachediag.cli.stdin import piped_log
from cachediag.cli.target import find_request, one_way, request_options
from cachediag.cli.window import window_options
from cachediag.commands.window import Bound, in_window, resolve_window, zone_or_local
from cachediag.console import emit_json, finish_reading, report_issues
from cachediag.errors import CachediagError
from cachediag.model import MAIN_STREAM
from cachediag.text import sanitize


def _prices_for(model: str | None, at: float) -> ModelPrices | None:
    """Prices from ``cachediag.pricing`` when installed, else straight from genai-prices."""
    if model is None:
        return None
    import importlib

    try:
        pricing = importlib.import_module("cachediag.pricing")
    except ImportError:
        return _genai_prices(model, at)
    found = pricing.lookup_prices(model, at)
    return found if isinstance(found, ModelPrices) else None


def _genai_prices(model: str, at: float) -> ModelPrices | None:
    from datetime import UTC, datetime

    from genai_prices import Usage, calc_price

    try:
        calc = calc_price(
            Usage(input_tokens=1),
            model_ref=model,
            genai_request_timestamp=datetime.fromtimestamp(at, UTC),
        )
    except LookupError:
        return None

    def base(value: Any) -> float:
        tiered = getattr(value, "base", None)
        return float(value if tiered is None else tiered)

    p = calc.model_price
    write = base(p.cache_write_mtok)
    return ModelPrices(
        input_mtok=base(p.input_mtok),
        cache_write_5m_mtok=write,
        cache_write_1h_mtok=base(p.cache_write_1h_mtok) if p.cache_write_1h_mtok else write,
        cache_read_mtok=base(p.cache_read_mtok),
        output_mtok=base(p.output_mtok),
        source="genai-prices",
    )


@click.command()
@click.argument("log", required=False, type=click.Path(path_type=Path))
@request_options(
    request_help="Request N of the stream (0 is the first).",
    stream_help="Which conversation --request counts in (see analyze --json streams).",
)
@window_options
@click.option(
    "--now",
    type=float,
    metavar="EPOCH",
    help="Pin the clock that spans like --since 2h count from.",
)
@click.option("--json", "as_json", is_flag=True, help="The same account as one JSON object.")
@jq_option
@captures_option
@agent_option
def explain(
    log: Path | None,
    index: int | None,
    message_id: str | None,
    stream_id: str,
    since: Bound | None,
    until: Bound | None,
    zone: tzinfo | None,
    now: float | None,
    as_json: bool,
    jq_filter: str | None,
    captures_dir: Path | None = None,
    no_captures: bool = False,
    agent: str | None = None,
) -> None:
    """Explain one request against the one before it (default: the last miss, else the
    last expected rebuild).

    LOG is a capture, a transcript or any log analyze reads ('-' for stdin; piped logs are
    read without it). With no LOG, the most recent session of the history (Claude Code's and
    each other agent's found, or --agent's; in the --since/--until window, if given). Shows
    what changed (tools added, removed or redefined by name; system blocks with character
    deltas; the first rewritten message; model, betas, effort, thinking before -> after),
    the TTL and idle gap, the re-processed tokens and the re-cache cost (what the miss cost
    beyond a hit).

    \b
    Examples:
      cachediag explain capture.jsonl
      cachediag explain capture.jsonl --request 12 --json
      cachediag explain session.jsonl --message-id msg_01ABC
      cachediag explain --since 1h      the last miss of the past hour's session
    """
    from cachediag.analysis.compare import default_target, explain_request
    from cachediag.commands.agents import agents_for
    from cachediag.pipeline import Run, default_paths
    from cachediag.report.explain_view import explanation_dict, explanation_lines

    one_way(index, message_id)
    clock = time.time() if now is None else now
    display = zone_or_local(zone)
    window = resolve_window(since, until, clock, display)
    stdin: IO[bytes] | None = None
    if log is None:
        stdin = piped_log("explain")
    elif str(log) == "-":
        stdin = sys.stdin.buffer
    if log is not None:
        paths = [log]
    elif stdin is not None:
        paths = [Path("-")]
    else:
        paths = default_paths(agents_for(agent))
    name = "stdin" if paths == [Path("-")] else (str(log) if log else "the history")
    run = Run(enrich=capture_join(captures_dir, no_captures), agents=agents_for(agent))
    sessions = [s for s in run.sessions(paths, stdin, clock) if window.open or in_window(s, window)]
    if run.errors or run.nothing_read:
        finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)
    if not sessions:
        raise CachediagError(
            f"{name}: no session found" + ("" if window.open else " in that window")
        )
    if len(sessions) > 1 and log is not None:
        names = ", ".join(s.log.session_id for s in sessions[:5])
        more = f" and {len(sessions) - 5} more" if len(sessions) > 5 else ""
        raise CachediagError(
            f"{name}: holds {len(sessions)} sessions ({names}{more}); explain one session: "
            "pass its transcript or capture file, or narrow it with --since/--until"
        )
    session = max(sessions, key=last_at)
    if len(sessions) > 1:
        click.echo(
            sanitize(
                f"cachediag: explaining the most recent of {len(sessions)} sessions: "
                f"{session.log.session_id} ({session.log.source})"
            ),
            err=True,
        )
    report_issues(session.log.issues)
    if stream_id == MAIN_STREAM and not session.log.main_present and len(session.others) == 1:
        stream_id = session.others[0].log.id  # a subagent's file named alone
    stream, found = find_request(
        session.streams,
        name,
        stream_id=stream_id,
        index=index,
        message_id=message_id,
        default=default_target,
    )
    if found is None:
        n = len(stream.entries)
        click.echo(f"no miss or rebuild in stream {stream_id} ({n} request{'s' if n != 1 else ''})")
        if n:
            click.echo("cachediag: --request N explains any request", err=True)
        return
    pos = found
    record = stream.entries[pos].record
    ex = explain_request(stream.log.id, stream.entries, pos, _prices_for(record.model, record.at))
    from cachediag.analysis import advice_context as ac

    advice = []  # Claude Code's settings and habits are not other agents'
    if ac.advises(session):
        version, resumed = ac.session_version(session), ac.resumed(session)
        advice = ac.advice_for_entry(stream, stream.entries[pos], version, resumed)
    if as_json or jq_filter is not None:
        emit_json([explanation_dict(ex, session.log.source, advice)], jq_filter)
        return
    from rich.console import Console

    from cachediag.console import echo_safe as echo
    from cachediag.report.layout import wrap_parts

    width = Console().width
    for line in explanation_lines(ex, display):
        indent = line[: len(line) - len(line.lstrip())]
        sep = " · " if " · " in line else "; "
        for part in wrap_parts(line.lstrip().split(sep), width, indent=indent, sep=sep):
            echo(part)
    from cachediag.report.advice_view import advice_lines

    for line in advice_lines(advice, width):
        echo(line)


def last_at(a: SessionAnalysis) -> float:
    times = [s.entries[-1].record.at for s in a.streams if s.entries]
    return max(times) if times else float("-inf")
