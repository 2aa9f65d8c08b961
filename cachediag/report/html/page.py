"""One HTML file from the page data: template, style, script, chart library, data.

Everything is inlined, so the file opens from disk, offline, with no server. A
Content-Security-Policy forbids every fetch, and only scripts carrying this file's
nonce run: even a string that slipped past escaping could not execute. Strings from
logs reach the page only as JSON data (``<``, ``>``, ``&`` escaped so it cannot close
its ``<script>`` element), and the page's script puts them in as text, never as markup.
Their bidi controls (``text.BIDI_CONTROLS``: overrides, embeddings, isolates, marks) are
replaced by ``?`` in that data, so a log string cannot reorder the report's own text;
the script isolates each log string where it sits inside a line of its own text.
"""

from __future__ import annotations

import html
import json
import re
import secrets
from functools import cache
from importlib.resources import files
from typing import Any

from cachediag.report.serialize import escape_json
from cachediag.text import BIDI_CONTROLS, REPLACEMENT, sanitize

ECHARTS_VERSION = "6.1.0"
ECHARTS_FILE = "echarts.common.min.js"
SCRIPT_FILES = (
    "report-base.js",
    "report-overview.js",
    "report-list.js",
    "report-labels.js",
    "report-session.js",
    "report-main.js",
)
"""The page's own script, in parts that share one scope (helpers first, start-up last)."""

_MARKER = re.compile(r"/\*@(\w+)@\*/")
_BIDI = re.compile("[" + "".join(map(chr, BIDI_CONTROLS)) + "]")


@cache
def _asset(name: str) -> str:
    return (files("cachediag.report.html") / "assets" / name).read_text(encoding="utf-8")


def embed_json(data: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``</script>``,
    no ``<!--``, no line separators that old parsers treat as line ends, no bidi control
    (each a ``?``: only inside strings can JSON hold one), and the C1 controls escaped as
    in every JSON output (``report --output -`` may reach a terminal)."""
    text = neutralise_bidi(
        escape_json(json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False))
    )
    for raw, escaped in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
    ):
        text = text.replace(raw, escaped)
    return text


def neutralise_bidi(text: str) -> str:
    """``text`` with every bidi control a ``?`` (text that is ASCII: an O(1) test)."""
    return text if text.isascii() else _BIDI.sub(REPLACEMENT, text)


def _app_script() -> str:
    parts = "".join(_asset(name) for name in SCRIPT_FILES)
    return f'(function () {{\n  "use strict";\n{parts}}})();\n'


def render_page(data: dict[str, Any], title: str) -> str:
    """The whole HTML document. ``title`` is plain text (sanitised and escaped here)."""
    nonce = secrets.token_urlsafe(18)
    pieces = {
        "title": html.escape(sanitize(title)),
        "nonce": nonce,
        "css": _asset("report.css"),
        "data": embed_json(data),
        "echarts": _asset(ECHARTS_FILE),
        "echarts_version": ECHARTS_VERSION,
        "app": _app_script(),
    }
    # One pass over the template alone: inserted text (the chart library, the data) is
    # never scanned for markers.
    return _MARKER.sub(lambda m: pieces[m.group(1)], _asset("template.html"))
