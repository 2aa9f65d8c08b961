"""When ccusage says a response happened: the time of the line whose usage it keeps.

Claude Code writes one line per content block of a response, each with its own
``timestamp``. The analysis dates a response by its first line (when it started to
arrive: what the cache's clock counts from); ccusage keeps the first line of each
``message.id`` until a later one reports more output tokens (the final count), and
dates the response by the line it kept. Days, sessions' first and last activity and the
5-hour blocks are ccusage's only with ccusage's dates, so the usage rows take them from
here. Only lines that hold ``"usage"`` are parsed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

USAGE = b'"usage"'


def _loads(raw: bytes) -> Any:
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        return json.loads(raw)
    return orjson.loads(raw)


def _epoch(value: object) -> float | None:
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


def last_times(paths: Iterable[str]) -> dict[str, Kept]:
    """Per ``message.id``: the line ccusage keeps, reading ``paths`` in order. A file
    that cannot be read gives nothing (the analysis has said why)."""
    kept: dict[str, Kept] = {}
    for path in paths:
        try:
            data = Path(path).read_bytes()
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
            at = _epoch(line.get("timestamp"))
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
