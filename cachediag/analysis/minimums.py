"""The shortest prefix each model caches: data, not code, in one table.

Source: ``spec/pricing.md`` ("Minimum cacheable prefix"): 512 (Opus 5 family), 1024
(Sonnet 4.x, Opus 4.8), 2048 (Opus 4.7), 4096 (Opus 4.5/4.6, Haiku 4.5); OpenAI 1024.
Models the spec does not list are from Anthropic's prompt-caching page
(docs.claude.com/en/docs/build-with-claude/prompt-caching): 1024 for Opus 4 / 4.1 and the
Claude 3.x Sonnet and Opus models, 2048 for Claude Haiku 3 and 3.5. A prefix shorter than
this is processed normally and cached nowhere, without an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class CacheMinimum:
    pattern: str
    """Regular expression searched in the model id (most specific rows first)."""
    tokens: int
    explicit: bool
    """Caching needs ``cache_control`` breakpoints (Anthropic); OpenAI caches by itself."""


MINIMUMS: tuple[CacheMinimum, ...] = (
    CacheMinimum(r"opus-5", 512, True),
    CacheMinimum(r"opus-4-8", 1024, True),
    CacheMinimum(r"opus-4-7", 2048, True),
    CacheMinimum(r"opus-4-[56]", 4096, True),
    CacheMinimum(r"haiku-4-5", 4096, True),
    CacheMinimum(r"sonnet-4", 1024, True),
    CacheMinimum(r"opus-4", 1024, True),
    CacheMinimum(r"3-[57]-sonnet|3-opus", 1024, True),
    CacheMinimum(r"3-5-haiku|3-haiku", 2048, True),
    CacheMinimum(r"^(openai/)?(gpt-|o[1-9]\b|o[1-9]-)", 1024, False),
)

_COMPILED = tuple((re.compile(m.pattern), m) for m in MINIMUMS)


def cache_minimum(model: str | None) -> CacheMinimum | None:
    """The row for ``model``, or ``None`` for a model the table does not know."""
    if not model:
        return None
    lowered = model.lower()
    for regex, row in _COMPILED:
        if regex.search(lowered):
            return row
    return None
