"""``cachediag watch --json``: one JSON object per event (JSON Lines).

Plain dicts, like ``report.serialize`` (whose request fields a request event reuses);
``report.watch_contract`` documents them as pydantic models and gives the JSON Schema.
"""

from __future__ import annotations

from typing import Any

from cachediag.follow.events import (
    FileReset,
    RebuildSeen,
    RequestSeen,
    SessionRef,
    SessionSeen,
    StreamSeen,
    Tally,
    WatchEvent,
)
from cachediag.report.serialize import request_dict


def _session(kind: str, ref: SessionRef, at: float) -> dict[str, Any]:
    return {
        "event": kind,
        "at": at,
        "session_id": ref.session_id,
        "project": ref.project,
        "transcript": ref.transcript,
        "agent": ref.agent or "claude",
    }


def event_dict(event: WatchEvent) -> dict[str, Any]:
    if isinstance(event, RequestSeen):
        entry = event.entry
        out = _session("request", event.session, entry.record.at)
        out["stream"] = entry.record.stream
        out["stream_kind"] = event.kind.value
        out.update(request_dict(entry))
        out["cost_usd"] = event.cost.cost_usd
        out["miss_cost_usd"] = event.cost.miss_cost_usd
        return out
    if isinstance(event, RebuildSeen):
        out = _session("rebuild", event.session, event.event.at)
        out.update(stream=event.event.stream, kind=event.event.kind.value, line=event.event.line)
        return out
    if isinstance(event, SessionSeen):
        out = _session("session", event.session, event.at)
        out["new"] = event.new
        return out
    if isinstance(event, StreamSeen):
        out = _session("stream", event.session, event.at)
        out.update(stream=event.stream, stream_kind=event.kind.value, source=event.source)
        return out
    if isinstance(event, FileReset):
        out = _session("reset", event.session, event.at)
        out.update(path=event.path, reason=event.reason)
        return out
    out = _session("removed", event.session, event.at)
    out["path"] = event.path
    return out


def summary_dict(tally: Tally, at: float) -> dict[str, Any]:
    out = _session("summary", tally.session, at)
    out.update(
        requests=tally.requests,
        outcomes=dict(sorted(tally.outcomes.items())),
        hit_ratio=tally.hit_ratio,
        reprocessed_tokens=tally.reprocessed_tokens,
        miss_cost_usd=round(tally.miss_cost_usd, 6),
        unpriced_requests=tally.unpriced_requests,
        miss_causes=dict(sorted(tally.miss_causes.items())),
        streams=sorted(tally.streams),
        compactions=tally.compactions,
    )
    return out
