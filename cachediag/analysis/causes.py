"""Naming the cause of a miss (prompt-cache.md §4), never claiming more than the log shows."""

from __future__ import annotations

from dataclasses import dataclass, replace

from cachediag.analysis.dimensions import SETTINGS, visibly_changed
from cachediag.analysis.dimensions import Cause as Cause  # declared beside the settings table
from cachediag.model import Fingerprint, RequestRecord, ServerReason

SERVER_REASONS: dict[str, Cause] = {
    # Anthropic ``diagnostics.cache_miss_reason.type``
    "model_changed": Cause.MODEL_CHANGED,
    "system_changed": Cause.SYSTEM_PROMPT_CHANGED,
    "tools_changed": Cause.TOOLS_CHANGED,
    "messages_changed": Cause.MESSAGES_REWRITTEN,
    # OpenAI ``prompt_cache_diagnostics.reason`` (its model/tools spellings are the same)
    "reasoning_effort_changed": Cause.EFFORT_CHANGED,
    "input_changed": Cause.MESSAGES_REWRITTEN,
    "prompt_cache_key_changed": Cause.PROMPT_CACHE_KEY_CHANGED,
    "text_format_changed": Cause.TEXT_FORMAT_CHANGED,
    "verbosity_changed": Cause.VERBOSITY_CHANGED,
    "service_tier_changed": Cause.SERVICE_TIER_CHANGED,
}
SERVER_COMPACTED = "context_compacted"
"""OpenAI's reason for a prefix its own compaction replaced: an announced rebuild."""


@dataclass(slots=True, frozen=True)
class MissEvidence:
    """What the ledger saw around one miss or rebuild; kept for detailed reports."""

    gap_s: float
    ttl_in_force: str
    prev_cached_tokens: int
    """What the previous request left in the cache (its read + creation)."""
    read_tokens: int
    fell_back_to: str
    """``nothing`` (read 0), ``earlier_prefix`` (a shorter prefix survived)."""
    model_before: str | None
    model_after: str | None
    server_reason: str | None = None
    server_missed_tokens: int | None = None
    """What the server said was not reused (Anthropic ``cache_missed_input_tokens``,
    OpenAI ``cache_missed_tokens``)."""
    server_reusable_tokens: int | None = None
    """OpenAI ``comparison_reusable_tokens``: what the baseline could have lent."""


@dataclass(slots=True, frozen=True)
class Diagnosis:
    """Why one request missed (or was rebuilt): its causes and what says so."""

    causes: tuple[Cause, ...]
    source: str
    """``server`` when the API said why, ``capture`` when request content did (bodies or
    fingerprints: a capture log, request logs, joined captures, raw-body telemetry),
    ``inferred`` when usage and timing alone did (TTL by the gap, a model seen in a
    transcript, ``unknown``)."""
    tools_added: tuple[str, ...] | None = None
    tools_removed: tuple[str, ...] | None = None
    tools_changed: tuple[str, ...] | None = None
    system_char_delta: int | None = None
    system_blocks_changed: tuple[int, ...] | None = None
    first_rewritten_message: int | None = None
    first_rewritten_role: str | None = None
    server_causes: tuple[Cause, ...] = ()
    """The causes the API reported itself; the rest of ``causes`` were inferred."""

    @property
    def named(self) -> bool:
        return self.causes != (Cause.UNKNOWN,)


