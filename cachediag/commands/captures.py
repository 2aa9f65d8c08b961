"""``--captures``/``--no-captures``: the capture proxy's records joined to what a command
reads, for the click commands and the quick paths alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cachediag.errors import InputError


def capture_join(captures_dir: Path | None, no_captures: bool) -> Any:
    """The pipeline's ``enrich`` for ``--captures``/``--no-captures``, or ``None``; the
    index is built now, so worker processes inherit it instead of each scanning the
    folder."""
    if no_captures:
        return None
    if captures_dir is None:
        # The proxy's folder is looked for without importing the index (most runs have
        # no captures): as ``proxy.index.default_captures_dir`` does.
        from cachediag.proxy.logfiles import default_log_dir

        folder = default_log_dir()
        if not folder.is_dir():
            return None
    else:
        folder = captures_dir.expanduser()
        if not folder.is_dir():
            raise InputError(f"--captures {folder}: no such folder")
    from cachediag.proxy.index import CaptureJoin

    join = CaptureJoin(folder)
    join.load()
    return join
