"""``cachediag watch`` for people: one line per event, a table of sessions at the end.

Hits are dim, misses bold red with their causes, their re-processed tokens and re-cache
cost; expected rebuilds and compactions yellow; sessions and streams as they appear.
Times are in the display zone (``--timezone``), as in ``analyze``. Given a width, an
event's details continue on a line of their own rather than past the edge.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, tzinfo

from rich.console import Console
from rich.text import Text

from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.follow.events import (
    FileReset,
    RebuildSeen,
    RequestSeen,
    SessionSeen,
    StreamSeen,
    Tally,
    WatchEvent,
)
from cachediag.report.layout import wrap_parts
from cachediag.report.tables import format_duration, format_time, format_tokens
from cachediag.text import sanitize

STREAM_WIDTH = 16
NARROW_STREAM_WIDTH = 10
"""Below 100 columns: room for the details on the event's own line."""
_LABELS = {
    Outcome.HIT: ("hit", "dim"),
    Outcome.COLD: ("cold", "dim"),
    Outcome.UNCACHED: ("uncached", "dim"),
    Outcome.EXPECTED: ("rebuild", "yellow"),
    Outcome.MISS: ("MISS", "bold red"),
}


def format_cost(value: float | None) -> str:
    """Dollars, with enough digits that a small miss does not read as $0.00."""
    if value is None:
        return "price unknown"
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


def _prefix(
    at: float | None, session_id: str, stream: str, zone: tzinfo = UTC, width: int | None = None
) -> str:
    when = format_time(at, zone) if at is not None else " " * 8
    room = STREAM_WIDTH if width is None or width >= 100 else NARROW_STREAM_WIDTH
    name = stream if len(stream) <= room else stream[: room - 1] + "…"
    return f"{when} {session_id[:8]:<8} {name:<{room}} "


def _fit(head: str, parts: list[str], width: int | None) -> str:
    """``head`` then ``parts`` joined by `` · ``; past ``width``, the details go on under
    themselves (or under a small indent when the head leaves them little room)."""
    if width is None:
        return head + " · ".join(parts)
    follow = " " * len(head) if width - len(head) >= 30 else "    "
    return "\n".join(wrap_parts(parts, width, indent=head, follow=follow))


def cause_label(entry: LedgerEntry) -> str:
    """The causes of a miss with what the log tells about them."""
    d, ev = entry.diagnosis, entry.evidence
    if entry.outcome is Outcome.EXPECTED:
        kind = entry.announced.value if entry.announced else "an announced rebuild"
        return f"after {kind}"
    if d is None:
        return ""
    label = ", ".join(c.value for c in d.causes)
    extras = []
    if d.tools_added:
        extras.append(f"+{len(d.tools_added)} tools")
    if d.tools_removed:
        extras.append(f"-{len(d.tools_removed)} tools")
    if d.system_char_delta is not None:
        extras.append(f"system {d.system_char_delta:+d} chars")
    if ev is not None and ev.model_before != ev.model_after:
        extras.append(f"{ev.model_before} -> {ev.model_after}")
    if ev is not None and any(c.value.startswith("ttl_expired") for c in d.causes):
        extras.append(f"idle {format_duration(ev.gap_s)}")
    if d.source == "server":
        extras.append("reported by the API")
    return label + (f" ({'; '.join(extras)})" if extras else "")


def _hint(seen: RequestSeen) -> str:
    """``-> ...``: what to do about a miss's first cause, in a few words (analysis.advice)."""
    d = seen.entry.diagnosis
    if seen.entry.outcome is not Outcome.MISS or d is None or not d.causes:
        return ""
    if seen.session.agent is not None:
        return ""  # the advice names Claude Code's settings; the cause says the rest
    from cachediag.analysis.advice import AdviceContext, advice_for
    from cachediag.analysis.advice_context import read_client_version
    from cachediag.report.advice_view import advice_hint

    entry, fp = seen.entry, seen.entry.record.fingerprint
    ctx = AdviceContext(
        version=read_client_version(seen.session.transcript),
        ttl_in_force=entry.ttl,
        stream_kind=str(seen.kind),
        defer_loading=None if fp is None else fp.defer_loading,
    )
    return "-> " + advice_hint(advice_for(str(d.causes[0]), ctx))


def request_line(seen: RequestSeen, zone: tzinfo = UTC, width: int | None = None) -> Text:
    entry, record = seen.entry, seen.entry.record
    label, style = _LABELS[entry.outcome]
    head = _prefix(record.at, seen.session.session_id, record.stream, zone, width)
    head += f"{label:<8} "
    if entry.outcome in (Outcome.MISS, Outcome.EXPECTED):
        details = [
            cause_label(entry),
            # "tokens" left out: the event keeps to one line at 120 columns.
            f"{format_tokens(entry.reprocessed_tokens)} re-processed",
            _recache(seen.cost.miss_cost_usd),
        ]
        parts = [d for d in details if d]
    else:
        parts = [f"{format_tokens(record.cache_read_tokens)} read"]
        if record.cache_creation_tokens:
            parts.append(f"{format_tokens(record.cache_creation_tokens)} written")
    text = _fit(head, parts, width)
    hint = _hint(seen)
    if hint:
        # On a line of its own under the miss, so the miss line keeps its shape.
        indent = " " * 9  # under the clock, where the details have room
        room = None if width is None else max(20, width - len(indent))
        text += "\n" + indent + (hint if room is None else sanitize(hint, room))
    return Text(text, style=style)


