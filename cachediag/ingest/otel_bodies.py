"""Request and response bodies of Claude Code's OpenTelemetry export (formats.md §5):
inline ``api_request_body`` / ``api_response_body`` events, or the folder that
``OTEL_LOG_RAW_API_BODIES=file:<dir>`` writes with its ``index.jsonl``. Bodies hold
prompt text: each is fingerprinted as it is read and only the fingerprint is kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cachediag.ingest.anthropic import applied_edits, server_reason, token_count
from cachediag.ingest.files import open_found, unreadable_reason
from cachediag.ingest.jsonl import BadLine, iter_objects, parse_line
from cachediag.model import Fingerprint, LineIssue

BODY_INDEX = "index.jsonl"
"""The raw-body folder's index: one line per body, linking ``request_body_id`` to ids."""
_JOIN_KEYS = ("request_body_id", "client_request_id", "request_id", "message.id")


@dataclass(slots=True, frozen=True)
class BodyFacts:
    """What a request or response body said, as fingerprints and counts only."""

    fingerprint: Fingerprint | None = None
    asked_1h: bool = False
    split: tuple[int, int] | None = None
    """(5m, 1h) cache-write tokens from a response body's usage."""
    server_reason: Any = None
    applied_edits: int = 0


def request_body_facts(body: Any) -> BodyFacts:
    from cachediag.ingest.capture import _asked_1h as asked_1h
    from cachediag.ingest.fingerprint import fingerprint_request

    if isinstance(body, str | bytes):
        body = parse_line(body.encode() if isinstance(body, str) else body)
    if not isinstance(body, dict):
        raise BadLine("request body is not a JSON object")
    fingerprint = dataclasses.replace(fingerprint_request(body, ()), joined=True)
    return BodyFacts(fingerprint=fingerprint, asked_1h=asked_1h(body))


def response_body_facts(body: Any) -> BodyFacts:
    if isinstance(body, str) and "data:" in body[:200]:
        from cachediag.ingest.capture import parse_sse

        body, _ = parse_sse(body)
    elif isinstance(body, str | bytes):
        body = parse_line(body.encode() if isinstance(body, str) else body)
    if not isinstance(body, dict):
        raise BadLine("response body is not a JSON object")
    usage = body.get("usage")
    split = None
    if isinstance(usage, dict) and isinstance(usage.get("cache_creation"), dict):
        cc = usage["cache_creation"]
        split = (
            token_count(cc, "ephemeral_5m_input_tokens") or 0,
            token_count(cc, "ephemeral_1h_input_tokens") or 0,
        )
    return BodyFacts(
        split=split, server_reason=server_reason(body), applied_edits=applied_edits(body)
    )


@dataclass(slots=True)
class BodyIndex:
    """Bodies found so far, by every id that can join them to a request.

    Files of a raw-bodies folder are read only when a request asks for them.
    """

    facts: dict[str, BodyFacts] = field(default_factory=dict)
    responses: dict[str, BodyFacts] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    unkeyed: dict[str, list[BodyFacts]] = field(default_factory=dict)
    """Inline request bodies with no id, per session, in order: paired by order."""

    def add(self, attrs: dict[str, Any], facts: BodyFacts, session: str, *, response: bool) -> None:
        keys = [attrs[k] for k in _JOIN_KEYS if isinstance(attrs.get(k), str) and attrs[k]]
        target = self.responses if response else self.facts
        for key in keys:
            target[key] = facts
        if not keys and not response:
            self.unkeyed.setdefault(session, []).append(facts)

    def lookup(
        self, attrs: dict[str, Any], session: str, issues: list[LineIssue]
    ) -> tuple[BodyFacts | None, BodyFacts | None]:
        keys = [attrs[k] for k in _JOIN_KEYS if isinstance(attrs.get(k), str) and attrs[k]]
        request = next((self.facts[k] for k in keys if k in self.facts), None)
        if request is None:
            path = next((self.files[k] for k in keys if k in self.files), None)
            if path is not None:
                request = _read_body_file(path, issues)
                for key in keys:
                    self.files.pop(key, None)
        if request is None and self.unkeyed.get(session):
            request = self.unkeyed[session].pop(0)
        response = next((self.responses[k] for k in keys if k in self.responses), None)
        return request, response


def _read_body_file(path: Path, issues: list[LineIssue]) -> BodyFacts | None:
    try:
        # Never through a link: the index that named it is data, not a path to trust.
        with open_found(path, follow=False) as fp:
            raw = fp.read()
    except OSError as exc:
        issues.append(LineIssue(str(path), 0, f"request body: {unreadable_reason(exc)}"))
        return None
    try:
        return request_body_facts(raw)
    except BadLine as exc:
        issues.append(LineIssue(str(path), 0, str(exc)))
        return None


def body_folders(otel_file: Path) -> list[Path]:
    """Raw-body folders beside an export: ``index.jsonl`` in its folder or one below."""
    folder = otel_file.parent
    found = [folder] if (folder / BODY_INDEX).is_file() else []
    with contextlib.suppress(OSError):
        found += sorted(p.parent for p in folder.glob(f"*/{BODY_INDEX}") if p.is_file())
    return found


def load_body_index(folder: Path, index: BodyIndex, issues: list[LineIssue]) -> None:
    """Lines of ``index.jsonl`` link ``request_body_id`` and ``message.id`` (and any
    other id they carry) to a body file: ``path``/``file`` when given, else
    ``<request_body_id>.json`` in the folder."""
    source = str(folder / BODY_INDEX)
    try:
        with open_found(folder / BODY_INDEX) as fp:
            for number, obj in iter_objects(fp, source, issues):
                body_id = obj.get("request_body_id")
                if not isinstance(body_id, str) or not body_id:
                    issues.append(LineIssue(source, number, "no request_body_id"))
                    continue
                name = obj.get("path", obj.get("file"))
                candidate = folder / (name if isinstance(name, str) else f"{body_id}.json")
                # Never outside the folder: the index is data, not a list of paths to trust.
                if not candidate.resolve().is_relative_to(folder.resolve()):
                    issues.append(LineIssue(source, number, "body path outside the folder"))
                    continue
                for key in (*_JOIN_KEYS, "message_id"):
                    value = obj.get(key)
                    if isinstance(value, str) and value:
                        index.files[value] = candidate
    except OSError as exc:
        issues.append(LineIssue(source, 0, unreadable_reason(exc)))
