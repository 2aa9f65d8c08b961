"""Prices already looked up, kept on disk so a run need not load genai-prices at all.

Loading genai-prices' data takes longer than analysing a large session, so conversions
are remembered per (model, UTC day) in ``$XDG_CACHE_HOME/cachediag/prices.json`` (mode
0600, replaced atomically). The file is stamped with the size and mtime of the
installed price data: upgrading genai-prices invalidates it. It holds model names and
prices only.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
from dataclasses import asdict
from importlib.util import find_spec
from typing import Any

from cachediag.analysis.costs import ModelPrices
from cachediag.paths import cache_dir

_FILE = "prices.json"
_VERSION = 3
"""Bump when the conversion of genai-prices data changes: saved prices are then redone."""


def _stamp() -> str | None:
    spec = find_spec("genai_prices")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        st = os.stat(os.path.join(next(iter(spec.submodule_search_locations)), "data.py"))
    except OSError:
        return None
    return f"{_VERSION}-{st.st_size}-{st.st_mtime_ns}"


def _to_prices(raw: Any) -> ModelPrices | None:
    if raw is None:
        return None
    raw = dict(raw)
    raw["long_context"] = _to_prices(raw.get("long_context"))
    return ModelPrices(**raw)


class DiskPrices:
    """A lazily loaded map ``"model|day" -> prices`` (``None``: known to be unpriced)."""

    def __init__(self) -> None:
        self._entries: dict[str, Any] | None = None
        self._stamp: str | None = None
        self._source: str | None = None
        self._dirty = False

    def _load(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = {}
            self._stamp = _stamp()
            try:
                with open(os.path.join(cache_dir(), _FILE), "rb") as fp:
                    data = json.load(fp)
                if isinstance(data, dict) and data.get("stamp") == self._stamp:
                    self._entries = dict(data.get("entries") or {})
                    source = data.get("source")
                    self._source = source if isinstance(source, str) else None
            except (OSError, ValueError):
                pass
        return self._entries

    def get(self, key: str) -> tuple[bool, ModelPrices | None]:
        entries = self._load()
        if key not in entries or self._stamp is None:
            return False, None
        try:
            return True, _to_prices(entries[key])
        except TypeError:  # a file from another layout: ignore the entry
            return False, None

    def source(self) -> str | None:
        """The price source's name and version, as saved with these prices."""
        self._load()
        return self._source

    def set_source(self, source: str) -> None:
        self._load()
        if source != self._source:
            self._source = source
            self._mark_dirty()

    def put(self, key: str, prices: ModelPrices | None) -> None:
        self._load()[key] = None if prices is None else asdict(prices)
        self._mark_dirty()

    def _mark_dirty(self) -> None:
        if not self._dirty:
            self._dirty = True
            atexit.register(self.save)

    def save(self) -> None:
        if not self._dirty or self._stamp is None or self._entries is None:
            return
        folder = cache_dir()
        path = os.path.join(folder, _FILE)
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fp:
                data = {"stamp": self._stamp, "source": self._source, "entries": self._entries}
                json.dump(data, fp)
            os.replace(tmp, path)
            self._dirty = False
        except OSError:
            # A cache that cannot be written only costs speed next time.
            with contextlib.suppress(OSError):
                os.unlink(tmp)


DISK = DiskPrices()
