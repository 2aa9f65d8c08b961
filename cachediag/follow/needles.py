"""Which lines of a followed file can matter, decided as ``analyze`` decides it: from
the file's first lines (``ingest.needles.needles_for``), once, kept in the file's cursor.

A file written by Claude Code 2.0 or later needs two needles, an older one four (its
inline sidechains and compaction summaries); each needle is one more pass over every
byte read, so this halves the scan of a first run on a long transcript.

Standard library only: the status line's state module asks ``saved_needles`` on runs
that read nothing.
"""

from __future__ import annotations

from cachediag.ingest.needles import WANTED, WANTED_WITH_CHAINS, needles_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SETS = {
    needles: [n.decode("ascii") for n in needles]
    for needles in (WANTED, WANTED_WITH_CHAINS, needles_for([b'"isSidechain": '], True))
}
"""The needle sets ``needles_for`` chooses from, as a cursor saves them."""


def needles_of(needles: tuple[bytes, ...]) -> list[str]:
    return _SETS[needles]


def saved_needles(saved: Any, *, chains: bool) -> tuple[bytes, ...]:
    """The needles a cursor saved; without one (a cursor of an older version, or a read
    that did not start at byte 0), the widest set the file can need."""
    names = saved.get("needles") if isinstance(saved, dict) else None
    for needles, known in _SETS.items():
        if names == known:
            return needles
    return WANTED_WITH_CHAINS if chains else WANTED


def file_needles(first_block: bytes, *, chains: bool) -> tuple[bytes, ...]:
    """``needles_for`` on the file's first lines, as ``analyze`` reads them; when the
    first block holds fewer of them than ``analyze`` looks at and more may follow, the
    widest set (reading more lines than needed is never wrong)."""
    from cachediag.ingest.detect import SNIFF_LINES

    if not chains:
        return WANTED
    head = first_block.split(b"\n", SNIFF_LINES)
    complete = head[:-1] if len(head) <= SNIFF_LINES else head[:SNIFF_LINES]
    if len(complete) < SNIFF_LINES:
        return WANTED_WITH_CHAINS
    return needles_for([line + b"\n" for line in complete], follow_chains=True)
