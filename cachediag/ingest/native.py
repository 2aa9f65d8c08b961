"""The compiled line scanner (``_scan.c``) and transcript line picker (``_fields.c``),
when they were built and are not switched off (``compiled_module``, which the JSON
encoder of ``report.serialize`` is loaded by too).

``CACHEDIAG_PURE_PYTHON=1`` (any value but empty or ``0``) forces their Python twins: for
tests that hold the two to the same answers, and to rule the extension out when a result
looks wrong.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: the status line's warm path imports this module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    ScanChunk = Callable[
        [bytes | bytearray, int, int, tuple[bytes, ...]], tuple[list[tuple[int, int, int]], int]
    ]
    WantedLines = Callable[[bytes, int, tuple[bytes, ...]], list[int]]
    ScanHead = Callable[[bytes, int], tuple[int, bool, bool]]
    Pick = Callable[[bytes], Any]


API = 2
"""The ``_scan.API`` this code was written for: a build of older source (an editable
install does not rebuild when ``_scan.c`` changes) is not used."""


def compiled_module(name: str, api: int) -> Any:
    """The compiled extension ``cachediag.<name>`` when it was built, from the source
    this code was written for (its ``API`` is ``api``), and is not switched off; else
    ``None``. ``__import__``, not importlib: nothing more is loaded for it."""
    if os.environ.get("CACHEDIAG_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        module = __import__(f"cachediag.{name}", fromlist=["API"])
    except ImportError:  # built without a compiler (setup.py marks it optional)
        return None
    return module if getattr(module, "API", None) == api else None


def load_scanner() -> tuple[ScanChunk, WantedLines, ScanHead] | None:
    scan = compiled_module("ingest._scan", API)
    return None if scan is None else (scan.scan_chunk, scan.wanted_lines, scan.scan_head)


SCANNER = load_scanner()

FIELDS_API = 1
"""The ``_fields.API`` this code was written for (as ``API`` for the scanner)."""


def load_picker() -> Pick | None:
    """The compiled transcript line picker (``ingest.fields``), under the same switch."""
    fields = compiled_module("ingest._fields", FIELDS_API)
    return None if fields is None else fields.pick


PICKER = load_picker()
