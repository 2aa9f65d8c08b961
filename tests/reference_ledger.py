"""An independent, deliberately plain reading of the accounting spec, for cross-checks.

Written from ``spec/prompt-cache.md`` §1-3 and ``spec/formats.md`` §1 alone, without
looking at ``cachediag.ingest`` or ``cachediag.analysis``: if both agree, two readings of
the spec agree; if not, one of them is wrong and the spec decides which. It handles
Claude Code transcripts only and favours obviousness over speed.

Choices the spec leaves open, made here on purpose:
- ``at`` of a response written as several lines is the earliest line timestamp (the
  moment the response started arriving, i.e. when the cache was touched).
- Requests are ordered by the position of their first line in the file.
- ``context_management.applied_edits`` in a response announces a rebuild without moving
  the alive window: nothing touched the cache between ``prev`` and ``cur``, so the window
  is measured from ``prev.at``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

TTL_S = {"5m": 300.0, "1h": 3600.0}
# 0.95 as a fraction: the comparison is exact, not subject to float rounding.
HIT_SHARE = (95, 100)
MIN_REPROCESSED = 2000
REBUILD_SUBTYPES = ("compact_boundary", "microcompact_boundary")


@dataclass
class Request:
    key: tuple[str, str | None]
    first_line: int
    at: float
    model: str | None
    input_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int
    cache_creation_1h_tokens: int
    output_tokens: int
    announced: bool = False
    # None: the rebuild does not move the alive window (or nothing was announced).
    announce_at: float | None = None

    @property
    def cached(self) -> int:
        return self.cache_read_tokens + self.cache_creation_tokens

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_creation_tokens

    @property
    def ttl(self) -> str:
        # Transcripts do not log the request's asked TTL, only the split of the write.
        return "1h" if self.cache_creation_1h_tokens > 0 else "5m"


@dataclass
class Stream:
    requests: list[Request] = field(default_factory=list)
    # A rebuild announced after the last request and not consumed by any request.
    pending_announce: bool = False


@dataclass
class Entry:
    request: Request
    outcome: str
    ttl: str


def parse_time(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def read_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) of every line that parses as a JSON object."""
    out: list[tuple[int, dict[str, Any]]] = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append((lineno, obj))
    return out


def all_sidechain(path: Path) -> bool:
    """Every line that says is a sidechain line: a subagent's own file."""
    flags = [o["isSidechain"] for _, o in read_lines(path) if "isSidechain" in o]
    return bool(flags) and all(f is True for f in flags)


def read_stream(path: Path, *, main_only: bool) -> Stream:
    """Requests of one stream: ``main_only`` keeps the ``isSidechain: false`` lines of a
    session file; otherwise (a subagent file) every line of the file belongs to it."""
    lines = read_lines(path)
    if main_only:
        lines = [(n, o) for n, o in lines if o.get("isSidechain") is not True]
    return build_stream(lines)


def read_inline_sidechains(path: Path) -> dict[str, Stream]:
    """1.0.x files keep subagent lines inline with ``isSidechain: true``: one stream per
    sidechain chain, named by the uuid of its first line (the one whose parent is not a
    sidechain line). A sidechain copy of a main-stream response is the parent's, not its."""
    lines = read_lines(path)
    by_uuid = {o["uuid"]: o for _, o in lines if isinstance(o.get("uuid"), str)}

    def root(obj: dict[str, Any]) -> str:
        seen: set[str] = set()
        while True:
            parent = by_uuid.get(obj.get("parentUuid"))  # type: ignore[arg-type]
            if parent is None or parent.get("isSidechain") is not True or obj["uuid"] in seen:
                return str(obj["uuid"])
            seen.add(obj["uuid"])
            obj = parent

    main_keys = {
        r.key
        for r in build_stream(
            [(n, o) for n, o in lines if o.get("isSidechain") is not True]
        ).requests
    }
    chains: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for n, o in lines:
        if o.get("isSidechain") is True and isinstance(o.get("uuid"), str):
            chains.setdefault(root(o), []).append((n, o))
    streams = {uuid: build_stream(chain, skip=main_keys) for uuid, chain in chains.items()}
    return {uuid: s for uuid, s in streams.items() if s.requests}


