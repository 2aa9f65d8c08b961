"""JSON text made safe to ``cat``: the escapes every JSON line cachediag writes carries
(reports, datasets' sidecars, the proxy's record lines), beyond what ``json.dumps`` does.

A leaf module (standard library only) so that both ``report`` and the capture proxy,
which imports nothing from ``report``, use the one definition.
"""

from __future__ import annotations

import re

_ESCAPED = re.compile("[\x80-\x9f\u2028\u2029\ud800-\udfff]")
"""What JSON output writes as ``\\u`` escapes beyond what ``json.dumps`` does (the C0
controls): the C1 controls (U+009B is CSI, an escape sequence's start on a terminal that
``cat``s the output), the line and paragraph separators (line ends to JavaScript), and
lone surrogates: a file name's byte that is not UTF-8 (0x9B, 8-bit CSI) is U+DC9B in
Python, which ``json.dumps`` keeps and a ``surrogateescape`` stdout writes back raw, so
the output would be invalid UTF-8 holding the very byte. As ``\\udc9b`` it is ASCII."""
_ESCAPED_UTF8 = re.compile(b"\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]")
"""The same characters in UTF-8. Well-formed UTF-8 has no other way to match: 0xC2 and
0xE2 only ever start a character."""


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _escape_utf8(match: re.Match[bytes]) -> bytes:
    return f"\\u{ord(match.group().decode()):04x}".encode()


def escape_json(text: str) -> str:
    """JSON text with the characters of ``_ESCAPED`` written as ``\\u`` escapes. Only
    valid JSON goes in, where such characters can only be inside strings. Text that is
    ASCII (an O(1) test) is returned as it is, and so is text whose UTF-8 has no 0xC2, no
    0xE2 0x80 and no 0xED (a surrogate's lead): encoding and searching bytes costs less
    than the pattern's own search."""
    if text.isascii():
        return text
    data = text.encode("utf-8", "surrogatepass")  # json.dumps keeps a lone surrogate
    if b"\xc2" not in data and b"\xe2\x80" not in data and b"\xed" not in data:
        return text
    return _ESCAPED.sub(_escape, text)


def escape_json_utf8(data: bytes) -> bytes:
    """``escape_json`` for JSON in UTF-8 (orjson's): nothing is done unless a 0xC2 or a
    0xE2 0x80 lead is in ``data`` (a scan as fast as ``memchr``). orjson refuses a lone
    surrogate, so none is in its UTF-8."""
    if b"\xc2" not in data and b"\xe2\x80" not in data:
        return data
    return _ESCAPED_UTF8.sub(_escape_utf8, data)
