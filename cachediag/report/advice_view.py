"""The advice table in words for a terminal: the full account and the one-line hint.

Every string is from ``analysis.advice`` (cachediag's own words) except the cause, which
may come from a log read back, so it is sanitised.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from cachediag.analysis.advice import Advice
from cachediag.text import sanitize

MAX_WIDTH = 80


def advice_lines(advices: Sequence[Advice], width: int, indent: str = "  ") -> list[str]:
    """``What to do:`` then, per cause, what produces it, the action and its docs."""
    if not advices:
        return []
    width = max(40, min(width, MAX_WIDTH))
    out = [f"{indent}What to do:"]
    body, more = indent + "  ", indent + "    "
    for a in advices:
        out += _wrapped(
            f"{sanitize(a.cause, 60)}: usually {_lower(a.produced_by)}", width, body, more
        )
        out += _wrapped(f"-> {a.action}", width, more, more + "   ")
        if a.doc:
            out.append(f"{more}docs: {a.doc}")
    return out


def advice_hint(advice: Advice, limit: int = 72) -> str:
    """A few words for one-line views (watch): the setting to try, else that nothing
    avoids it, else the action's first clause, cut to ``limit`` characters."""
    if not advice.actionable:
        return "nothing to do: no setting avoids it"
    if advice.knobs and advice.cause.startswith("ttl_expired"):
        return f'try `{advice.knobs[0]}: "1h"` if such pauses recur'
    if advice.knobs:
        return f"see `{advice.knobs[0]}` (cachediag explain)"
    first = advice.action.split(". ", 1)[0].split("; ", 1)[0].split(": ", 1)[0].rstrip(".")
    return sanitize(first, limit)


def _lower(text: str) -> str:
    # "A pause of..." reads as "usually a pause of..."; names (CLAUDE.md, /model) stay.
    word = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if word.istitle() else text


def _wrapped(text: str, width: int, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text,
        width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )


def stream_advice_lines(
    ranked: Sequence[tuple[Advice, int]], width: int, indent: str = "  ", *, counts: bool = True
) -> list[str]:
    """analyze's lines under a session's misses: per cause (commonest first), the action
    and its docs; what produces it is in docs/advice.md and ``cachediag explain``."""
    if not ranked:
        return []
    width = max(40, min(width, MAX_WIDTH))
    out = [f"{indent}What to do (cachediag explain tells one miss's story):"]
    body, more = indent + "  ", indent + "    "
    for a, n in ranked:
        count = f" ({n})" if counts else ""
        out += _wrapped(f"{sanitize(a.cause, 60)}{count}: {a.action}", width, body, more)
        if a.doc:
            out.append(f"{more}docs: {a.doc}")
    return out