def diff_fingerprints(prev: Fingerprint, cur: Fingerprint) -> Diagnosis:
    """Every dimension that differs between two fully visible requests."""
    causes: list[Cause] = []
    added = removed = changed_tools = None
    delta = None
    blocks = None
    first_msg = None
    first_role = None
    if visibly_changed(prev.system_hashes, cur.system_hashes):
        causes.append(Cause.SYSTEM_PROMPT_CHANGED)
        assert prev.system_hashes is not None and cur.system_hashes is not None
        n = max(len(prev.system_hashes), len(cur.system_hashes))
        blocks = tuple(
            i
            for i in range(n)
            if i >= len(prev.system_hashes)
            or i >= len(cur.system_hashes)
            or prev.system_hashes[i] != cur.system_hashes[i]
        )
        if prev.system_chars is not None and cur.system_chars is not None:
            delta = cur.system_chars - prev.system_chars
    elif visibly_changed(prev.system_cache_control, cur.system_cache_control):
        causes.append(Cause.CACHE_SCOPE_OR_TTL_CHANGED)
    if visibly_changed(prev.tools, cur.tools):
        causes.append(Cause.TOOLS_CHANGED)
        assert prev.tools is not None and cur.tools is not None
        before, after = dict(prev.tools), dict(cur.tools)
        added = tuple(sorted(set(after) - set(before)))
        removed = tuple(sorted(set(before) - set(after)))
        changed_tools = tuple(sorted(n for n in set(before) & set(after) if before[n] != after[n]))
    for setting in SETTINGS:
        if not visibly_changed(getattr(prev, setting.field), getattr(cur, setting.field)):
            continue
        other = setting.yields_to
        if other is None or not visibly_changed(getattr(prev, other), getattr(cur, other)):
            causes.append(setting.cause)
    if prev.message_hashes is not None and cur.message_hashes is not None:
        first_msg = first_rewritten_message(prev.message_hashes, cur.message_hashes)
        if first_msg is not None and routine_rewrite(prev, first_msg) and causes:
            first_msg = None  # what else changed explains the miss
        if first_msg is not None:
            causes.append(Cause.MESSAGES_REWRITTEN)
            roles = cur.message_roles or ()
            first_role = roles[first_msg] if first_msg < len(roles) else None
    return Diagnosis(
        causes=tuple(causes),
        source="capture",
        tools_added=added,
        tools_removed=removed,
        tools_changed=changed_tools,
        system_char_delta=delta,
        system_blocks_changed=blocks,
        first_rewritten_message=first_msg,
        first_rewritten_role=first_role,
    )


def routine_rewrite(prev: Fingerprint, first: int) -> bool:
    """Whether the rewrite from message ``first`` on touches only ``prev``'s trailing
    ``system``-role messages: Claude Code (2.1.2xx+) appends one to every request and
    replaces it on the next, so it is no cause while another one (or the clock) explains
    the miss."""
    roles = prev.message_roles
    if roles is None or prev.message_hashes is None or len(roles) != len(prev.message_hashes):
        return False
    return first < len(roles) and all(role == "system" for role in roles[first:])


def first_rewritten_message(prev: tuple[str, ...], cur: tuple[str, ...]) -> int | None:
    """First index inside ``prev``'s list that now differs (or is gone); ``None`` when
    ``cur`` extends ``prev`` unchanged: a conversation that simply grows is not a rewrite.
    (Hashes are of content without ``cache_control``, so the breakpoint moving to the
    newest message is no difference.)"""
    for i, h in enumerate(prev):
        if i >= len(cur) or cur[i] != h:
            return i
    return None


_EXPIRY_CAUSES = {
    "30m": Cause.TTL_EXPIRED_30M,
    "1h": Cause.TTL_EXPIRED_1H,
    "24h": Cause.TTL_EXPIRED_24H,
}


def expiry_cause(ttl_in_force: str) -> Cause:
    return _EXPIRY_CAUSES.get(ttl_in_force, Cause.TTL_EXPIRED_5M)


_FALLBACKS = frozenset(
    {
        Cause.TTL_EXPIRED_5M,
        Cause.TTL_EXPIRED_30M,
        Cause.TTL_EXPIRED_1H,
        Cause.TTL_EXPIRED_24H,
        Cause.LIKELY_SERVER_SIDE,
        Cause.UNKNOWN,
    }
)
"""What is said when nothing visibly changed."""


