"""When ccusage says a response happened, and what the log said it cost: the line whose
usage ccusage keeps.

Claude Code writes one line per content block of a response, each with its own
``timestamp``. The analysis dates a response by its first line (when it started to
arrive: what the cache's clock counts from); ccusage keeps the first line of each
``message.id`` until a later one reports more output tokens (the final count), and
dates the response by the line it kept. Days, sessions' first and last activity and the
5-hour blocks are ccusage's only with ccusage's dates.

The transcript reader notes that line's time as it merges the copies
(``RequestRecord.kept_at``), so a transcript is read once. Its picked fields do not hold
``costUSD`` (written by Claude Code until mid-2025), nor do other formats' records keep
the kept line: only then are the lines holding usage read again here (``last_times``),
``needs_reread`` says when.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from cachediag.safefiles import open_regular

USAGE = b'"usage"'
COST = b'"costUSD"'
CLAUDE_CODE = "claude-code"


def _loads(raw: bytes) -> Any:
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        return json.loads(raw)
    return orjson.loads(raw)


def epoch_of_iso(value: object) -> float | None:
    """An ISO time as a transcript writes it (``Z`` or an offset), else ``None``."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Kept(NamedTuple):
    """The line ccusage keeps for one response."""

    output_tokens: int
    at: float
    logged_cost_usd: float | None
    """The line's own ``costUSD`` (Claude Code wrote one until mid-2025): what ccusage's
    default ``--mode auto`` prefers to its own prices."""


def needs_reread(fmt: str, paths: Iterable[str]) -> bool:
    """Whether a session's kept lines must be read from its files (``last_times``): a
    Claude log of another format, or a transcript a line of which has its own
    ``costUSD``. Another agent's session (Codex, Gemini CLI, opencode) never: its reader
    dates each call once, and ccusage dates it the same way."""
    from cachediag.ingest.agents import agent_of

    if agent_of(fmt) != "claude":
        return False
    return fmt != CLAUDE_CODE or any(_holds(path, COST) for path in paths)


def _holds(path: str, needle: bytes) -> bool:
    """Whether the regular file holds ``needle`` (a FIFO is not opened: it would block);
    mapped, not read: the page cache is searched in place (a file read whole costs its
    copy, about as much as the search)."""
    import mmap

    try:
        with open_regular(path) as fp, mmap.mmap(fp.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(needle) >= 0
    except (OSError, ValueError):  # gone, unreadable, not a file, or empty (nothing to map)
        return False


def last_times(paths: Iterable[str]) -> dict[str, Kept]:
    """Per ``message.id``: the line ccusage keeps, reading ``paths`` in order. A file
    that cannot be read gives nothing (the analysis has said why)."""
    kept: dict[str, Kept] = {}
    for path in paths:
        try:
            with open_regular(path) as fp:  # a FIFO, read once already, would block
                data = fp.read()
        except OSError:
            continue
        for raw in data.splitlines():
            if USAGE not in raw:
                continue
            try:
                line = _loads(raw)
            except ValueError:
                continue
            if not isinstance(line, dict):
                continue
            message = line.get("message")
            if not isinstance(message, dict):
                continue
            mid = message.get("id")
            at = epoch_of_iso(line.get("timestamp"))
            if not isinstance(mid, str) or at is None:
                continue
            output = _output(message.get("usage"))
            before = kept.get(mid)
            if before is None or output > before.output_tokens:
                kept[mid] = Kept(output, at, _cost(line.get("costUSD")))
    return kept


def _cost(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e9:
        return float(value)
    return None


def _output(usage: object) -> int:
    value = usage.get("output_tokens") if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
