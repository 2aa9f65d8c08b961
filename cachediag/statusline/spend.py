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

from cachediag.statusline.state import agent_files

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from typing import Any

    from cachediag.history.usage_rows import UsageRow

# The history's rows (``usage_rows``: namedtuple, the index, the clock) are imported
# only by a run that reads them: a refresh answered by a summary loads neither.

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
    build: bool = True,
) -> dict[str, Any]:
    """``session_cost_usd``, and with ``history`` ``today_cost_usd`` and ``block``;
    ``partial`` when the deadline came first (what is not whole is left out). Without
    ``build`` the session's cost comes from its summary alone (else ``partial``)."""
    mine = [transcript, *agent_files(transcript)]
    if not history:
        return _session_only(transcript, mine, root, deadline, build)
    from cachediag.follow.files import file_signature
    from cachediag.history import store

    files = history_files(transcript)
    for path in mine:
        if path not in files:
            files.append(path)
    where = store.index_path(session_kind(transcript) + "-all", root)
    sigs = {p: file_signature(p) for p in files}  # before reading: a later write shows
    day = [*time.localtime(now)[:3], os.environ.get("TZ"), time.timezone, time.altzone]
    try:
        saved = store.load(where, HISTORY_SUMMARY)["files"]
    except store.BadIndex:
        saved = {}
    if saved.get("sigs") == sigs and saved.get("day") == day and None not in sigs.values():
        return {**saved["spent"], "block": _block_at(saved["block"], now)}
    spent, block = _history_spend(files, mine, now, root, deadline)
    if spent is None:
        return {"partial": True}
    store.save(where, {"schema": HISTORY_SUMMARY, "files": {
        "sigs": sigs, "day": day, "spent": spent, "block": block}})  # fmt: skip
    return {**spent, "block": _block_at(block, now)}


HISTORY_SUMMARY = "spend-history-summary-1"
"""While no file of the history changed and the day is the same, a one-line summary
answers today's and the block's cost without decoding the whole history's rows."""


def _history_spend(
    files: list[str], mine: list[str], now: float, root: str | None, deadline: float | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The session's and today's cost, and the last block (not whether it is active):
    ``None`` first when the deadline came before every file was read."""
    from cachediag.history.index import Stats
    from cachediag.history.usage_rows import usage_rows

    stats = Stats()
    rows = usage_rows(files, root=root, stats=stats, deadline=deadline)
    by_file = dict(zip(files, rows, strict=True))
    session = [by_file[p] for p in mine]
    if stats.incomplete:
        return None, None
    everything = _once([r for f in rows for r in f])
    # A history of this session alone (the first run's usual case) is not sorted twice.
    own = everything if files == mine else _once([r for f in session for r in f])
    today = time.localtime(now)[:3]
    spent = {
        "session_cost_usd": _total(own),
        "today_cost_usd": _total(
            [(at, r) for at, r in everything if time.localtime(at)[:3] == today]
        ),
    }
    return spent, _last_block(everything)


SUMMARY = "spend-summary-1"


def _session_only(
    transcript: str, mine: list[str], root: str | None, deadline: float | None, build: bool
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
    if not build:
        return {"partial": True}
    from cachediag.history.index import Stats
    from cachediag.history.usage_rows import usage_rows

    stats = Stats()
    rows = usage_rows(mine, root=root, stats=stats, deadline=deadline, kind=kind)
    if stats.incomplete:
        return {"partial": True}
    cost = _total(_once([r for f in rows for r in f]))
    store.save(where, {"schema": SUMMARY, "files": {"sigs": sigs, "cost": cost}})
    return {"session_cost_usd": cost}


def _once(rows: list[UsageRow]) -> list[tuple[float, UsageRow]]:
    """Each response once (its last line), with its time, oldest first."""
    from cachediag.history.usage_rows import dedup_key, epoch_of

    keys = [dedup_key(row) for row in rows]
    last = {key: i for i, key in enumerate(keys) if key is not None}
    out = []
    for i, row in enumerate(rows):
        key = keys[i]
        if key is not None and last[key] != i:
            continue  # an earlier line of a response: its time is never needed
        at = epoch_of(row.timestamp)
        if at is not None:
            out.append((at, row))
    out.sort(key=lambda pair: pair[0])
    return out


def _total(rows: list[tuple[float, UsageRow]]) -> float | None:
    from cachediag.history.usage_rows import row_cost

    spent = 0.0
    for _, row in rows:
        cost = row_cost(row)
        if cost is None:
            return None
        spent += cost
    return spent


def _last_block(rows: list[tuple[float, UsageRow]]) -> dict[str, Any] | None:
    """The last block's start, last request and cost; ``None`` without requests."""
    start = last = None
    members: list[tuple[float, UsageRow]] = []
    for at, row in rows:
        if start is None or last is None or at - start > BLOCK_S or at - last > BLOCK_S:
            start, members = at - at % 3600, []
        members.append((at, row))
        last = at
    if start is None or last is None:
        return None
    return {"start": start, "last": last, "cost_usd": _total(members)}


def _block_at(block: dict[str, Any] | None, now: float) -> dict[str, Any]:
    """The block as the line shows it at ``now``: active while its end is ahead and its
    last request is less than 5 hours old."""
    if block is None:
        return {"active": False}
    start, last = block["start"], block["last"]
    active = start <= now < start + BLOCK_S and now - last < BLOCK_S
    return {"active": active, "cost_usd": block["cost_usd"], "ends_at": start + BLOCK_S}
