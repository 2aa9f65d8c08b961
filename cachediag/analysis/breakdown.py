"""One request's prompt as the cache sees it (pure; hashes and sizes only, never text).

The API reads a prompt as one run of blocks: tools, then system blocks, then every
message's content blocks. A breakpoint (``cache_control``) caches the prefix up to its
block. The response's usage says how much of the prompt was read from cache, written to
it and paid uncached; the fingerprint says how many characters each block holds. Sizes
become estimated tokens (characters / 4, a fixed allowance per image) scaled so that the
blocks add up to the provider's count exactly: the blocks up to the last breakpoint carry
what was read and written, the blocks after it the uncached input.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from cachediag.model import BlockPrint, Fingerprint, RequestRecord

CHARS_PER_TOKEN = 4.0
"""The usual rule of thumb for English text and code; the scaling corrects it."""
MEDIA_TOKENS = 1_600
"""An image at the API's full resolution costs about this many tokens (Anthropic's
vision docs: width * height / 750, at most ~1,600); a document page costs more, unknown."""
LARGEST_SHOWN = 3

TOOLS, SYSTEM, MESSAGES = "tools", "system", "messages"


@dataclass(slots=True, frozen=True)
class Place:
    """Where a block sits: ``tools``/``system`` index, or message index and block."""

    section: str
    index: int
    block: int | None = None

    def label(self) -> str:
        if self.section == MESSAGES:
            return f"messages[{self.index}][{self.block}]"
        return f"{self.section}[{self.index}]"


@dataclass(slots=True, frozen=True)
class Layout:
    """A request's blocks in the order the API reads them."""

    prints: tuple[BlockPrint, ...]
    n_tools: int
    n_system: int
    message_starts: tuple[int, ...]
    """Position of each message's first block (a message without blocks has none of its
    own: its start equals the next one's)."""
    roles: tuple[str, ...]
    automatic: bool
    """The body asked for automatic caching (a top-level ``cache_control``)."""

    def place(self, pos: int) -> Place:
        if pos < self.n_tools:
            return Place(TOOLS, pos)
        if pos < self.n_tools + self.n_system:
            return Place(SYSTEM, pos - self.n_tools)
        msg = bisect.bisect_right(self.message_starts, pos) - 1
        return Place(MESSAGES, msg, pos - self.message_starts[msg])

    def role_at(self, pos: int) -> str | None:
        place = self.place(pos)
        return self.roles[place.index] if place.section == MESSAGES else None

    @property
    def breakpoints(self) -> tuple[int, ...]:
        """Positions of blocks with ``cache_control``; automatic caching puts its own on
        the last block."""
        found = [i for i, bp in enumerate(self.prints) if bp.cache_control]
        if self.automatic and self.prints and (not found or found[-1] != len(self.prints) - 1):
            found.append(len(self.prints) - 1)
        return tuple(found)


def layout_of(fp: Fingerprint | None) -> Layout | None:
    """The block layout, or ``None`` when the log kept no per-block fingerprint."""
    if fp is None or fp.message_blocks is None:
        return None
    tools = fp.tool_blocks or ()
    system = fp.system_blocks or ()
    prints: list[BlockPrint] = [*tools, *system]
    starts = []
    for blocks in fp.message_blocks:
        starts.append(len(prints))
        prints.extend(blocks)
    roles = fp.message_roles or ()
    if len(roles) != len(starts):
        roles = (*roles[: len(starts)], *(["?"] * (len(starts) - len(roles))))
    return Layout(
        tuple(prints), len(tools), len(system), tuple(starts), tuple(roles), bool(fp.cache_control)
    )


def raw_tokens(bp: BlockPrint) -> float:
    return bp.chars / CHARS_PER_TOKEN + bp.media * MEDIA_TOKENS


@dataclass(slots=True, frozen=True)
class BlockTokens:
    """Estimated tokens of every block of one request, split by how they were paid."""

    read: tuple[float, ...]
    written: tuple[float, ...]
    uncached: tuple[float, ...]

    def total(self, pos: int) -> float:
        return self.read[pos] + self.written[pos] + self.uncached[pos]


def _scaled(raw: Sequence[float], target: float) -> list[float]:
    weight = sum(raw)
    if weight > 0:
        return [r * target / weight for r in raw]
    return [target / len(raw)] * len(raw) if raw else []


