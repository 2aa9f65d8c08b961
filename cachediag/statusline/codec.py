"""Ledger and reader state to JSON-able values and back (for ``state``; saved prices
are ``pricing.slots.DayPrices`` data).

The status line keeps the one ledger implementation of ``analysis.ledger`` alive across
runs by saving its fields; nothing here recomputes an outcome.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from cachediag.analysis.causes import Cause, Diagnosis
from cachediag.analysis.ledger import Ledger
from cachediag.ingest.transcript import TranscriptReader
from cachediag.model import Fingerprint, RebuildKind, RequestRecord, ServerReason

UNSEEN_INDEX = 1 << 62
"""Restored dedup keys point past any stream's items: the items are not kept between
runs, so a late copy of an old response has nothing to update (and must not update an
unrelated new item)."""


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _tuples(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def record_to_state(record: RequestRecord) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(record):
        value = getattr(record, f.name)
        if isinstance(value, Fingerprint):
            value = {g.name: _plain(getattr(value, g.name)) for g in fields(value)}
        elif isinstance(value, ServerReason):
            value = {"type": value.type, "missed_tokens": value.missed_tokens}
        out[f.name] = value
    return out


def record_from_state(data: dict[str, Any]) -> RequestRecord:
    values = dict(data)
    fp = values.get("fingerprint")
    if fp is not None:
        values["fingerprint"] = Fingerprint(**{k: _tuples(v) for k, v in fp.items()})
    reason = values.get("server_reason")
    if reason is not None:
        values["server_reason"] = ServerReason(**reason)
    return RequestRecord(**values)


def _diagnosis_to_state(d: Diagnosis) -> dict[str, Any]:
    out = {f.name: _plain(getattr(d, f.name)) for f in fields(d)}
    out["causes"] = [c.value for c in d.causes]
    return out


def _diagnosis_from_state(data: dict[str, Any]) -> Diagnosis:
    values = {k: _tuples(v) for k, v in data.items()}
    values["causes"] = tuple(Cause(c) for c in data["causes"])
    return Diagnosis(**values)


def ledger_to_state(ledger: Ledger) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(ledger):
        value = getattr(ledger, f.name)
        if isinstance(value, RequestRecord):
            value = record_to_state(value)
        elif isinstance(value, Diagnosis):
            value = _diagnosis_to_state(value)
        elif isinstance(value, RebuildKind):
            value = value.value
        elif isinstance(value, dict):
            value = dict(value)
        out[f.name] = value
    return out


def ledger_from_state(data: dict[str, Any]) -> Ledger:
    values = dict(data)
    if values.get("prev") is not None:
        values["prev"] = record_from_state(values["prev"])
    if values.get("last_miss") is not None:
        values["last_miss"] = _diagnosis_from_state(values["last_miss"])
    if values.get("pending_kind") is not None:
        values["pending_kind"] = RebuildKind(values["pending_kind"])
    return Ledger(**values)


def reader_to_state(reader: TranscriptReader) -> dict[str, Any]:
    """The reader's dedup keys as ``{stream: [message_id, request_id, ...]}``: flat lists,
    because a long session has tens of thousands of them and this is read on every run
    that has new lines."""
    seen: dict[str, list[str | None]] = {}
    for (message_id, request_id), (stream, _) in reader.seen.items():
        seen.setdefault(stream, []).extend((message_id, request_id))
    return {"seen": seen, "sidechain_roots": reader.sidechain_roots}


def restore_reader(reader: TranscriptReader, data: dict[str, Any]) -> None:
    reader.seen = {}
    for stream, flat in data.get("seen", {}).items():
        pairs = iter(flat)
        reader.seen.update(dict.fromkeys(zip(pairs, pairs, strict=True), (stream, UNSEEN_INDEX)))
    reader.sidechain_roots = dict(data.get("sidechain_roots", {}))
