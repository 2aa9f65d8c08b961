"""The one sanitiser: text that came from a log (or a file name, or a price file) made
safe to print on a terminal.

Logs are written by other programs and may hold anything: a model name, an ``agentId``
or a price source with ``ESC [ 31 m`` (colours), ``ESC ] 0 ;`` (the window title),
``BEL``, a carriage return that overwrites what was printed, or bidirectional-override
characters that show text in another order than it is. Every human-facing output
(tables, watch lines, the status line, notes on stderr) passes such text through
``sanitize`` (the table helpers of ``report.layout`` and ``console.SafeConsole``
do it themselves); JSON output escapes the C0 and C1 controls and lone surrogates
(``cachediag.jsonsafe``); the HTML report replaces ``BIDI_CONTROLS`` (``report.html.page``).

Standard library only, no ``re``: the status line's warm path imports this.
"""

from __future__ import annotations

REPLACEMENT = "?"

BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
"""The marks, embeddings, overrides and isolates of the Unicode bidi algorithm: in a log
string they can reorder the text around it (U+202E shows what follows backwards)."""

_UNSAFE: dict[int, str] = {c: REPLACEMENT for c in range(0x20)}
_UNSAFE.update({c: REPLACEMENT for c in range(0x7F, 0xA0)})  # DEL and the C1 controls
_UNSAFE.update(
    {
        c: REPLACEMENT
        # Zero-width, bidirectional marks, embeddings, overrides and isolates, line and
        # paragraph separators, the BOM: each can hide or reorder what is shown.
        for c in (
            *range(0x200B, 0x2010),
            *range(0x2028, 0x202F),
            *range(0x2060, 0x2070),
            0xFEFF,
            0x061C,
        )
    }
)
# Lone surrogates: a file name's byte that is not UTF-8 (0x9B, 8-bit CSI) is U+DC9B in
# Python, and a ``surrogateescape`` stdout (the UTF-8 locale's) writes the raw byte back.
_UNSAFE.update({c: REPLACEMENT for c in range(0xD800, 0xE000)})
_UNSAFE_KEEP_LINES = {c: r for c, r in _UNSAFE.items() if c not in (0x0A, 0x09)}


def sanitize(text: str, limit: int | None = None, *, lines: bool = False) -> str:
    """``text`` with every control or reordering character replaced by ``?``; at most
    ``limit`` characters (then ``…``). ``lines=True`` keeps newlines and tabs (a whole
    block of output; a ``\\r\\n`` line end becomes ``\\n``)."""
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "\u2026"
    if text.isascii() and text.isprintable():
        return text
    if lines:
        return text.replace("\r\n", "\n").translate(_UNSAFE_KEEP_LINES)
    return text.translate(_UNSAFE)


def plain_text_stream(stream: object) -> bool:
    """A UTF-8 text file of the operating system's own (not a wrapper, not Windows): what
    is written to it are the same bytes whoever writes them."""
    import io
    import sys

    encoding = getattr(stream, "encoding", None)
    return (
        sys.platform != "win32"
        and type(stream) is io.TextIOWrapper
        and isinstance(encoding, str)
        and encoding.lower().replace("_", "-") in ("utf-8", "utf8")
    )
