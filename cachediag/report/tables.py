"""The report people read: a summary line, the misses, one line per subagent stream."""

from __future__ import annotations

from datetime import UTC, tzinfo

from rich.console import Console, RenderableType
from rich.text import Text

from cachediag.analysis.costs import PriceFn, entry_cost, total_costs
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.session_analysis import SessionAnalysis, StreamAnalysis
from cachediag.analysis.summary import PromptCache
from cachediag.analysis.totals import SessionTotals as SessionTotals  # cli/analyze's name
from cachediag.analysis.totals import Totals
from cachediag.ingest.agents import AGENTS, agent_of
from cachediag.report.clock import format_clock, format_minute, local_time, zone_label
from cachediag.report.layout import Column, compact_count, fitted_table, text_lines
from cachediag.text import sanitize


def format_tokens(n: int) -> str:
    return f"{n:,}"


DAYS_FROM_S = 48 * 3600
"""Where a duration is shown in days: ``7008h17m`` (a session resumed after ten months)
is unreadable, ``292d00h`` is not; under two days, hours still tell a day's pause."""


def format_duration(seconds: float | None) -> str:
    """``42s``, ``4m05s``, ``3h07m``, ``292d00h`` (from 48 h on): one format for every
    gap and idle time the tables, ``explain`` and ``watch`` print."""
    if seconds is None:
        return "-"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < DAYS_FROM_S:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def format_time(at: float, zone: tzinfo = UTC) -> str:
    return format_clock(at, zone)


def summary_parts(label: str, pc: PromptCache) -> list[str]:
    """``Prompt cache (main): 14 requests``, ``91% of input tokens from cache``, ..."""
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
    parts[0] = f"Prompt cache ({label}): {parts[0]}"
    return parts


def summary_line(label: str, pc: PromptCache) -> str:
    """``Prompt cache (main): 14 requests · 91% of input tokens from cache · 2 misses (...)``."""
    return " · ".join(summary_parts(label, pc))


def _read_cached(entry: LedgerEntry, compact: bool = False) -> str:
    ev = entry.evidence
    if ev is None:
        return ""
    fmt = compact_count if compact else format_tokens
    return f"{fmt(ev.read_tokens)}/{fmt(ev.prev_cached_tokens)}"


def _details(entry: LedgerEntry) -> list[str]:
    """What does not fit a table cell: printed under the table, one line per request."""
    ev = entry.evidence
    if ev is None:
        return []
    out = []
    if ev.model_before != ev.model_after:
        out.append(f"model {ev.model_before} -> {ev.model_after}")
    if ev.server_reason:
        out.append(f"server: {ev.server_reason}")
    return out


def _expected_label(entry: LedgerEntry) -> str:
    return f"expected ({entry.announced.value if entry.announced else 'rebuild'})"


def _causes(entry: LedgerEntry) -> Text:
    if entry.outcome is Outcome.EXPECTED:
        return Text(_expected_label(entry), style="cyan")
    d = entry.diagnosis
    if d is None:
        return Text("")
    label = ", ".join(c.value for c in d.causes)
    extras = []
    if d.tools_added:
        extras.append("+" + ", +".join(d.tools_added))
    if d.tools_removed:
        extras.append("-" + ", -".join(d.tools_removed))
    if d.system_char_delta is not None:
        extras.append(f"system {d.system_char_delta:+d} chars")
    if extras:
        label += " (" + "; ".join(extras) + ")"
    if d.source == "server":
        label += " [server]"
    return Text(label, style="red" if d.named else "yellow")


def format_usd(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:,.2f}"


