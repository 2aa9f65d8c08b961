"""Requests the capture proxy served that no transcript holds, added to their session.

Claude Code 2.1.332 writes no transcript for its compaction call: the transcript holds 4
of the 5 requests the API served, and the fifth read the whole context. Joined to the
proxy's records, a session gets those requests back, with their tokens and cost. A
record belongs to the session when it threads, as a capture log alone would be threaded
(``ingest.threads``), with the session's own joined requests: the compaction call (the
request before the rebuild asked the conversation for its summary) becomes a compaction
stream; a request of a transcript's stream the transcript lost goes back into that
stream. A record that threads with none of the session's requests is not the session's
(another session's, or a side call nothing links to it).

Such streams name the capture day file as their ``source`` and each record its line
there, so that what is known from the captures alone says so. Standard library only.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cachediag.ingest.jsonl import BadLine, parse_line
from cachediag.ingest.threads import Thread, split_threads
from cachediag.model import (
    RebuildAnnounced,
    RebuildKind,
    RequestRecord,
    ServerReason,
    SessionLog,
    StreamKind,
    Ttl,
)
from cachediag.proxy.index import _AT, _AT_WITHIN, fingerprint_from_json

_TTLS: dict[Any, Ttl] = {"5m": "5m", "30m": "30m", "1h": "1h", "24h": "24h"}


def _count(obj: dict[str, Any], key: str) -> int | None:
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def record_from_line(raw: bytes, line: int) -> RequestRecord | None:
    """A request record from one line of the proxy's log; ``None`` for a failure, a line
    without usage or one that is not a record at all (counted by the reader, not here)."""
    try:
        obj = parse_line(raw)
    except BadLine:
        return None
    at = obj.get("at")
    if "failure" in obj or not isinstance(at, int | float) or isinstance(at, bool):
        return None
    tokens = [
        _count(obj, k) for k in ("input_tokens", "cache_read_tokens", "cache_creation_tokens")
    ]
    if any(t is None for t in tokens):
        return None
    inp, read, creation = (t or 0 for t in tokens)
    five, hour = _count(obj, "cache_creation_5m"), _count(obj, "cache_creation_1h")
    said = obj.get("ttl")
    ttl: Ttl = _TTLS.get(said) or ("1h" if hour else "5m")
    reason = obj.get("server_reason")
    server = None
    if isinstance(reason, dict) and (reason.get("type") is None or isinstance(reason["type"], str)):
        missed = reason.get("missed_tokens")
        server = ServerReason(reason.get("type"), missed if isinstance(missed, int) else None)
    strings = {k: obj.get(k) if isinstance(obj.get(k), str) else None for k in _IDS}
    return RequestRecord(
        at=float(at),
        input_tokens=inp,
        cache_read_tokens=read,
        cache_creation_tokens=creation,
        output_tokens=_count(obj, "output_tokens") or 0,
        ttl=ttl,
        cache_creation_5m_tokens=five,
        cache_creation_1h_tokens=hour,
        model=strings["model"],
        request_id=strings["request_id"],
        message_id=strings["message_id"],
        line=line,
        server_reason=server,
        fingerprint=fingerprint_from_json(obj.get("fingerprint")),
        applied_edits=_count(obj, "applied_edits") or 0,
    )


_IDS = ("model", "request_id", "message_id")


def _ids(record: RequestRecord) -> Iterable[str]:
    return (i for i in (record.message_id, record.request_id) if i is not None)


def add_missing(log: SessionLog, found: list[tuple[Path, RequestRecord]]) -> int:
    """Add to ``log`` the records of ``found`` (capture records answered around the
    session, with the file each is from) that its transcripts lack and that thread with
    its joined requests; returns how many were added."""
    home: dict[int, str] = {}
    known: set[str] = set()
    mine: list[RequestRecord] = []
    for stream in log.streams.values():
        for record in stream.requests:
            known.update(_ids(record))
            fp = record.fingerprint
            if fp is not None and fp.message_hashes:
                home[id(record)] = stream.id
                mine.append(record)
    extra = {id(r): path for path, r in found if not known.intersection(_ids(r))}
    if not mine or not extra:
        return 0
    records = sorted([*mine, *(r for _, r in found if id(r) in extra)], key=_at)
    added = 0
    for thread in split_threads(records):
        requests = [i for i in thread.items if isinstance(i, RequestRecord)]
        # Only what the session's own later requests went on from is the session's: a
        # conversation of another session that happens to start alike may follow it.
        last_mine = max((n for n, i in enumerate(requests) if id(i) in home), default=-1)
        new = [i for i in requests[:last_mine] if id(i) in extra] if last_mine >= 0 else []
        if last_mine < 0 and _forked_from_session(thread, home):
            new = [i for i in requests if id(i) in extra]
        if not new:
            continue
        streams = Counter(home[id(i)] for i in thread.items if id(i) in home)
        if streams:
            target = log.streams[streams.most_common(1)[0][0]]
            for r in new:  # by time among the stream's items, whose own order is kept
                at = bisect.bisect_right([i.at for i in target.items], r.at)
                target.items.insert(
                    at, dataclasses.replace(r, stream=target.id, captured_only=True)
                )
        elif _forked_from_session(thread, home):
            sid = free_stream_id(log, "compaction")
            stream = log.stream(sid, StreamKind.COMPACTION, source=str(extra[id(new[0])]))
            stream.items.extend(dataclasses.replace(r, stream=sid, captured_only=True) for r in new)
        else:
            continue
        added += len(new)
    return added


def _at(item: Any) -> float:
    return float(item.at)


def _forked_from_session(thread: Thread, home: dict[int, str]) -> bool:
    """Whether ``thread`` (a compaction call) forked a conversation of the session that
    went on after it: the session's own request resumed from its summary."""
    parent = thread.forked_from
    if parent is None or not thread.items:
        return False
    at = thread.items[0].at
    return any(id(i) in home and i.at > at for i in parent.items)


