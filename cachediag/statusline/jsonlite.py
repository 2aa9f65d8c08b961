"""``json.loads`` for the warm path without importing ``json``.

``import json`` pulls in ``re``, ``enum`` and ``functools``: ~12 ms on the reference
machine, as long as starting the interpreter itself. The parsing is done in C by
``_json.make_scanner`` either way; this module calls that scanner directly with the same
settings ``json.loads`` uses, and hands anything it does not parse cleanly (a BOM, UTF-16,
invalid JSON) to ``json.loads`` itself, so results and errors are exactly json's.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WHITESPACE = " \t\n\r"
"""What json skips around a document (``json.decoder.WHITESPACE``)."""


class _Settings:
    """The attributes ``_json.make_scanner`` reads: ``json.JSONDecoder()``'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": float("-inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__


_scan: Callable[[str, int], tuple[Any, int]] | None
try:
    from _json import make_scanner as _make_scanner

    _scan = _make_scanner(_Settings())  # type: ignore[arg-type]
except (ImportError, TypeError, AttributeError):  # pragma: no cover - not CPython
    _scan = None


def loads(data: bytes) -> Any:
    """Parse one JSON document; raises ``ValueError`` (or ``RecursionError``) as json does."""
    if _scan is not None:
        try:
            text = data.decode("utf-8")
            start = len(text) - len(text.lstrip(_WHITESPACE))
            value, end = _scan(text, start)
            if not text[end:].strip(_WHITESPACE):
                return value
        except (ValueError, StopIteration):
            pass  # json.loads says what is wrong, in its own words
    import json

    return json.loads(data)