def misses_table(
    stream: StreamAnalysis,
    price_of: PriceFn | None = None,
    *,
    zone: tzinfo = UTC,
    width: int = 80,
) -> list[RenderableType]:
    """The misses and expected rebuilds of a stream: a table, then long details by index."""
    rows = [e for e in stream.entries if e.outcome in (Outcome.MISS, Outcome.EXPECTED)]
    if not rows:
        return []
    # Causes are inferred unless marked [server].
    columns = [
        Column("#", [[str(e.index) for e in rows]], justify="right"),
        Column(
            zone_label(zone, rows[0].record.at), [[format_clock(e.record.at, zone) for e in rows]]
        ),
        Column("gap", [[format_duration(e.gap_s) for e in rows]], justify="right", keep=70),
        Column(
            "re-processed",
            # The same cells twice: only the header narrows when the width forces it.
            [[format_tokens(e.reprocessed_tokens) for e in rows]] * 2,
            justify="right",
            short_header="re-proc",
        ),
    ]
    if price_of is not None:
        costs = [format_usd(entry_cost(e, price_of).miss_cost_usd) for e in rows]
        columns.append(Column("cost", [costs], justify="right"))
    columns += [
        Column(
            "cause",
            [[_causes(e) for e in rows]],
            wraps=True,
            atoms=[_expected_label(e) for e in rows if e.outcome is Outcome.EXPECTED],
        ),
        Column(
            "read/cached",
            [[_read_cached(e) for e in rows], [_read_cached(e, compact=True) for e in rows]],
            keep=60,
            before_wrapping=False,
        ),
    ]
    parts: list[RenderableType] = [fitted_table(columns, width)]
    for e in rows:
        details = _details(e)
        if details:
            parts.append(
                text_lines([f"{e.index:>4}: {details[0]}", *details[1:]], width, style="dim")
            )
    return parts


def group_usd(value: float, requests: int, unpriced_requests: int) -> str:
    """A group's cost: ``unpriced`` when it has requests and none of them had a price (a
    sum of nothing is not $0.00), else ``format_usd`` of the priced ones."""
    return format_usd(None if requests and unpriced_requests >= requests else value)


def cost_line(a: SessionAnalysis, price_of: PriceFn, pricing_source: str | None) -> str:
    entries = [e for s in a.streams for e in s.entries]
    c = total_costs(entries, price_of)
    cost = group_usd(c.cost_usd, len(entries), c.unpriced_requests)
    recache = group_usd(c.miss_cost_usd, len(entries), c.unpriced_requests)
    text = f"Cost: {cost} · re-cache cost {recache}"
    rebuilds = [e for e in entries if e.outcome is Outcome.EXPECTED]
    if rebuilds and not c.unpriced_requests >= len(entries):
        # Both kinds shown: each named, so the sum reads as the audit's two figures.
        missed = [e for e in entries if e.outcome is Outcome.MISS]
        m = total_costs(missed, price_of).miss_cost_usd
        r = total_costs(rebuilds, price_of).miss_cost_usd
        text += f" (misses {format_usd(m)}, expected rebuilds {format_usd(r)})"
    if c.unpriced_requests:
        text += f" · {c.unpriced_requests} request(s) unpriced, not counted"
    if c.reported_requests:
        text += f" · {c.reported_requests} at the provider's reported cost"
    return text + (f" · prices: {pricing_source}" if pricing_source else "")


def _span(a: SessionAnalysis, zone: tzinfo) -> str:
    times = [e.record.at for s in a.streams for e in s.entries]
    if not times:
        return ""
    start, end = min(times), max(times)
    first = format_minute(start, zone)
    same_day = local_time(start, zone).date() == local_time(end, zone).date()
    last = format_minute(end, zone)[11:] if same_day else format_minute(end, zone)
    return f"{first} - {last} {zone_label(zone, start)}"


