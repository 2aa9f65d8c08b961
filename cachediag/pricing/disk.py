"""Prices already looked up, kept on disk so a run need not load genai-prices at all.

Loading genai-prices' data takes longer than analysing a large session, so conversions
are remembered per (model, UTC day) in ``$XDG_CACHE_HOME/cachediag/prices.json`` (mode
0600, replaced atomically). The file is stamped with the size and mtime of the
installed price data: upgrading genai-prices invalidates it. It holds model names and
prices only.

Prices are also looked up in worker processes, which end with ``os._exit`` (no
``atexit``): a worker calls ``flush`` after each piece of work, and every save merges
with what the file holds by then, so that runs in parallel (and their workers) add to
one another's entries rather than replace them.
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
from cachediag.pricing.checks import checked_prices
from cachediag.safefiles import private_dir, read_private, write_atomic

_FILE = "prices.json"
MAX_BYTES = 64 << 20
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
    """Saved prices back, checked: raises ``ValueError`` for anything that is not what
    ``put`` wrote (the entry is then looked up again)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("a price entry that is not an object")
    raw = dict(raw)
    raw["long_context"] = _to_prices(raw.get("long_context"))
    try:
        return checked_prices(ModelPrices(**raw))
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def _plain_text(value: Any) -> bool:
    return isinstance(value, str) and len(value) < 200 and value.isprintable()


class DiskPrices:
    """A lazily loaded map ``"model|day" -> prices`` (``None``: known to be unpriced)."""

    def __init__(self) -> None:
        self._entries: dict[str, Any] | None = None
        self._stamp: str | None = None
        self._source: str | None = None
        self._dirty = False
        self._pid = 0
        """The process that loaded the entries; another one is a forked worker."""

    def _load(self) -> dict[str, Any]:
        if self._entries is None:
            self._stamp = _stamp()
            self._pid = os.getpid()
            self._entries, self._source = self._read()
        return self._entries

    def _read(self) -> tuple[dict[str, Any], str | None]:
        """The entries and source the file holds now, if they are for this price data."""
        try:
            data = json.loads(read_private(os.path.join(cache_dir(), _FILE), MAX_BYTES))
        except (OSError, ValueError, RecursionError):
            data = None  # missing or damaged: prices are looked up again
        if not isinstance(data, dict) or data.get("stamp") != self._stamp:
            return {}, None
        entries, source = data.get("entries"), data.get("source")
        return (
            dict(entries) if isinstance(entries, dict) else {},
            source if _plain_text(source) else None,
        )

    def get(self, key: str) -> tuple[bool, ModelPrices | None]:
        entries = self._load()
        if key not in entries or self._stamp is None:
            return False, None
        try:
            return True, _to_prices(entries[key])
        except ValueError:  # a damaged entry or another layout: looked up again
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

    def flush(self) -> None:
        """Save now what a forked worker added (it will not run ``atexit``); in the
        process that loaded the prices, leave it to ``atexit``: one write per run."""
        if self._dirty and os.getpid() != self._pid:
            self.save()

    def _mark_dirty(self) -> None:
        if not self._dirty:
            self._dirty = True
            atexit.register(self.save)

    def save(self) -> None:
        if not self._dirty or self._stamp is None or self._entries is None:
            return
        folder = cache_dir()
        entries, source = self._read()
        # What the file holds now (other runs, our workers) and what this process added.
        entries.update(self._entries)
        data = {"stamp": self._stamp, "source": self._source or source, "entries": entries}
        # A cache that cannot be written only costs speed next time.
        with contextlib.suppress(OSError, ValueError):
            private_dir(folder, folder)
            write_atomic(os.path.join(folder, _FILE), json.dumps(data).encode())
            self._dirty = False


DISK = DiskPrices()
