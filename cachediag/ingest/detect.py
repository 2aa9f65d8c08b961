"""The detect stage (``ingest.stages``): format detection from content, never from file
names, the one place that decides; and, for a transcript, the needles its scan needs."""

from __future__ import annotations

from collections.abc import Iterable

from cachediag.errors import NotALogError
from cachediag.ingest.jsonl import OVERLONG, BadLine, JsonObject, parse_line
from cachediag.ingest.native import PICKER
from cachediag.ingest.needles import SPACED_SIDECHAIN, WANTED, chain_needles, needles_for
from cachediag.ingest.stages import SESSION, TYPE, UUID, Detected, Sniffed
from cachediag.ingest.stages import SNIFF_LINES as SNIFF_LINES
from cachediag.ingest.stages import SSE_STARTS as SSE_STARTS

CLAUDE_CODE = "claude-code"
API_CAPTURE = "api-capture"
API_USAGE = "api-usage"
SSE_TEXT = "sse-text"
RECORDS = "cachediag-records"
OTEL = "claude-code-otel"
CODEX = "codex-rollout"
"""``ingest.codex.FORMAT``: a Codex CLI rollout under any name."""
GEMINI = "gemini-cli"
"""``ingest.gemini.FORMAT``: a Gemini CLI chat file under any name."""
_CODEX_TYPES = frozenset(
    {"session_meta", "turn_context", "world_state", "response_item", "event_msg", "compacted"}
)
_TRANSCRIPT_KEYS = ("sessionId", "uuid", "leafUuid", "messageId")


def looks_like_transcript(obj: JsonObject) -> bool:
    return isinstance(obj.get("type"), str) and any(k in obj for k in _TRANSCRIPT_KEYS)


def looks_like_record(obj: JsonObject) -> bool:
    """cachediag's own normalised record or event (``ingest.records``)."""
    if ("event" in obj or "failure" in obj) and "at" in obj and "usage" not in obj:
        return True
    return "at" in obj and "cache_read_tokens" in obj and "cache_creation_tokens" in obj


def looks_like_rollout(obj: JsonObject) -> bool:
    """A line of a Codex CLI rollout: ``{"timestamp", "type", "payload": {...}}``."""
    return obj.get("type") in _CODEX_TYPES and isinstance(obj.get("payload"), dict)


def looks_like_gemini_chat(obj: JsonObject) -> bool:
    """The first line of a Gemini CLI chat file (its session's header)."""
    return "projectHash" in obj and isinstance(obj.get("sessionId"), str)


def _request_log_format(objects: list[JsonObject]) -> str | None:
    from cachediag.ingest.capture import looks_like_capture
    from cachediag.ingest.otel import looks_like_otel
    from cachediag.ingest.usage import looks_like_usage

    for check, name in (
        (looks_like_otel, OTEL),
        (looks_like_capture, API_CAPTURE),
        (looks_like_record, RECORDS),
        (looks_like_usage, API_USAGE),
        (looks_like_rollout, CODEX),
        (looks_like_gemini_chat, GEMINI),
    ):
        if any(check(o) for o in objects):
            return name
    return None


def detect_format(head: Iterable[bytes], source: str) -> str:
    """Name the format of a log from its first lines, or say why it is not a log.

    The lines are looked at twice: first as bytes (binary data, an event stream, how many
    lines count), then parsed one at a time only until one is a transcript line, which
    decides; a Claude Code file is then known from its first line, not its first 20.
    """
    sniffed: list[bytes] = []
    seen = 0
    for raw in head:
        if raw is OVERLONG:  # read past, never held: a bad line, whatever it held
            seen += 1
            continue
        if b"\x00" in raw:
            raise NotALogError(f"{source}: binary data, not a JSON Lines log")
        if not raw or raw.isspace():  # as ``not raw.strip()``, without copying the line
            continue
        seen += 1
        if raw.startswith(SSE_STARTS):
            return SSE_TEXT
        sniffed.append(raw)
        if seen >= SNIFF_LINES:
            break
    if seen == 0:
        hint = " (nothing was piped in; pass a path instead)" if source == "-" else ""
        raise NotALogError(f"{source}: empty, no log lines{hint}")
    objects: list[JsonObject] = []
    for raw in sniffed:
        try:
            obj = parse_line(raw)
        except BadLine:
            continue
        if looks_like_transcript(obj):
            return CLAUDE_CODE
        objects.append(obj)
    if not objects:
        where = "line 1 is not" if seen == 1 else f"none of the first {seen} lines is"
        raise NotALogError(f"{source}: {where} a JSON object; expected JSON Lines")
    found = _request_log_format(objects)
    if found is not None:
        return found
    raise NotALogError(
        f"{source}: JSON, but not a log cachediag reads (no Claude Code transcript lines, "
        f"API request/response records, API responses with usage, OpenTelemetry exports, "
        f"Codex or Gemini CLI sessions or cachediag records in the first {seen} lines)"
    )


def detect(sniffed: Sniffed, follow_chains: bool = True) -> Detected:
    """The format of a sniffed input, or why it is not a log, and the needles to scan it
    for (``follow_chains``: its inline sidechains are to be linked, as a main file's or
    stdin's are; an agent file's are not)."""
    try:
        fmt = _format_of(sniffed)
    except NotALogError as exc:
        return Detected(sniffed, None, exc)
    return Detected(sniffed, fmt, None, _needles(sniffed, follow_chains))


def _format_of(sniffed: Sniffed) -> str:
    if sniffed.data is None:
        return detect_format(sniffed.head, sniffed.source)
    block = sniffed.block
    if sniffed.plain and _transcript_first(block):
        return CLAUDE_CODE
    # Anything unusual is looked at line by line, as a stream's first lines are.
    return detect_format(_lines_of(block), sniffed.source)


def _needles(sniffed: Sniffed, follow_chains: bool) -> tuple[bytes, ...]:
    """``needles.needles_for`` of the first lines (sniff found a whole file's versions)."""
    if sniffed.data is None:
        return needles_for(sniffed.head, follow_chains)
    if not follow_chains or sniffed.v2:
        return WANTED
    return chain_needles(SPACED_SIDECHAIN in sniffed.block)


def _transcript_first(block: bytes) -> bool:
    """True when the block's first line is a transcript line (it decides the format)."""
    first = block[: block.find(b"\n") + 1 or len(block)]
    if not first or first.isspace():
        return False
    if PICKER is not None:  # picks a few fields where orjson would build every one
        # A JSON object whose type is a string, with a uuid or session id (strings), is
        # a transcript line; a line with neither needs the whole object to tell.
        fields = PICKER(first)
        if fields is not None and fields[TYPE] is not None and (fields[UUID] or fields[SESSION]):
            return True
    try:
        return looks_like_transcript(parse_line(first))
    except BadLine:
        return False


def _lines_of(block: bytes) -> list[bytes]:
    """The lines of ``block``, each with its newline, as ``sniff.peek`` reads them."""
    lines = block.split(b"\n")
    last = lines.pop()
    return [line + b"\n" for line in lines] + ([last] if last else [])
