"""Which transcript lines can matter, found by byte search before any parsing.

Standard library only (and the optional compiled scanner): the status line's warm path
and the watch loop import it too.
"""

from __future__ import annotations

from cachediag.ingest.native import SCANNER

WANTED: tuple[bytes, ...] = (b'"assistant"', b"compact_boundary")
"""Only lines holding one of these can carry a request or a rebuild."""
COMPACT_SUMMARY = b"isCompactSummary"
"""Claude Code 1.0.x wrote no boundary line: its compaction is the summary line itself."""
WANTED_WITH_CHAINS: tuple[bytes, ...] = (*WANTED, b'"isSidechain":true', COMPACT_SUMMARY)
"""As ``WANTED``, plus what only 1.0.x files need: the sidechain lines that link inline
subagent chains and the compaction summaries (Claude Code writes compact JSON; each
extra spelling costs one more pass over every file)."""


def needles_for(head: list[bytes], follow_chains: bool) -> tuple[bytes, ...]:
    """The needles for one file: Claude Code writes compact JSON, but a transcript that was
    re-serialised with spaces must still link its inline sidechains."""
    if not follow_chains or _written_by_v2_or_later(head):
        # Since 2.0, subagents have files of their own and inline sidechain lines carry an
        # agentId: no chain needs linking, a compaction writes its boundary line, and two
        # passes over the file are saved.
        return WANTED
    return chain_needles(any(SPACED_SIDECHAIN in raw for raw in head))


def chain_needles(spaced: bool) -> tuple[bytes, ...]:
    """The needles for a file whose inline sidechains must be linked (``spaced``: its
    first lines spell the key with a space)."""
    return (*WANTED, b'"isSidechain": true', COMPACT_SUMMARY) if spaced else WANTED_WITH_CHAINS


SPACED_SIDECHAIN = b'"isSidechain": '
VERSION_KEY = b'"version":"'
"""Claude Code's version on a line: the byte after it is the major version's first."""


def major_from_v2(major: bytes) -> bool:
    """True for the first byte of a major version 2 or later (``b""``: none)."""
    return major.isdigit() and major != b"1"


def _written_by_v2_or_later(head: list[bytes]) -> bool:
    """True when the first lines name a Claude Code version 2 or later (and none older)."""
    versions = {raw[i + 11 : i + 12] for raw in head if (i := raw.find(VERSION_KEY)) >= 0}
    return bool(versions) and all(major_from_v2(v) for v in versions)


def py_wanted_lines(data: bytes | bytearray, end: int, needles: tuple[bytes, ...]) -> list[int]:
    """Start offsets of the lines of ``data[:end]`` holding any needle, in order.

    One C-level scan per needle over the whole buffer instead of a Python test per line:
    on a 100 MB transcript this is most of a cold read's time saved. The compiled
    scanner, when built, gives the same answer in one pass.
    """
    starts: set[int] = set()
    for needle in needles:
        i = data.find(needle, 0, end)
        while i >= 0:
            starts.add(data.rfind(b"\n", 0, i) + 1)
            line_end = data.find(b"\n", i, end)
            i = data.find(needle, line_end + 1, end) if line_end >= 0 else -1
    return sorted(starts)


wanted_lines = SCANNER[1] if SCANNER is not None else py_wanted_lines


MAX_LINE_BYTES = 64 << 20
"""The longest line any reader holds (64 MiB; Claude Code's longest lines, pasted images
and huge tool results, stay far below). A longer line is skipped as a bad line, in
linear time and without ever holding it whole."""