def _snap(scaled: Sequence[float], tokens: float) -> int:
    """The block boundary nearest to ``tokens`` into the run: a cached prefix always ends
    at one, so reads never start inside a block."""
    best, best_gap, cum = 0, abs(tokens), 0.0
    for i, t in enumerate(scaled, start=1):
        cum += t
        if abs(cum - tokens) < best_gap:
            best, best_gap = i, abs(cum - tokens)
    return best


def _fill_prefix(raw: Sequence[float], read: float, written: float) -> tuple[list[float], ...]:
    """The run up to the last breakpoint: its first blocks read, the rest written."""
    n = len(raw)
    if n == 1:
        return [read], [written]
    if read == 0 or written == 0:
        return _scaled(raw, read) if read else [0.0] * n, _scaled(raw, written) if written else [
            0.0
        ] * n
    k = min(max(_snap(_scaled(raw, read + written), read), 1), n - 1)
    return (
        _scaled(raw[:k], read) + [0.0] * (n - k),
        [0.0] * k + _scaled(raw[k:], written),
    )


def _fill_in_order(raw: Sequence[float], amounts: Sequence[float]) -> list[list[float]]:
    """Scale the run to the amounts' sum and hand out tokens in order: the first
    ``amounts[0]`` tokens of the prompt to category 0, and so on."""
    scaled = _scaled(raw, sum(amounts))
    out = [[0.0] * len(raw) for _ in amounts]
    cat, left = 0, amounts[0] if amounts else 0.0
    for i, t in enumerate(scaled):
        while t > 1e-9 and cat < len(amounts):
            take = min(t, left)
            out[cat][i] += take
            t -= take
            left -= take
            if left <= 1e-9:
                cat += 1
                left = amounts[cat] if cat < len(amounts) else 0.0
        if t > 1e-9:  # rounding left-overs
            out[-1][i] += t
    return out


def block_tokens(layout: Layout, record: RequestRecord) -> BlockTokens:
    raw = [raw_tokens(bp) for bp in layout.prints]
    n = len(raw)
    read, written, uncached = (
        float(record.cache_read_tokens),
        float(record.cache_creation_tokens),
        float(record.input_tokens),
    )
    bps = layout.breakpoints
    last = bps[-1] if bps else None
    tail_weight = sum(raw[last + 1 :]) if last is not None else 0.0
    if last is not None and read + written > 0 and not (uncached == 0 and tail_weight > 0):
        r, w = _fill_prefix(raw[: last + 1], read, written)
        u = [0.0] * n
        if last + 1 < n:
            u[last + 1 :] = _scaled(raw[last + 1 :], uncached)
        else:
            # Nothing after the breakpoint: the few uncached tokens are the message
            # framing around it.
            u[last] = uncached
        pad = [0.0] * (n - last - 1)
        return BlockTokens(tuple(r + pad), tuple(w + pad), tuple(u))
    r, w, u = _fill_in_order(raw, [read, written, uncached])
    return BlockTokens(tuple(r), tuple(w), tuple(u))


@dataclass(slots=True, frozen=True)
class BlockShare:
    """One block named by where it is, its type and size (never its text)."""

    place: Place
    type: str
    name: str | None
    chars: int
    tokens: int


@dataclass(slots=True, frozen=True)
class Section:
    """The tools, one system block, or one turn of the conversation."""

    section: str
    label: str
    first: int
    """First index (tool, system block or message) the section covers."""
    last: int
    blocks: int
    chars: int
    raw_tokens: int
    read_tokens: int
    written_tokens: int
    uncached_tokens: int
    roles: dict[str, int]
    """Messages only: estimated tokens per role."""
    largest: tuple[BlockShare, ...]

    @property
    def tokens(self) -> int:
        return self.read_tokens + self.written_tokens + self.uncached_tokens


@dataclass(slots=True, frozen=True)
class Breakpoint:
    place: Place
    position: int
    """Blocks before it in the whole prompt (tools and system included)."""
    ttl: str
    automatic: bool
    prefix_tokens: int
    """Estimated tokens of the prompt up to and including its block."""


@dataclass(slots=True, frozen=True)
class Breakdown:
    record: RequestRecord
    sections: tuple[Section, ...]
    breakpoints: tuple[Breakpoint, ...]
    largest: tuple[BlockShare, ...]
    chars: int
    raw_tokens: int
    """Characters / 4 (plus images): the local estimate before scaling."""

    @property
    def provider_tokens(self) -> int:
        return self.record.total_tokens


def apportion(values: Sequence[float], total: int) -> list[int]:
    """Whole numbers close to ``values`` that add up to ``total`` (largest remainder)."""
    if not values:
        return []
    floors = [int(v) for v in values]
    short = total - sum(floors)
    order = sorted(range(len(values)), key=lambda i: values[i] - floors[i], reverse=True)
    for i in order[: max(short, 0)]:
        floors[i] += 1
    return floors


