"""Prices already looked up, kept on disk so a run need not load genai-prices at all.

Loading genai-prices' data takes longer than analysing a large session, so conversions
are remembered per (model, UTC day), each day with the slots its time-of-day prices cut
it into (``slots``), in ``$XDG_CACHE_HOME/cachediag/prices.json`` (mode 0600, replaced
atomically). Entries are kept per stamp of the installed price data (its size and
mtime): upgrading genai-prices redoes them, and two installs side by side (a pipx one
and a project's venv) each keep theirs warm instead of replacing the other's on every
run; the ``KEEP_STAMPS`` last saved are kept. It holds model names and prices only.

Prices are also looked up in worker processes, which end with ``os._exit`` (no
``atexit``): a worker calls ``flush`` after each piece of work, and every save merges
with what the file holds by then, so that runs in parallel (and their workers) add to
one another's entries rather than replace them.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import time
from importlib.util import find_spec
from typing import Any

from cachediag.paths import cache_dir
from cachediag.pricing.slots import DayPrices, day_prices_from_data
from cachediag.safefiles import private_dir, read_private, write_atomic

_FILE = "prices.json"
MAX_BYTES = 64 << 20
_VERSION = 4
"""Bump when the conversion of genai-prices data changes: saved prices are then redone."""
KEEP_STAMPS = 4
"""Price data stamps kept in the file: installs (and versions) used side by side."""


def _stamp() -> str | None:
    spec = find_spec("genai_prices")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        st = os.stat(os.path.join(next(iter(spec.submodule_search_locations)), "data.py"))
    except OSError:
        return None
    return f"{_VERSION}-{st.st_size}-{st.st_mtime_ns}"


def _plain_text(value: Any) -> bool:
    return isinstance(value, str) and len(value) < 200 and value.isprintable()


class DiskPrices:
    """A lazily loaded map ``"model|day" -> DayPrices`` for this price data's stamp."""

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
            self._entries, self._source = _ours(self._read(), self._stamp)
        return self._entries

    def _read(self) -> dict[str, dict[str, Any]]:
        """What the file holds now, per stamp (nothing when missing or damaged)."""
        try:
            data = json.loads(read_private(os.path.join(cache_dir(), _FILE), MAX_BYTES))
        except (OSError, ValueError, RecursionError):
            data = None  # missing or damaged: prices are looked up again
        stamps = data.get("stamps") if isinstance(data, dict) else None
        if not isinstance(stamps, dict):
            return {}
        return {k: v for k, v in stamps.items() if isinstance(v, dict)}

    def get(self, key: str) -> DayPrices | None:
        """The saved prices of ``key``; ``None`` when they must be looked up."""
        entries = self._load()
        if key not in entries or self._stamp is None:
            return None
        try:
            return day_prices_from_data(entries[key])
        except ValueError:  # a damaged entry or another layout: looked up again
            return None

    def source(self) -> str | None:
        """The price source's name and version, as saved with these prices."""
        self._load()
        return self._source

    def set_source(self, source: str) -> None:
        self._load()
        if source != self._source:
            self._source = source
            self._mark_dirty()

    def put(self, key: str, prices: DayPrices) -> None:
        self._load()[key] = prices.to_data()
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
        stamps = self._read()
        entries, source = _ours(stamps, self._stamp)
        # What the file holds now (other runs, our workers) and what this process added.
        entries.update(self._entries)
        stamps[self._stamp] = {
            "saved_at": time.time(),
            "source": self._source or source,
            "entries": entries,
        }
        newest = sorted(stamps, key=lambda k: _saved_at(stamps[k]), reverse=True)
        data = {"stamps": {k: stamps[k] for k in newest[:KEEP_STAMPS]}}
        # A cache that cannot be written only costs speed next time.
        with contextlib.suppress(OSError, ValueError):
            private_dir(folder, folder)
            write_atomic(os.path.join(folder, _FILE), json.dumps(data).encode())
            self._dirty = False


def _ours(
    stamps: dict[str, dict[str, Any]], stamp: str | None
) -> tuple[dict[str, Any], str | None]:
    """The entries and source saved under ``stamp`` (this install's price data)."""
    mine = stamps.get(stamp) if stamp is not None else None
    if mine is None:
        return {}, None
    entries, source = mine.get("entries"), mine.get("source")
    return (
        dict(entries) if isinstance(entries, dict) else {},
        source if _plain_text(source) else None,
    )


def _saved_at(saved: dict[str, Any]) -> float:
    when = saved.get("saved_at")
    if isinstance(when, bool) or not isinstance(when, int | float) or not math.isfinite(when):
        return 0.0  # a damaged time: the first to go
    return float(when)


DISK = DiskPrices()