def free_stream_id(log: SessionLog, kind: str) -> str:
    """A stream id for requests known from the captures only: ``<kind>-captured-N``."""
    n = 1
    while f"{kind}-captured-{n}" in log.streams:
        n += 1
    return f"{kind}-captured-{n}"


COMPACTION_WINDOW_S = 900.0
"""How long before its boundary line a compaction call may have been answered (a long
conversation's summary takes minutes); the boundary is written once it has."""
BOUNDARY_AFTER_S = 10.0


def compaction_call(
    folder: Path, prev: RequestRecord, at: float
) -> tuple[Path, RequestRecord] | None:
    """For readers that see one item at a time (status line, live view): the capture
    record of the compaction call whose boundary line a transcript wrote at ``at``, found
    from ``prev``, the stream's request before it (joined, so its fingerprint is known):
    the latest record answered in between that asks ``prev``'s conversation for its
    summary (``ingest.threads.asks_to_summarise``). ``None`` when there is none."""
    from cachediag.ingest.threads import asks_to_summarise
    from cachediag.proxy.logfiles import day_file_name

    before = prev.fingerprint
    if before is None or not before.message_hashes:
        return None
    since, until = max(prev.at, at - COMPACTION_WINDOW_S), at + BOUNDARY_AFTER_S
    best: tuple[Path, RequestRecord] | None = None
    for name in dict.fromkeys((day_file_name(since), day_file_name(until))):
        path = folder / name
        for line, raw in _lines_between(path, since, until):
            record = record_from_line(raw, line)
            if record is None or record.fingerprint is None or record.at <= prev.at:
                continue
            later = best is None or record.at > best[1].at
            if (
                later
                and not known_id(record, prev)
                and asks_to_summarise(before, record.fingerprint)
            ):
                best = (path, record)
    return best


def known_id(a: RequestRecord, b: RequestRecord) -> bool:
    return bool(set(_ids(a)) & set(_ids(b)))


def _lines_between(path: Path, since: float, until: float) -> list[tuple[int, bytes]]:
    """(line number, line) of the records of a day file answered in [since, until]."""
    import os

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        with os.fdopen(fd, "rb", closefd=False) as fp:
            data = fp.read()
    finally:
        os.close(fd)
    out = []
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
        when = _AT.match(raw, 1, _AT_WITHIN) if raw.startswith(b"{") else None
        if when is not None and since <= float(when.group(1)) <= until:
            out.append((number, raw))
    return out


def captured_compaction(
    enrich: object, log: SessionLog, prev: RequestRecord | None, boundary: RebuildAnnounced
) -> RequestRecord | None:
    """For a live reader (status line, ``watch``) whose ``enrich`` is the capture join
    (``proxy.index.LiveJoin``): the compaction call behind a compaction ``boundary`` that
    no transcript holds, put in a new compaction stream of ``log`` (named after the
    capture's day file), ready for that stream's ledger; ``None`` when there is none.
    ``prev`` is the request before the boundary in its stream (its ledger's ``prev``)."""
    folder = getattr(enrich, "folder", None)
    if not isinstance(folder, Path) or prev is None or boundary.kind is not RebuildKind.COMPACTION:
        return None
    found = compaction_call(folder, prev, boundary.at)
    if found is None:
        return None
    path, record = found
    sid = free_stream_id(log, "compaction")
    log.stream(sid, StreamKind.COMPACTION, source=str(path))
    return dataclasses.replace(record, stream=sid, captured_only=True)
