"""Where cachediag keeps its private files (state, price cache, logs). Standard library only."""

from __future__ import annotations

import os


def cache_dir() -> str:
    """``$XDG_CACHE_HOME/cachediag`` (an absolute XDG path only), else ``~/.cache/cachediag``."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    if not base or not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cachediag")
