"""What was spent, for the status line: the session, today (local time) and the current
5-hour block, from the history index's usage rows.

The session is its transcript and its subagents' files, kept in an index of its own so
that a refresh loads only them; today and the block need every transcript of the
config folder (``.../projects/*/``), read once into the whole history's index and then
only what changed. One response logged on several lines (a streamed answer, a resumed
session's copy) counts once, as its last line says (``message.id`` and ``requestId``).
A request's cost is its line's ``costUSD`` when it has one, else its tokens at the
model's prices of that day, worked out when the line was read into the index (so a
refresh that reads nothing loads no price data); a request whose model has no price
makes the sum unknown, never $0.

Blocks follow ccusage's rule: a block starts at the hour (UTC) of its first request and
lasts 5 hours; a request past its end, or more than 5 hours after the one before,
starts the next. The block is active while its end is ahead and its last request is
less than 5 hours old.
"""

from __future__ import annotations

import os
import time
import zlib

from cachediag.history.clock import epoch
from cachediag.history.index import Stats
from cachediag.history.usage_rows import UsageRow, dedup_key, row_cost, usage_rows
from cachediag.statusline.state import agent_files

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from typing import Any

BLOCK_S = 5 * 3600.0


def session_kind(transcript: str) -> str:
    full = os.path.abspath(transcript).encode("utf-8", "surrogateescape")
    return f"session-{zlib.crc32(full):08x}{zlib.adler32(full):08x}"


def history_files(transcript: str) -> list[str]:
    """Every transcript of the config folder the session's belongs to: the folders
    beside its project folder when that sits in ``projects``, else its own folder."""
    from cachediag.follow.files import jsonl_below

    project = os.path.dirname(os.path.abspath(transcript))
    top = os.path.dirname(project)
    root = top if os.path.basename(top) == "projects" else project
    return sorted(jsonl_below(root))


def spend_view(
    transcript: str,
    now: float,
    *,
    history: bool,
    root: str | None = None,
    deadline: float | None = None,
) -> dict[str, Any]:
    """``session_cost_usd``, and with ``history`` ``today_cost_usd`` and ``block``;
    ``partial`` when the deadline came first (what is not whole is left out)."""
    mine = [transcript, *agent_files(transcript)]
    if not history:
        return _session_only(transcript, mine, root, deadline)
    stats = Stats()
    files = history_files(transcript)
    for path in mine:
        if path not in files:
            files.append(path)
    rows = usage_rows(files, root=root, stats=stats, deadline=deadline)
    by_file = dict(zip(files, rows, strict=True))
    session = [by_file[p] for p in mine]
    if stats.incomplete:
        return {"partial": True}
    everything = _once([r for f in rows for r in f])
    today = time.localtime(now)[:3]
    return {
        "session_cost_usd": _total(_once([r for f in session for r in f])),
        "today_cost_usd": _total(
            [(at, r) for at, r in everything if time.localtime(at)[:3] == today]
        ),
        "block": _block(everything, now),
    }


SUMMARY = "spend-summary-1"


def _session_only(
    transcript: str, mine: list[str], root: str | None, deadline: float | None
) -> dict[str, Any]:
    """The session's cost alone (the default line, on every refresh): while its files
    are as they were, a one-line summary beside its index answers without the rows."""
    from cachediag.follow.files import file_signature
    from cachediag.history import store

    kind = session_kind(transcript)
    where = store.index_path(kind + "-sum", root)
    sigs = {p: file_signature(p) for p in mine}  # before reading: a later write shows
    try:
        saved = store.load(where, SUMMARY)["files"]
    except store.BadIndex:
        saved = {}
    if saved.get("sigs") == sigs and None not in sigs.values():
        return {"session_cost_usd": saved.get("cost")}
    stats = Stats()
    rows = usage_rows(mine, root=root, stats=stats, deadline=deadline, kind=kind)
    if stats.incomplete:
        return {"partial": True}
    cost = _total(_once([r for f in rows for r in f]))
    store.save(where, {"schema": SUMMARY, "files": {"sigs": sigs, "cost": cost}})
    return {"session_cost_usd": cost}


def _once(rows: list[UsageRow]) -> list[tuple[float, UsageRow]]:
    """Each response once (its last line), with its time, oldest first."""
    last: dict[str, int] = {}
    for i, row in enumerate(rows):
        key = dedup_key(row)
        if key is not None:
            last[key] = i
    out = []
    for i, row in enumerate(rows):
        key = dedup_key(row)
        at = epoch(row.timestamp)
        if at is None or (key is not None and last[key] != i):
            continue
        out.append((at, row))
    out.sort(key=lambda pair: pair[0])
    return out


def _total(rows: list[tuple[float, UsageRow]]) -> float | None:
    spent = 0.0
    for _, row in rows:
        cost = row_cost(row)
        if cost is None:
            return None
        spent += cost
    return spent


def _block(rows: list[tuple[float, UsageRow]], now: float) -> dict[str, Any]:
    start = last = None
    members: list[tuple[float, UsageRow]] = []
    for at, row in rows:
        if start is None or last is None or at - start > BLOCK_S or at - last > BLOCK_S:
            start, members = at - at % 3600, []
        members.append((at, row))
        last = at
    if start is None or last is None:
        return {"active": False}
    active = start <= now < start + BLOCK_S and now - last < BLOCK_S
    return {"active": active, "cost_usd": _total(members), "ends_at": start + BLOCK_S}
