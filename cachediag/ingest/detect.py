"""Format detection from content, never from file names: the one place that decides."""

from __future__ import annotations

from collections.abc import Iterable

from cachediag.errors import NotALogError
from cachediag.ingest.lines import BadLine, JsonObject, parse_line

SNIFF_LINES = 20
CLAUDE_CODE = "claude-code"

_TRANSCRIPT_KEYS = ("sessionId", "uuid", "leafUuid", "messageId")


def looks_like_transcript(obj: JsonObject) -> bool:
    return isinstance(obj.get("type"), str) and any(k in obj for k in _TRANSCRIPT_KEYS)


def detect_format(head: Iterable[bytes], source: str) -> str:
    """Name the format of a log from its first lines, or say why it is not a log."""
    objects: list[JsonObject] = []
    bad = seen = 0
    for raw in head:
        if b"\x00" in raw:
            raise NotALogError(f"{source}: binary data, not a JSON Lines log")
        if not raw.strip():
            continue
        seen += 1
        try:
            objects.append(parse_line(raw))
        except BadLine:
            bad += 1
        if seen >= SNIFF_LINES:
            break
    if seen == 0:
        raise NotALogError(f"{source}: empty, no log lines")
    if not objects:
        raise NotALogError(f"{source}: line 1 is not a JSON object; expected JSON Lines")
    if any(looks_like_transcript(o) for o in objects):
        return CLAUDE_CODE
    raise NotALogError(
        f"{source}: JSON, but not a log cachediag reads (no Claude Code transcript lines "
        f"with 'type' and 'sessionId' in the first {seen} lines)"
    )