def diagnose_miss(
    prev: RequestRecord, cur: RequestRecord, evidence: MissEvidence, ttl_window_s: float
) -> Diagnosis:
    """Causes of one miss: server word first, then changed dimensions, then the clock."""
    diagnosis = _diagnose(prev, cur, evidence, ttl_window_s)
    if not visibly_changed(prev.provider, cur.provider):
        return diagnosis
    # Another provider behind a router holds none of this conversation's cache: that
    # is a change of its own, and it explains what the clock alone could not.
    kept = tuple(c for c in diagnosis.causes if c not in _FALLBACKS)
    if not kept:
        return Diagnosis(causes=(Cause.PROVIDER_CHANGED,), source="inferred")
    return replace(diagnosis, causes=(*kept, Cause.PROVIDER_CHANGED))


def _diagnose(
    prev: RequestRecord, cur: RequestRecord, evidence: MissEvidence, ttl_window_s: float
) -> Diagnosis:
    server = cur.server_reason
    mapped = None if server is None or server.type is None else SERVER_REASONS.get(server.type)
    if mapped is not None:
        if prev.fingerprint is None or cur.fingerprint is None:
            return Diagnosis(causes=(mapped,), source="server", server_causes=(mapped,))
        # The server's word leads; what the bodies show adds the details (tool names,
        # system deltas) and any other dimension that changed with it.
        seen = diff_fingerprints(prev.fingerprint, cur.fingerprint)
        causes = (mapped, *(c for c in seen.causes if c is not mapped))
        return replace(seen, causes=causes, source="server", server_causes=(mapped,))
    expired = evidence.gap_s >= ttl_window_s
    if prev.fingerprint is not None and cur.fingerprint is not None:
        # Request content (bodies in the log, joined to it, or a capture log alone)
        # names what changed with the capture's authority, whatever log carried it.
        diagnosis = diff_fingerprints(prev.fingerprint, cur.fingerprint)
        rewrite = diagnosis.first_rewritten_message
        if (
            expired
            and diagnosis.causes == (Cause.MESSAGES_REWRITTEN,)
            and rewrite is not None
            and routine_rewrite(prev.fingerprint, rewrite)
        ):
            # Only the trailing system message Claude Code replaces on every request
            # changed: the pause explains the miss.
            diagnosis = Diagnosis(causes=(), source="capture")
        if diagnosis.causes:
            return replace(diagnosis, source="capture")
        # The bodies showed nothing changed, which only they can: the clock then names
        # the cause on their evidence (usage and timing alone could not rule the rest out).
        if expired:
            return Diagnosis(causes=(expiry_cause(evidence.ttl_in_force),), source="capture")
        # The server compared the prefix and found no divergence: its word, not a guess.
        said = "server" if server is not None and server.type is None else "capture"
        return Diagnosis(causes=(Cause.LIKELY_SERVER_SIDE,), source=said)
    return _diagnose_from_usage(prev, cur, evidence, expired, server)


def _diagnose_from_usage(
    prev: RequestRecord,
    cur: RequestRecord,
    evidence: MissEvidence,
    expired: bool,
    server: ServerReason | None,
) -> Diagnosis:
    # Transcripts and usage-only logs see no prompt: only the model, the clock and
    # where the cache read fell back to.
    if visibly_changed(prev.model, cur.model):
        return Diagnosis(causes=(Cause.MODEL_CHANGED,), source="inferred")
    if expired:
        return Diagnosis(causes=(expiry_cause(evidence.ttl_in_force),), source="inferred")
    if server is not None and server.type is None:
        # The server compared the prefix and found no divergence, inside the TTL.
        return Diagnosis(causes=(Cause.LIKELY_SERVER_SIDE,), source="server")
    if evidence.read_tokens > 0:
        # Tools, system and the start of the conversation were still readable, so the
        # cache was alive and the request's own earlier content differed past that point.
        return Diagnosis(causes=(Cause.MESSAGES_REWRITTEN,), source="inferred")
    # A read that falls to zero inside the TTL with the same model cannot tell a tool or
    # system change from a server-side loss.
    return Diagnosis(causes=(Cause.UNKNOWN,), source="inferred")