def _ttl(tag: str) -> str:
    return "1h" if "ttl=1h" in tag else "5m"


def _turn_starts(layout: Layout) -> list[int]:
    """Message indices that open a turn: the first message and each user message that is
    a prompt rather than tool results."""
    starts = []
    ends = (*layout.message_starts[1:], len(layout.prints))
    for i, role in enumerate(layout.roles):
        blocks = layout.prints[layout.message_starts[i] : ends[i]]
        answers = bool(blocks) and all(b.type == "tool_result" for b in blocks)
        if i == 0 or (role == "user" and not answers):
            starts.append(i)
    return starts


def _groups(layout: Layout) -> list[tuple[str, str, int, int, range]]:
    """(section, label, first index, last index, block positions) of every section."""
    out: list[tuple[str, str, int, int, range]] = []
    if layout.n_tools:
        out.append(
            (TOOLS, f"tools ({layout.n_tools})", 0, layout.n_tools - 1, range(layout.n_tools))
        )
    for i in range(layout.n_system):
        pos = layout.n_tools + i
        out.append((SYSTEM, f"system[{i}]", i, i, range(pos, pos + 1)))
    starts = _turn_starts(layout)
    n_msgs = len(layout.message_starts)
    for t, first in enumerate(starts):
        last = (starts[t + 1] if t + 1 < len(starts) else n_msgs) - 1
        lo = layout.message_starts[first]
        hi = layout.message_starts[last + 1] if last + 1 < n_msgs else len(layout.prints)
        span = f"message {first}" if first == last else f"messages {first}-{last}"
        out.append((MESSAGES, f"turn {t + 1} ({span})", first, last, range(lo, hi)))
    return out


def _share(layout: Layout, pos: int, tokens: float) -> BlockShare:
    bp = layout.prints[pos]
    return BlockShare(layout.place(pos), bp.type, bp.name, bp.chars, round(tokens))


def _largest(
    layout: Layout, positions: Sequence[int], totals: Sequence[float]
) -> tuple[BlockShare, ...]:
    top = sorted(positions, key=lambda p: (-totals[p], p))[:LARGEST_SHOWN]
    return tuple(_share(layout, p, totals[p]) for p in top)


def break_down(layout: Layout, record: RequestRecord) -> Breakdown:
    """The request's sections with estimated tokens that add up to the provider's count."""
    split = block_tokens(layout, record)
    totals = [split.total(i) for i in range(len(layout.prints))]
    groups = _groups(layout)
    per_group = [
        [sum(getattr(split, cat)[p] for p in positions) for (*_, positions) in groups]
        for cat in ("read", "written", "uncached")
    ]
    read = apportion(per_group[0], record.cache_read_tokens)
    written = apportion(per_group[1], record.cache_creation_tokens)
    uncached = apportion(per_group[2], record.input_tokens)
    sections = []
    for g, (section, label, first, last, positions) in enumerate(groups):
        roles: dict[str, int] = {}
        if section == MESSAGES:
            for p in positions:
                role = layout.role_at(p) or "?"
                roles[role] = roles.get(role, 0) + round(totals[p])
        sections.append(
            Section(
                section=section,
                label=label,
                first=first,
                last=last,
                blocks=len(positions),
                chars=sum(layout.prints[p].chars for p in positions),
                raw_tokens=round(sum(raw_tokens(layout.prints[p]) for p in positions)),
                read_tokens=read[g],
                written_tokens=written[g],
                uncached_tokens=uncached[g],
                roles=roles,
                largest=_largest(layout, positions, totals) if len(positions) > 1 else (),
            )
        )
    breakpoints = []
    cum = 0.0
    marks = set(layout.breakpoints)
    for pos, t in enumerate(totals):
        cum += t
        if pos in marks:
            tag = layout.prints[pos].cache_control
            breakpoints.append(Breakpoint(layout.place(pos), pos, _ttl(tag), not tag, round(cum)))
    message_positions = range(layout.n_tools + layout.n_system, len(layout.prints))
    return Breakdown(
        record=record,
        sections=tuple(sections),
        breakpoints=tuple(breakpoints),
        largest=_largest(layout, message_positions, totals),
        chars=sum(bp.chars for bp in layout.prints),
        raw_tokens=round(sum(raw_tokens(bp) for bp in layout.prints)),
    )