def session_report(
    a: SessionAnalysis,
    price_of: PriceFn | None = None,
    pricing_source: str | None = None,
    *,
    zone: tzinfo = UTC,
    width: int = 80,
) -> list[RenderableType]:
    """The renderables of one session, in order, each fitted to ``width``."""
    log = a.log
    where = [f"project {sanitize(a.project)}" if a.project else "", log.source, _span(a, zone)]
    whose = agent_of(log.format)
    # Claude Code's sessions are titled as they always were; another agent's says whose.
    title = f"Session {log.session_id}" + ("" if whose == "claude" else f" · {AGENTS[whose].label}")
    parts: list[RenderableType] = [
        text_lines([title], width, style="bold"),
        text_lines([p for p in where if p], width, indent="  ", style="dim"),
        text_lines(summary_parts("main", a.main.prompt_cache), width)
        if log.main_present
        else text_lines(
            [f"Subagent file(s) of session {log.session_id}", "main conversation not in the input"],
            width,
        ),
    ]
    if price_of is not None:
        parts.append(text_lines(cost_line(a, price_of, pricing_source).split(" · "), width))
    parts += misses_table(a.main, price_of, zone=zone, width=width)
    parts += _advice(a, width)
    for s in a.others:
        label = f"{s.log.kind.value} {s.log.id}"
        parts.append(text_lines(summary_parts(label, s.prompt_cache), width, indent="  "))
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
    if log.unreadable:
        notes.append(f"{len(log.unreadable)} file(s) could not be read")
    if log.assumed_ttl is not None:
        notes.append(f"TTL {log.assumed_ttl} assumed where the log has no 5m/1h split")
    if notes:
        parts.append(text_lines(notes, width, indent="  ", style="dim"))
    return parts


def _advice(a: SessionAnalysis, width: int) -> list[RenderableType]:
    """What to do about the main conversation's misses (analysis.advice)."""
    from cachediag.analysis.advice_context import (
        advises,
        resumed,
        session_version,
        stream_advice,
    )
    from cachediag.report.advice_view import stream_advice_lines

    if not advises(a) or not a.main.ledger.misses:
        return []
    ranked = stream_advice(a.main, session_version(a), resumed(a))
    lines = stream_advice_lines(ranked, width)
    return [Text("\n".join(lines))] if lines else []


def print_session(
    console: Console,
    a: SessionAnalysis,
    price_of: PriceFn | None = None,
    pricing_source: str | None = None,
    *,
    zone: tzinfo = UTC,
) -> None:
    for part in session_report(a, price_of, pricing_source, zone=zone, width=console.width):
        # Already fitted to the width: nothing for rich to fold.
        console.print(part, soft_wrap=isinstance(part, Text))


def totals_lines(run: SessionTotals, *, width: int = 80) -> list[RenderableType]:
    """``Total: 3 sessions · 157 requests (all streams) · 4 misses · ...``: the sums of
    ``analysis.totals``, formatted."""
    t = run.totals
    parts = [
        f"Total: {plural(run.sessions, 'session')}",
        f"{plural(t.requests, 'request')} (all streams)",
        plural(t.misses, "miss", "misses"),
    ]
    if t.expected_rebuilds:
        parts.append(plural(t.expected_rebuilds, "expected rebuild"))
    if run.priced:
        recache = run.recache_usd
        parts += [
            f"cost {group_usd(t.cost_usd, t.requests, t.unpriced_requests)}",
            f"re-cache cost {group_usd(recache, t.requests, t.unpriced_requests)}"
            + _recache_split(t),
        ]
        if t.unpriced_requests:
            parts.append(f"{plural(t.unpriced_requests, 'request')} unpriced, not counted")
    return [text_lines(parts, width, style="bold")]


def _recache_split(t: Totals) -> str:
    """`` (misses $1.47, expected rebuilds $0.08)`` when there are both, else nothing."""
    if not t.expected_rebuilds or (t.requests and t.unpriced_requests >= t.requests):
        return ""
    return (
        f" (misses {format_usd(t.miss_cost_usd)},"
        f" expected rebuilds {format_usd(t.rebuild_cost_usd)})"
    )


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 miss``, ``3 misses``, ``1 expected rebuild``."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"
