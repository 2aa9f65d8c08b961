"""What every Anthropic-format reader shares: usage, timestamps, server-reported reasons."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cachediag.ingest.jsonl import BadLine, JsonObject
from cachediag.model import RequestRecord, ServerReason, Ttl

LATEST_EPOCH_S = 253_402_300_799.0
"""9999-12-31T23:59:59Z: later times cannot be printed or priced, so they are bad input."""
MAX_TOKENS = 10**9
"""No request comes near a billion tokens; a larger count is a corrupt line."""


def parse_timestamp(value: Any) -> float:
    if isinstance(value, str):  # what transcripts write: tested first
        try:
            at = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError) as exc:
            raise BadLine("timestamp is not ISO 8601") from exc
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        # Some producers write epoch milliseconds.
        at = float(value) / 1000.0 if value > 1e11 else float(value)
    else:
        raise BadLine("missing or non-string timestamp")
    if not 0.0 <= at <= LATEST_EPOCH_S:
        raise BadLine("timestamp out of range")
    return at


def token_count(usage: JsonObject, key: str, default: int | None = 0) -> int | None:
    return count_of(usage.get(key), key, default)


def count_of(value: Any, key: str, default: int | None = 0) -> int | None:
    """``value`` as the token count ``key`` (``default`` when missing or null); raises
    ``BadLine`` for anything else than a non-negative integer in range."""
    if type(value) is int and 0 <= value <= MAX_TOKENS:  # the usual case first: hot path
        return value
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadLine(f"usage.{key} is not a number")
    if value > MAX_TOKENS:  # before int(): an infinite float cannot be converted
        raise BadLine(f"usage.{key} is implausibly large")
    if value != value or value < 0 or value != int(value):  # NaN, negative, fractional
        raise BadLine(f"usage.{key} is not a non-negative integer")
    return int(value)


ReasonCode = tuple[str | None, Any] | bool | None
"""What a message's ``diagnostics`` say, as the line picker (``_fields.c``) gives it too:
``None`` without diagnostics, ``False`` when they name no usable reason, else ``(type,
missed)`` for ``ServerReason(type, missed)``."""


def reason_code(message: JsonObject) -> ReasonCode:
    if "diagnostics" not in message:
        return None
    diagnostics = message.get("diagnostics")
    if diagnostics is None:
        return (None, None)
    if not isinstance(diagnostics, dict):
        return False
    reason = diagnostics.get("cache_miss_reason")
    if reason is None:
        return (None, None)
    if not isinstance(reason, dict) or not isinstance(reason.get("type"), str):
        return False
    missed = reason.get("cache_missed_input_tokens")
    return (reason["type"], missed if isinstance(missed, int) else None)


def reason_of(code: ReasonCode) -> ServerReason | None:
    if not isinstance(code, tuple):
        return None
    return ServerReason(type=code[0], missed_tokens=code[1])


def server_reason(message: JsonObject) -> ServerReason | None:
    return reason_of(reason_code(message))


UsageCounts = tuple[int, int, int, int, int | None, int | None]
"""(input, cache read, cache creation, output, creation 5m, creation 1h) tokens."""


UsageFields = tuple[Any, Any, Any, Any, tuple[Any, Any] | None]
"""The raw values of a ``usage`` object's counts: input, cache read, cache creation,
output, and its ``cache_creation`` split (5m, 1h), ``None`` when that is not an object."""


def usage_fields(usage: JsonObject) -> UsageFields:
    split = usage.get("cache_creation")
    return (
        usage.get("input_tokens"),
        usage.get("cache_read_input_tokens"),
        usage.get("cache_creation_input_tokens"),
        usage.get("output_tokens"),
        (split.get("ephemeral_5m_input_tokens"), split.get("ephemeral_1h_input_tokens"))
        if isinstance(split, dict)
        else None,
    )


def usage_counts(usage: JsonObject) -> UsageCounts:
    """The token counts of an Anthropic ``usage`` object; the 5m/1h split is ``None``
    when the object has none. Raises ``BadLine`` for the first bad count."""
    return counts_of(usage_fields(usage))


def counts_of(fields: UsageFields) -> UsageCounts:
    """``usage_counts`` of a usage object's raw values."""
    inp, read, creation, out, split = fields
    # Nearly every line has four plain counts in range: checked at once, nothing can
    # raise, so the order of the checks below does not matter for them.
    if (
        type(inp) is int
        and type(read) is int
        and type(creation) is int
        and type(out) is int
        and 0 <= inp <= MAX_TOKENS
        and 0 <= read <= MAX_TOKENS
        and 0 <= creation <= MAX_TOKENS
        and 0 <= out <= MAX_TOKENS
    ):
        if split is None:
            return inp, read, creation, out, None, None
        c5m, c1h = split
        if (
            type(c5m) is int
            and type(c1h) is int
            and 0 <= c5m <= MAX_TOKENS
            and 0 <= c1h <= MAX_TOKENS
        ):
            return inp, read, creation, out, c5m, c1h
    return _checked_counts(fields)


def _checked_counts(fields: UsageFields) -> UsageCounts:
    # One count at a time, in the order that decides which bad count a line is blamed on.
    inp, read, creation, out, split = fields
    creation = count_of(creation, "cache_creation_input_tokens") or 0
    c5m = c1h = None
    if split is not None:
        c5m = count_of(split[0], "ephemeral_5m_input_tokens")
        c1h = count_of(split[1], "ephemeral_1h_input_tokens")
    inp = count_of(inp, "input_tokens") or 0
    read = count_of(read, "cache_read_input_tokens") or 0
    out = count_of(out, "output_tokens") or 0
    return inp, read, creation, out, c5m, c1h


def usage_record(
    usage: JsonObject, at: float, *, stream: str, line: int | None = None, **extra: Any
) -> RequestRecord:
    """An Anthropic ``usage`` object -> a normalised record (shared by every Anthropic reader)."""
    inp, read, creation, out, c5m, c1h = usage_counts(usage)
    return RequestRecord(
        at=at,
        input_tokens=inp,
        cache_read_tokens=read,
        cache_creation_tokens=creation,
        output_tokens=out,
        ttl=ttl_of(c1h),
        cache_creation_5m_tokens=c5m,
        cache_creation_1h_tokens=c1h,
        stream=stream,
        line=line,
        **extra,
    )


def ttl_of(creation_1h: int | None) -> Ttl:
    """A request that wrote anything at the 1h TTL left a 1h entry."""
    return "1h" if (creation_1h or 0) > 0 else "5m"


def applied_edits(message: JsonObject) -> int:
    """Entries of the response's ``context_management.applied_edits``: the API cleared old
    content itself, so the next rebuild of the prompt was announced, not a miss."""
    cm = message.get("context_management")
    edits = cm.get("applied_edits") if isinstance(cm, dict) else None
    return len(edits) if isinstance(edits, list) else 0