def build_stream(
    lines: list[tuple[int, dict[str, Any]]],
    skip: set[tuple[str, str | None]] | None = None,
) -> Stream:
    """One stream's requests from its lines, in file order (``skip``: keys owned elsewhere)."""
    groups: dict[tuple[str, str | None], Request] = {}
    order: list[tuple[str, str | None]] = []
    announce: float | None = None
    announced = False
    for lineno, obj in lines:
        kind = obj.get("type")
        at = parse_time(obj.get("timestamp"))
        # Claude Code 1.0.x wrote no boundary: its compaction is the summary line that
        # starts a new chain (later versions point that line at their boundary).
        old_compaction = (
            kind == "user" and obj.get("isCompactSummary") is True and obj.get("parentUuid") is None
        )
        if (kind == "system" and obj.get("subtype") in REBUILD_SUBTYPES) or old_compaction:
            announced = True
            if at is not None:
                announce = at if announce is None else max(announce, at)
            continue
        if kind != "assistant" or obj.get("isApiErrorMessage") is True:
            continue
        msg = obj.get("message")
        if not isinstance(msg, dict) or msg.get("model") == "<synthetic>":
            continue
        usage = msg.get("usage")
        if not isinstance(usage, dict) or at is None:
            continue
        mid = msg.get("id")
        rid = obj.get("requestId")
        key = (
            mid if isinstance(mid, str) else f"line:{lineno}",
            rid if isinstance(rid, str) else None,
        )
        if skip is not None and key in skip:
            continue
        out = _int(usage.get("output_tokens"))
        known = groups.get(key)
        if known is not None:
            known.output_tokens = max(known.output_tokens, out)
            known.at = min(known.at, at)
            continue
        split = usage.get("cache_creation")
        c1h = _int(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0
        req = Request(
            key=key,
            first_line=lineno,
            at=at,
            model=msg.get("model") if isinstance(msg.get("model"), str) else None,
            input_tokens=_int(usage.get("input_tokens")),
            cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
            cache_creation_tokens=_int(usage.get("cache_creation_input_tokens")),
            cache_creation_1h_tokens=c1h,
            output_tokens=out,
        )
        cm = msg.get("context_management")
        edits = cm.get("applied_edits") if isinstance(cm, dict) else None
        if announced:
            req.announced, req.announce_at = True, announce
        elif isinstance(edits, list) and edits:
            req.announced = True
        announced, announce = False, None
        groups[key] = req
        order.append(key)
    return Stream([groups[k] for k in order], pending_announce=announced)


def classify(requests: list[Request]) -> list[Entry]:
    """Outcome and TTL in force of every request, prompt-cache.md §2."""
    entries: list[Entry] = []
    seen_cache = False
    for i, cur in enumerate(requests):
        prev = requests[i - 1] if i else None
        if prev is None:
            outcome = "cold"
        elif not seen_cache and cur.cached == 0:
            outcome = "uncached"
        elif prev.cached == 0 and cur.cached > 0:
            outcome = "cold"
        else:
            most = min(prev.total, cur.total)
            reprocessed = most - cur.cache_read_tokens
            num, den = HIT_SHARE
            if cur.cache_read_tokens * den < num * most and reprocessed >= MIN_REPROCESSED:
                since = prev.at if cur.announce_at is None else max(prev.at, cur.announce_at)
                alive = cur.at - since < TTL_S[entries[-1].ttl]
                outcome = "expected" if cur.announced and alive else "miss"
            else:
                outcome = "hit"
        # A request that writes nothing keeps the entry it read, with that entry's TTL.
        ttl = entries[-1].ttl if cur.cache_creation_tokens == 0 and entries else cur.ttl
        entries.append(Entry(cur, outcome, ttl))
        seen_cache = seen_cache or cur.cached > 0
    return entries


def summarize(stream: Stream, now: float) -> dict[str, Any]:
    """The ``prompt_cache`` object of prompt-cache.md §3, with ``hits`` and ``cold_starts``."""
    entries = classify(stream.requests)
    reqs = stream.requests
    read = sum(r.cache_read_tokens for r in reqs)
    denom = sum(r.total for r in reqs)
    misses = [e for e in entries if e.outcome == "miss"]
    last = entries[-1] if entries else None
    last_cached = last is not None and last.request.cached > 0
    expires = last.request.at + TTL_S[last.ttl] if last is not None and last_cached else None
    return {
        # Spelled as in the spec: `now - last_activity < ttl` (last_activity: the last `at`).
        "warm": last is not None and last_cached and now - last.request.at < TTL_S[last.ttl],
        "caching_observed": any(r.cached > 0 for r in reqs),
        "ttl": last.ttl if last is not None else None,
        "expires_at": expires,
        "requests": len(reqs),
        "misses": len(misses),
        "expected_rebuilds": sum(e.outcome == "expected" for e in entries),
        "hit_ratio": read / denom if denom else None,
        "cache_write_tokens": sum(r.cache_creation_tokens for r in reqs),
        "miss_recache_tokens": sum(e.request.cache_creation_tokens for e in misses),
        "last_miss_at": misses[-1].request.at if misses else None,
        "recache_tokens_if_cold": (
            None if last is None or stream.pending_announce else last.request.total
        ),
        "hits": sum(e.outcome == "hit" for e in entries),
        "cold_starts": sum(e.outcome == "cold" for e in entries),
    }


def read_totals(paths: list[Path]) -> dict[str, int]:
    """Token totals over every line of the given files, one count per API response.

    A response seen on a main-stream line and again on a sidechain line (a ``/btw`` replay)
    counts once, from the parent copy."""
    best: dict[tuple[str, str | None], tuple[bool, dict[str, int]]] = {}
    for path in paths:
        lines = read_lines(path)
        for stream_main in (True, False):
            for lineno, obj in lines:
                if obj.get("type") != "assistant":
                    continue
                if (obj.get("isSidechain") is True) == stream_main:
                    continue
                msg = obj.get("message")
                if obj.get("isApiErrorMessage") is True or not isinstance(msg, dict):
                    continue
                usage = msg.get("usage")
                if msg.get("model") == "<synthetic>" or not isinstance(usage, dict):
                    continue
                mid, rid = msg.get("id"), obj.get("requestId")
                key = (
                    mid if isinstance(mid, str) else f"{path}:{lineno}",
                    rid if isinstance(rid, str) else None,
                )
                tokens = {
                    "input_tokens": _int(usage.get("input_tokens")),
                    "cache_read_tokens": _int(usage.get("cache_read_input_tokens")),
                    "cache_creation_tokens": _int(usage.get("cache_creation_input_tokens")),
                    "output_tokens": _int(usage.get("output_tokens")),
                }
                known = best.get(key)
                if known is None:
                    best[key] = (stream_main, tokens)
                elif known[0] == stream_main:
                    known[1]["output_tokens"] = max(
                        known[1]["output_tokens"], tokens["output_tokens"]
                    )
                # else: a sidechain replay of a parent response; the parent copy stays.
    totals = {"requests": len(best)}
    for name in ("input_tokens", "cache_read_tokens", "cache_creation_tokens", "output_tokens"):
        totals[name] = sum(t[name] for _, t in best.values())
    return totals
