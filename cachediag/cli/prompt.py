"""``cachediag prompt``: one request's prompt as the cache sees it, and the stream's waste."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from cachediag.analysis.session_analysis import StreamAnalysis
from cachediag.cli.captures import capture_join, captures_option
from cachediag.cli.common import jq_option, pricing_option
from cachediag.cli.target import find_request, one_way, request_options
from cachediag.console import emit_json, finish_reading, report_issues
from cachediag.errors import CachediagError


@click.command()
@click.argument("log", type=click.Path(path_type=Path))
@request_options(
    request_help="Request N of the stream (0 is the first; default: the last).",
    stream_help="Which conversation to look at (see analyze --json streams).",
)
@click.option("--json", "as_json", is_flag=True, help="The breakdown and findings as JSON.")
@jq_option
@click.option(
    "--all-streams",
    is_flag=True,
    help="Also the findings of every other stream (subagents, side calls).",
)
@pricing_option
@captures_option
def prompt(
    log: Path,
    index: int | None,
    message_id: str | None,
    stream_id: str,
    as_json: bool,
    jq_filter: str | None,
    all_streams: bool,
    pricing_file: Path | None,
    captures_dir: Path | None = None,
    no_captures: bool = False,
) -> None:
    """Break one request's prompt down the way the cache sees it, and find the waste.

    LOG is a log with request bodies: a claude-trace capture, the capture proxy's
    records, any request/response log ('-' for stdin), or a Claude Code transcript whose
    requests went through 'cachediag proxy' (joined from --captures). For one request (default: the
    last of the main stream) it shows the tools, each system block and the conversation
    turn by turn, with estimated tokens (characters / 4, scaled so the sections add up to
    the provider's count), the breakpoints, and what was read from cache, written to it
    or paid uncached. Then the findings over the whole stream, costliest first:
    volatile_in_prefix, stable_after_breakpoint, repeated_block, below_min_cacheable,
    lookback_exceeded, no_breakpoint, tools_reordered. Nothing of the prompt's text is
    kept or shown: only types, sizes, names of tools and hashes.

    \b
    Examples:
      cachediag prompt capture.jsonl
      cachediag prompt capture.jsonl --request 12 --json
      cachediag prompt capture.jsonl --stream subagent-1 --jq '.findings[].kind'
    """
    from cachediag.analysis.breakdown import break_down, layout_of
    from cachediag.analysis.hygiene import find_findings
    from cachediag.pipeline import Run
    from cachediag.pricing import price_function, pricing_source

    one_way(index, message_id)
    stdin = sys.stdin.buffer if str(log) == "-" else None
    run = Run(enrich=capture_join(captures_dir, no_captures))
    sessions = list(run.sessions([log], stdin, time.time()))
    if run.errors or run.nothing_read:
        finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)
    if not sessions:
        raise CachediagError(f"{log}: no session found")
    if len(sessions) > 1:
        raise CachediagError(
            f"{log}: holds {len(sessions)} sessions; pass one capture or transcript file"
        )
    session = sessions[0]
    report_issues(session.log.issues)
    stream, found = find_request(
        session.streams,
        str(log),
        stream_id=stream_id,
        index=index,
        message_id=message_id,
        default=lambda entries: len(entries) - 1 if entries else None,
    )
    if found is None:
        raise CachediagError(f"stream {stream_id!r} of {log} has no requests")
    pos = found
    entry = stream.entries[pos]
    layout = layout_of(entry.record.fingerprint)
    if layout is None:
        where = f"{log}: request {pos} of stream {stream.log.id!r}"
        if entry.record.fingerprint is not None:
            raise CachediagError(
                f"{where} has a fingerprint without per-block prints (an OpenAI request, "
                "or cachediag records older than schema 2): nothing to break down"
            )
        raise CachediagError(
            f"{where} has no request body in this log; cachediag prompt needs request "
            "bodies (a claude-trace capture, the capture proxy's records, a "
            "request/response log, or a transcript with --captures from the proxy): "
            "transcripts and usage-only logs show no prompt"
        )
    from cachediag.report.prompt import StreamFindings

    price_of = price_function(pricing_file)

    def findings_of(s: StreamAnalysis) -> StreamFindings:
        found = tuple(find_findings(s.entries, price_of))
        return StreamFindings(s.log.id, s.log.kind.value, len(s.entries), found)

    own = findings_of(stream)
    others = [findings_of(s) for s in session.streams if s is not stream] if all_streams else None
    breakdown = break_down(layout, entry.record)
    if as_json or jq_filter is not None:
        from cachediag.report.prompt import prompt_dict

        emit_json(
            [
                prompt_dict(
                    source=session.log.source,
                    own=own,
                    index=pos,
                    breakdown=breakdown,
                    pricing_source=pricing_source(pricing_file),
                    others=others,
                )
            ],
            jq_filter,
        )
        return
    from rich.console import Console

    from cachediag.console import SafeConsole
    from cachediag.report.prompt import WIDTH, render_prompt

    console = SafeConsole(width=min(Console().width, WIDTH), highlight=False)
    render_prompt(console, own=own, index=pos, breakdown=breakdown, others=others or ())
