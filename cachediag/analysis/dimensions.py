"""What a miss can be named after: the causes, and the request settings that name them.

``SETTINGS`` is the one declaration of the fingerprint fields that are settings of a
request (model, effort, betas...): the cause each one's change names
(``causes.diff_fingerprints``) and the label ``explain`` shows it under. The rest of the
fingerprint is the prompt itself (system, tools, messages), compared by hand in
``causes`` because those causes carry details; ``NOT_SETTINGS`` lists them, so that
every field of ``Fingerprint`` is declared here exactly once (tests/test_settings_table.py).

``Cause`` lives here, not in ``causes``, only so the table can name causes without an
import cycle; ``causes`` re-exports it and stays the place to import it from.
Pure, standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Cause(StrEnum):
    SYSTEM_PROMPT_CHANGED = "system_prompt_changed"
    TOOLS_CHANGED = "tools_changed"
    MODEL_CHANGED = "model_changed"
    FAST_MODE_CHANGED = "fast_mode_changed"
    CACHE_SCOPE_OR_TTL_CHANGED = "cache_scope_or_ttl_changed"
    BETAS_CHANGED = "betas_changed"
    EFFORT_CHANGED = "effort_changed"
    THINKING_MODE_CHANGED = "thinking_mode_changed"
    THINKING_DISPLAY_CHANGED = "thinking_display_changed"
    AUTO_MODE_CHANGED = "auto_mode_changed"
    OVERAGE_CHANGED = "overage_changed"
    EXTRA_BODY_CHANGED = "extra_body_changed"
    DEFER_LOADING_CHANGED = "defer_loading_changed"
    MESSAGES_REWRITTEN = "messages_rewritten"
    PROMPT_CACHE_KEY_CHANGED = "prompt_cache_key_changed"
    TEXT_FORMAT_CHANGED = "text_format_changed"
    VERBOSITY_CHANGED = "verbosity_changed"
    SERVICE_TIER_CHANGED = "service_tier_changed"
    PROVIDER_CHANGED = "provider_changed"
    TTL_EXPIRED_5M = "ttl_expired_5m"
    TTL_EXPIRED_30M = "ttl_expired_30m"
    TTL_EXPIRED_1H = "ttl_expired_1h"
    TTL_EXPIRED_24H = "ttl_expired_24h"
    LIKELY_SERVER_SIDE = "likely_server_side"
    UNKNOWN = "unknown"


def visibly_changed(before: object, after: object) -> bool:
    """Whether a value visibly changed: one the log did not show (``None``) is no change,
    since no cause may be derived from what was not seen."""
    return before is not None and after is not None and before != after


@dataclass(slots=True, frozen=True)
class Setting:
    """One fingerprint field that is a setting of the request."""

    field: str
    """The ``Fingerprint`` attribute."""
    cause: Cause
    """What a change of it names."""
    label: str | None
    """What ``explain`` shows it as (``label: before -> after``, the key of its JSON
    ``changes``); ``None``: explain shows it its own way (betas added and removed, a
    flag for the extra body), not as a before -> after pair."""
    shown_at: int | None = None
    """Its place among explain's settings, which keep their own order (model, effort and
    thinking first); set exactly when ``label`` is."""
    yields_to: str | None = None
    """Another setting whose change, when it changed too, names the miss instead: the
    thinking display follows the thinking mode. Explain still shows both."""


SETTINGS: tuple[Setting, ...] = (
    # In the order their causes are named (the order of a diagnosis's causes).
    Setting("model", Cause.MODEL_CHANGED, "model", 0),
    Setting("fast_mode", Cause.FAST_MODE_CHANGED, "fast_mode", 4),
    Setting("betas", Cause.BETAS_CHANGED, None),
    Setting("effort", Cause.EFFORT_CHANGED, "effort", 1),
    Setting("auto_mode", Cause.AUTO_MODE_CHANGED, "auto_mode", 5),
    Setting("overage", Cause.OVERAGE_CHANGED, "overage", 6),
    Setting("prompt_cache_key", Cause.PROMPT_CACHE_KEY_CHANGED, "prompt_cache_key", 8),
    Setting("text_format", Cause.TEXT_FORMAT_CHANGED, "text_format", 9),
    Setting("verbosity", Cause.VERBOSITY_CHANGED, "verbosity", 10),
    Setting("service_tier", Cause.SERVICE_TIER_CHANGED, "service_tier", 11),
    Setting("extra_body_hash", Cause.EXTRA_BODY_CHANGED, None),
    Setting("defer_loading", Cause.DEFER_LOADING_CHANGED, "defer_loading", 7),
    Setting("thinking_mode", Cause.THINKING_MODE_CHANGED, "thinking_mode", 2),
    Setting(
        "thinking_display",
        Cause.THINKING_DISPLAY_CHANGED,
        "thinking_display",
        3,
        yields_to="thinking_mode",
    ),
)

NOT_SETTINGS: frozenset[str] = frozenset(
    {
        # The prompt's content and its markers: compared by ``causes.diff_fingerprints``
        # itself, since their causes carry details (block indexes, tool names, the
        # first rewritten message) and the cache-control markers yield to the system.
        "system_hashes",
        "system_chars",
        "system_cache_control",
        "tools",
        "message_hashes",
        "message_roles",
        # Per-block prints for the breakdown of a prefix (analysis.breakdown), the same
        # hashes as the fields above.
        "tool_blocks",
        "system_blocks",
        "message_blocks",
        # The body's top-level automatic-caching tag: read by the breakdown, names no cause.
        "cache_control",
        # Where the fingerprint came from, not what the request was.
        "joined",
    }
)
"""Fingerprint fields that are not settings, each for the reason given beside it."""

SHOWN: tuple[tuple[str, str], ...] = tuple(
    (s.field, s.label)
    for s in sorted(SETTINGS, key=lambda s: -1 if s.shown_at is None else s.shown_at)
    if s.label is not None and s.shown_at is not None
)
"""``(field, label)`` of the settings explain shows as before -> after, in its order."""
