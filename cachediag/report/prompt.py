"""``cachediag prompt`` output: the JSON object and the rich view of one request's prompt.

Every value shown is a name, a type, a count, a size or a price: the fingerprints hold no
prompt text. Tool and model names come from logs, so they are kept to printable
characters and never read as markup.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cachediag.analysis.breakdown import (
    CHARS_PER_TOKEN,
    MEDIA_TOKENS,
    BlockShare,
    Breakdown,
    Place,
    Section,
)
from cachediag.analysis.hygiene import ADVICE, Finding, sort_key
from cachediag.text import sanitize

SCHEMA_VERSION = 1
WIDTH = 80
BAR_WIDTH = 18
MESSAGE_ROWS = 12
"""Turns shown one by one; a longer conversation shows its first and last turns and one
row for those between."""


def _clean(text: str | None, limit: int = 40) -> str:
    return sanitize(text or "", limit)


def place_dict(place: Place) -> dict[str, Any]:
    return {"section": place.section, "index": place.index, "block": place.block}


def _share_dict(b: BlockShare) -> dict[str, Any]:
    return {
        "where": place_dict(b.place),
        "type": b.type,
        "name": b.name,
        "chars": b.chars,
        "tokens": b.tokens,
    }


def _section_dict(s: Section) -> dict[str, Any]:
    out: dict[str, Any] = {
        "section": s.section,
        "label": s.label,
        "first": s.first,
        "last": s.last,
        "blocks": s.blocks,
        "chars": s.chars,
        "raw_tokens": s.raw_tokens,
        "tokens": s.tokens,
        "read_tokens": s.read_tokens,
        "written_tokens": s.written_tokens,
        "uncached_tokens": s.uncached_tokens,
        "largest": [_share_dict(b) for b in s.largest],
    }
    if s.roles:
        out["roles"] = dict(s.roles)
    return out


def finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "where": place_dict(f.where),
        "first_request": f.first_request,
        "requests": f.requests,
        "tokens": f.tokens,
        "cost_usd": f.cost_usd,
        "misses": f.misses,
        "detail": f.detail,
        "advice": ADVICE.get(f.kind),
    }


def breakdown_dict(index: int, b: Breakdown) -> dict[str, Any]:
    r = b.record
    return {
        "request": index,
        "at": r.at,
        "model": r.model,
        "message_id": r.message_id,
        "request_id": r.request_id,
        "provider_tokens": {
            "input_tokens": r.input_tokens,
            "cache_read_tokens": r.cache_read_tokens,
            "cache_creation_tokens": r.cache_creation_tokens,
            "total": r.total_tokens,
        },
        "estimate": {
            "chars": b.chars,
            "raw_tokens": b.raw_tokens,
            "chars_per_token": CHARS_PER_TOKEN,
            "media_tokens": MEDIA_TOKENS,
        },
        "sections": [_section_dict(s) for s in b.sections],
        "breakpoints": [
            {
                "where": place_dict(bp.place),
                "position": bp.position,
                "ttl": bp.ttl,
                "automatic": bp.automatic,
                "prefix_tokens": bp.prefix_tokens,
            }
            for bp in b.breakpoints
        ],
        "largest_blocks": [_share_dict(s) for s in b.largest],
    }


@dataclass(slots=True, frozen=True)
class StreamFindings:
    stream: str
    kind: str
    requests: int
    findings: tuple[Finding, ...]


def _stream_findings_dict(s: StreamFindings) -> dict[str, Any]:
    return {
        "stream": s.stream,
        "stream_kind": s.kind,
        "requests": s.requests,
        "findings": [finding_dict(f) for f in s.findings],
    }


def prompt_dict(
    *,
    source: str,
    own: StreamFindings,
    index: int,
    breakdown: Breakdown,
    pricing_source: str | None,
    others: Sequence[StreamFindings] | None = None,
) -> dict[str, Any]:
    out = {
        "schema_version": SCHEMA_VERSION,
        "source": source,
        **_stream_findings_dict(own),
        "breakdown": breakdown_dict(index, breakdown),
        "pricing_source": pricing_source,
    }
    if others is not None:
        out["other_streams"] = [_stream_findings_dict(s) for s in others]
    return out


# -- the rich view ------------------------------------------------------------------------

_READ, _WRITTEN, _UNCACHED = ("█", "green"), ("▓", "yellow"), ("░", "red")


def _bar(s: Section, total: int) -> Text:
    bar = Text()
    if total <= 0:
        return bar
    cells = [
        round(v * BAR_WIDTH / total) for v in (s.read_tokens, s.written_tokens, s.uncached_tokens)
    ]
    if s.tokens and not any(cells):
        largest = max(
            range(3), key=lambda i: (s.read_tokens, s.written_tokens, s.uncached_tokens)[i]
        )
        cells[largest] = 1
    for (char, style), n in zip((_READ, _WRITTEN, _UNCACHED), cells, strict=True):
        bar.append(char * n, style=style)
    return bar


def _n(value: int) -> str:
    return f"{value:,}"


def _block_name(b: BlockShare) -> str:
    if b.place.section == "tools":
        return f"{_clean(b.name, 30) or 'tool'} ~{_n(b.tokens)}"
    kind = b.type if b.name is None else f"{b.type} ({_clean(b.name, 30)})"
    return f"{b.place.label()} {_clean(kind, 50)} ~{_n(b.tokens)}"


def _collapsed(sections: Sequence[Section]) -> list[Section | tuple[str, list[Section]]]:
    messages = [s for s in sections if s.section == "messages"]
    rows: list[Section | tuple[str, list[Section]]] = [
        s for s in sections if s.section != "messages"
    ]
    if len(messages) <= MESSAGE_ROWS:
        return rows + list(messages)
    head, tail = messages[:3], messages[-(MESSAGE_ROWS - 4) :]
    middle = messages[3 : -(MESSAGE_ROWS - 4)]
    label = f"turns {len(head) + 1}-{len(head) + len(middle)} ({len(middle)})"
    return [*rows, *head, (label, middle), *tail]


def _sum_section(label: str, group: list[Section]) -> Section:
    return Section(
        section="messages",
        label=label,
        first=group[0].first,
        last=group[-1].last,
        blocks=sum(s.blocks for s in group),
        chars=sum(s.chars for s in group),
        raw_tokens=sum(s.raw_tokens for s in group),
        read_tokens=sum(s.read_tokens for s in group),
        written_tokens=sum(s.written_tokens for s in group),
        uncached_tokens=sum(s.uncached_tokens for s in group),
        roles={},
        largest=(),
    )


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def render_prompt(
    console: Console,
    *,
    own: StreamFindings,
    index: int,
    breakdown: Breakdown,
    others: Sequence[StreamFindings] = (),
) -> None:
    stream = own.stream
    b = breakdown
    r = b.record
    total = r.total_tokens
    console.print(
        Text(
            f"Request {index} of stream {_clean(stream)} "
            f"({_clean(r.model) or 'unknown model'}), {_when(r.at)}"
        )
    )
    console.print(
        Text(
            f"  provider counted {_n(total)} tokens: read {_n(r.cache_read_tokens)}, "
            f"written {_n(r.cache_creation_tokens)}, uncached {_n(r.input_tokens)}"
        )
    )
    scale = f", scaled x{total / b.raw_tokens:.2f} to that count" if b.raw_tokens else ""
    console.print(
        Text(f"  local estimate {_n(b.raw_tokens)} tokens ({_n(b.chars)} chars / 4){scale}")
    )
    table = Table(box=None, padding=(0, 1), show_edge=False, pad_edge=False)
    table.add_column("section", no_wrap=True, max_width=26)
    for name in ("tokens", "read", "written", "uncached"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("cache", no_wrap=True)
    for row in _collapsed(b.sections):
        s = _sum_section(*row) if isinstance(row, tuple) else row
        table.add_row(
            Text(_clean(s.label, 26)),
            _n(s.tokens),
            _n(s.read_tokens),
            _n(s.written_tokens),
            _n(s.uncached_tokens),
            _bar(s, total),
        )
    console.print(table)
    console.print(
        Text.assemble("  cache: ", _READ, " read  ", _WRITTEN, " written  ", _UNCACHED, " uncached")
    )
    tools = next((s for s in b.sections if s.section == "tools"), None)
    if tools is not None and tools.largest:
        _wrapped(
            console, "largest tools: " + ", ".join(_block_name(x) for x in tools.largest), "  "
        )
    if b.largest:
        _wrapped(console, "largest blocks: " + ", ".join(_block_name(x) for x in b.largest), "  ")
    if b.breakpoints:
        marks = ", ".join(
            f"{bp.place.label()}{' (automatic)' if bp.automatic else ''} {bp.ttl} "
            f"~{_n(bp.prefix_tokens)}"
            for bp in b.breakpoints
        )
        _wrapped(console, f"breakpoints: {marks}", "  ")
    else:
        console.print(Text("  breakpoints: none (no cache_control in this request)"))
    _render_findings(console, own)
    if others:
        _render_others(console, others)


def _wrapped(console: Console, text: str, indent: str, later: str | None = None) -> None:
    for line in textwrap.wrap(
        text, WIDTH - 1, initial_indent=indent, subsequent_indent=later or indent + "  "
    ):
        console.print(Text(line))


def _render_findings(console: Console, group: StreamFindings) -> None:
    stream, findings, requests = group.stream, group.findings, group.requests
    plural = "request" if requests == 1 else "requests"
    if not findings:
        console.print(Text(f"Findings over stream {_clean(stream)} ({requests} {plural}): none"))
        return
    console.print(
        Text(f"Findings over stream {_clean(stream)} ({requests} {plural}), costliest first:")
    )
    for f in findings:
        cost = "unpriced" if f.cost_usd is None else f"${f.cost_usd:.4f}"
        console.print(
            Text(f"  {cost} {_clean(f.kind)} at {f.where.label()}, since request {f.first_request}")
        )
        _wrapped(console, _clean(f.detail, 300), "    ", "    ")
        advice = ADVICE.get(f.kind)
        if advice:
            _wrapped(console, "-> " + advice, "    ", "       ")


def _render_others(console: Console, others: Sequence[StreamFindings]) -> None:
    """One line per finding of the other streams: the details are one --stream away."""
    rows = [(s, f) for s in others for f in s.findings]
    quiet = sum(1 for s in others if not s.findings)
    console.print(
        Text(
            f"Other streams: {len(others)}, {len(others) - quiet} with findings"
            + (" (details: --stream ID)" if rows else "")
        )
    )
    for s, f in sorted(rows, key=lambda row: sort_key(row[1])):
        cost = "unpriced" if f.cost_usd is None else f"${f.cost_usd:.4f}"
        _wrapped(
            console,
            f"{_clean(s.stream)}: {cost} {_clean(f.kind)} at {f.where.label()} "
            f"({f.requests} of {s.requests} requests)",
            "  ",
        )
