"""Which transcript lines can matter, found by byte search before any parsing.

Standard library only: the status line's warm path and the watch loop import it too.
"""

from __future__ import annotations

WANTED: tuple[bytes, ...] = (b'"assistant"', b"compact_boundary")
"""Only lines holding one of these can carry a request or a rebuild."""
WANTED_WITH_CHAINS: tuple[bytes, ...] = (*WANTED, b'"isSidechain":true')
"""As ``WANTED``, plus the sidechain lines that link inline subagent chains (Claude Code
writes compact JSON; each extra spelling costs one more pass over every file)."""


def needles_for(head: list[bytes], follow_chains: bool) -> tuple[bytes, ...]:
    """The needles for one file: Claude Code writes compact JSON, but a transcript that was
    re-serialised with spaces must still link its inline sidechains."""
    if not follow_chains:
        return WANTED
    if any(b'"isSidechain": ' in raw for raw in head):
        return (*WANTED, b'"isSidechain": true')
    return WANTED_WITH_CHAINS


def wanted_lines(data: bytes, end: int, needles: tuple[bytes, ...]) -> list[int]:
    """Start offsets of the lines of ``data[:end]`` holding any needle, in order.

    One C-level scan per needle over the whole buffer instead of a Python test per line:
    on a 100 MB transcript this is most of a cold read's time saved.
    """
    starts: set[int] = set()
    for needle in needles:
        i = data.find(needle, 0, end)
        while i >= 0:
            starts.add(data.rfind(b"\n", 0, i) + 1)
            line_end = data.find(b"\n", i, end)
            i = data.find(needle, line_end + 1, end) if line_end >= 0 else -1
    return sorted(starts)
