"""The report people read: a summary line, the misses, one line per subagent stream."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from cachediag.analysis.costs import PriceFn, entry_cost, total_costs
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.session import SessionAnalysis, StreamAnalysis
from cachediag.analysis.summary import PromptCache


def format_tokens(n: int) -> str:
    return f"{n:,}"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def format_time(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S")


def summary_line(label: str, pc: PromptCache) -> str:
    """``Prompt cache (main): 14 requests · 91% of input tokens from cache · 2 misses (...)``."""
    parts = [f"{pc.requests} request{'s' if pc.requests != 1 else ''}"]
    if pc.hit_ratio is not None:
        parts.append(f"{pc.hit_ratio * 100:.0f}% of input tokens from cache")
    elif pc.requests:
        parts.append("no cache tokens reported")
    misses = f"{pc.misses} miss{'es' if pc.misses != 1 else ''}"
    if pc.miss_causes:
        causes = sorted(pc.miss_causes.items(), key=lambda kv: (-kv[1], kv[0]))
        misses += " (" + ", ".join(f"{c}: {n}" for c, n in causes) + ")"
    parts.append(misses)
    if pc.expected_rebuilds:
        n = pc.expected_rebuilds
        parts.append(f"{n} expected rebuild{'s' if n != 1 else ''}")
    return f"Prompt cache ({label}): " + " · ".join(parts)


def _evidence(entry: LedgerEntry) -> str:
    ev = entry.evidence
    if ev is None:
        return ""
    text = f"{format_tokens(ev.read_tokens)}/{format_tokens(ev.prev_cached_tokens)}"
    if ev.model_before != ev.model_after:
        text += f"; model {ev.model_before} -> {ev.model_after}"
    if ev.server_reason:
        text += f"; server: {ev.server_reason}"
    return text


def _causes(entry: LedgerEntry) -> Text:
    if entry.outcome is Outcome.EXPECTED:
        kind = entry.announced.value if entry.announced else "rebuild"
        return Text(f"expected ({kind})", style="cyan")
    d = entry.diagnosis
    if d is None:
        return Text("")
    label = ", ".join(c.value for c in d.causes)
    extras = []
    if d.tools_added:
        extras.append("+" + ",".join(d.tools_added))
    if d.tools_removed:
        extras.append("-" + ",".join(d.tools_removed))
    if d.system_char_delta is not None:
        extras.append(f"system {d.system_char_delta:+d} chars")
    if extras:
        label += " (" + "; ".join(extras) + ")"
    if d.source == "server":
        label += " [server]"
    return Text(label, style="red" if d.named else "yellow")


def format_usd(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def misses_table(stream: StreamAnalysis, price_of: PriceFn | None = None) -> Table | None:
    rows = [e for e in stream.entries if e.outcome in (Outcome.MISS, Outcome.EXPECTED)]
    if not rows:
        return None
    table = Table(show_edge=False, pad_edge=False, expand=False)
    # Fits 80 columns (a pipe, a small terminal): numbers never shrink to nothing, the
    # cause and the evidence wrap instead. Causes are inferred unless marked [server].
    table.add_column("#", justify="right", no_wrap=True, min_width=3)
    table.add_column("UTC", no_wrap=True)
    table.add_column("gap", justify="right", no_wrap=True, min_width=5)
    table.add_column("redone", justify="right", no_wrap=True)
    if price_of is not None:
        table.add_column("cost", justify="right", no_wrap=True, min_width=5)
    table.add_column("cause", overflow="fold")
    table.add_column("read/cached", overflow="fold")
    for e in rows:
        cells: list[RenderableType] = [
            str(e.index),
            format_time(e.record.at),
            format_duration(e.gap_s),
            format_tokens(e.reprocessed_tokens),
        ]
        if price_of is not None:
            cells.append(format_usd(entry_cost(e, price_of).miss_cost_usd))
        table.add_row(*cells, _causes(e), _evidence(e))
    return table


def cost_line(a: SessionAnalysis, price_of: PriceFn, pricing_source: str | None) -> str:
    c = total_costs((e for s in a.streams for e in s.entries), price_of)
    text = f"Cost: {format_usd(c.cost_usd)} · misses and rebuilds {format_usd(c.miss_cost_usd)}"
    if c.unpriced_requests:
        text += f" · {c.unpriced_requests} request(s) unpriced, not counted"
    if c.reported_requests:
        text += f" · {c.reported_requests} at the provider's reported cost"
    return text + (f" · prices: {pricing_source}" if pricing_source else "")


def _span(a: SessionAnalysis) -> str:
    times = [e.record.at for s in a.streams for e in s.entries]
    if not times:
        return ""
    start, end = min(times), max(times)
    fmt = "%Y-%m-%d %H:%M"
    first = datetime.fromtimestamp(start, UTC).strftime(fmt)
    last = datetime.fromtimestamp(end, UTC).strftime(fmt if end - start > 86400 else "%H:%M")
    return f" · {first} - {last} UTC"


def session_report(
    a: SessionAnalysis, price_of: PriceFn | None = None, pricing_source: str | None = None
) -> list[RenderableType]:
    """The renderables of one session, in order; lines of text are meant to soft-wrap."""
    log = a.log
    parts: list[RenderableType] = [
        Text(f"Session {log.session_id}", style="bold"),
        Text(f"  {log.source}{_span(a)}", style="dim"),
        Text(summary_line("main", a.main.prompt_cache)),
    ]
    if price_of is not None:
        parts.append(Text(cost_line(a, price_of, pricing_source)))
    table = misses_table(a.main, price_of)
    if table is not None:
        parts.append(table)
    for s in a.others:
        parts.append(Text("  " + summary_line(f"{s.log.kind.value} {s.log.id}", s.prompt_cache)))
    notes = []
    if log.api_errors:
        notes.append(f"{log.api_errors} API error line(s) not counted")
    if log.non_model_calls:
        notes.append(
            f"{log.non_model_calls} non-model call(s) (count_tokens, OAuth...) passed over"
        )
    if log.replayed_responses:
        notes.append(f"{log.replayed_responses} response(s) counted in an earlier session's file")
    if log.issues:
        notes.append(f"{len(log.issues)} line(s) skipped")
    if notes:
        parts.append(Text("  " + "; ".join(notes), style="dim"))
    return parts


def print_session(
    console: Console,
    a: SessionAnalysis,
    price_of: PriceFn | None = None,
    pricing_source: str | None = None,
) -> None:
    for part in session_report(a, price_of, pricing_source):
        # Summary lines are copied into issues and chats: let the terminal wrap them.
        console.print(part, soft_wrap=isinstance(part, Text))