def _recache(value: float | None) -> str:
    """``re-cache cost $0.47``: the one name of what a miss paid beyond a hit."""
    return format_cost(None) if value is None else f"re-cache cost {format_cost(value)}"


def event_line(event: WatchEvent, zone: tzinfo = UTC, width: int | None = None) -> Text:
    """One event for people; ``width``: fit it there (continuation lines), else one line."""
    if isinstance(event, RequestSeen):
        return request_line(event, zone, width)
    ref = event.session
    if isinstance(event, RebuildSeen):
        e = event.event
        head = _prefix(e.at, ref.session_id, e.stream, zone, width)
        return Text(head + f"{e.kind.value} announced", style="yellow")
    if isinstance(event, SessionSeen):
        state = "new session" if event.new else "session"
        parts = [f"── {state} {ref.session_id}"] + ([sanitize(ref.project)] if ref.project else [])
        parts += [ref.agent] if ref.agent is not None else []
        return Text(_fit("", parts, width), style="bold cyan")
    if isinstance(event, StreamSeen):
        head = _prefix(event.at, ref.session_id, event.stream, zone, width)
        return Text(head + f"new {event.kind.value} stream", style="cyan")
    if isinstance(event, FileReset):
        parts = [f"── {ref.session_id[:8]}: {event.path} {event.reason}", "session read again"]
        return Text(_fit("", parts, width).replace(" · ", "; ", 1), style="magenta")
    return Text(
        _fit("", [f"── {ref.session_id[:8]}: {event.path} removed"], width), style="magenta"
    )


def summary_line(t: Tally, width: int | None = None) -> Text:
    """``4d5611e5 (spotter): 152 requests · 96% from cache · 3 misses (...) · $1.47``."""
    where = f" ({sanitize(t.session.project)})" if t.session.project else ""
    parts = [f"{t.requests} request{'s' if t.requests != 1 else ''}"]
    if t.hit_ratio is not None:
        parts.append(f"{t.hit_ratio * 100:.0f}% from cache")
    misses = t.count(Outcome.MISS)
    text = f"{misses} miss{'es' if misses != 1 else ''}"
    if t.miss_causes:
        causes = sorted(t.miss_causes.items(), key=lambda kv: (-kv[1], kv[0]))
        text += " (" + ", ".join(f"{c}: {n}" for c, n in causes) + ")"
    parts.append(text)
    rebuilds = t.count(Outcome.EXPECTED)
    if rebuilds:
        parts.append(f"{rebuilds} rebuild{'s' if rebuilds != 1 else ''}")
    if t.reprocessed_tokens:
        parts.append(f"{format_tokens(t.reprocessed_tokens)} re-processed")
        if t.unpriced_requests >= t.requests:  # none priced: a sum of nothing is not $0.00
            parts.append(format_cost(None))
        else:
            cost = _recache(t.miss_cost_usd)
            if t.unpriced_requests:
                cost += f" ({t.unpriced_requests} requests unpriced)"
            parts.append(cost)
    head = f"{t.session.session_id[:8]}{where}: "
    text = _fit(head, parts, width) if width is not None else head + " · ".join(parts)
    line = Text(text[: len(head)], style="bold")
    line.append(text[len(head) :], style="red" if misses else "")
    return line


def print_summary(console: Console, tallies: list[Tally]) -> None:
    """One line per session that showed activity while watched."""
    if not tallies:
        return
    console.print()
    console.print(Text("Watched sessions", style="bold"))
    for t in tallies:
        console.print(summary_line(t, console.width), soft_wrap=True)


def start_line(roots: list[str], found: dict[str, int]) -> str:
    """What a live watch says on stderr before it reads (a silent terminal looks hung):
    the session files of each agent followed (opencode's: its databases), and where."""
    where = ", ".join(roots[:3])
    more = f" and {len(roots) - 3} more" if len(roots) > 3 else ""
    files = {agent: n for agent, n in found.items() if agent != "opencode"}
    total = sum(files.values())
    if len(files) == 1:
        ((agent, n),) = files.items()
        parts = [f"{n} {agent} session{_s(n)}"]
    elif files:
        parts = [f"{total} sessions ({', '.join(f'{a} {n}' for a, n in files.items())})"]
    else:
        parts = [] if "opencode" in found else ["0 sessions"]
    if "opencode" in found:
        parts.append(f"{found['opencode']} opencode database{_s(found['opencode'])}")
    return (
        f"cachediag: watching {' and '.join(parts)} under {where}{more} "
        "for new requests; Ctrl-C stops with a summary"
    )


def _s(n: int) -> str:
    return "" if n == 1 else "s"


class PeopleOutput:
    """Events as lines for people on stdout, fitted to the terminal's width; a closed
    pipe (``| head``) or a terminal gone (SIGHUP) calls ``closed`` and ends the output."""

    def __init__(self, zone: tzinfo, closed: Callable[[], None]) -> None:
        from cachediag.console import SafeConsole

        self.zone = zone
        self.closed = closed
        self.console = SafeConsole(highlight=False)

    def event(self, event: WatchEvent) -> None:
        try:
            line = event_line(event, zone=self.zone, width=self.console.width)
            self.console.print(line, soft_wrap=True)
        except OSError:
            self.closed()

    def summary(self, tallies: list[Tally]) -> None:
        try:
            print_summary(self.console, tallies)
        except OSError:
            self.closed()
