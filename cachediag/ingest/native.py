"""The compiled line scanner (``_scan.c``), when it was built and is not switched off.

``CACHEDIAG_PURE_PYTHON=1`` forces the Python scanner: for tests that hold the two to the
same answers, and to rule the extension out when a result looks wrong.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: the status line's warm path imports this module
if TYPE_CHECKING:
    from collections.abc import Callable

    ScanChunk = Callable[
        [bytes, int, int, tuple[bytes, ...]], tuple[list[tuple[int, int, int]], int]
    ]
    WantedLines = Callable[[bytes, int, tuple[bytes, ...]], list[int]]


def load_scanner() -> tuple[ScanChunk, WantedLines] | None:
    if os.environ.get("CACHEDIAG_PURE_PYTHON"):
        return None
    try:
        from cachediag.ingest import _scan
    except ImportError:  # built without a compiler (setup.py marks it optional)
        return None
    return _scan.scan_chunk, _scan.wanted_lines


SCANNER = load_scanner()
