"""User price files (``--pricing FILE``): LiteLLM's JSON or cachediag's own JSON.

cachediag's own format, for a few models or a negotiated rate (USD per million tokens)::

    {
      "source": "our contract 2026",
      "models": {
        "claude-opus-4-6": {
          "input_mtok": 5, "cache_write_5m_mtok": 6.25, "cache_write_1h_mtok": 10,
          "cache_read_mtok": 0.5, "output_mtok": 25,
          "long_context": {"threshold_tokens": 200000, "input_mtok": 10, ...}
        },
        "claude-sonnet-4": [
          {"input_mtok": 3, ...},
          {"since": "2026-03-13", "input_mtok": 2.5, ...}
        ]
      }
    }

A model name matches a key exactly, else the longest key it starts with
(``claude-sonnet-4-20250514`` -> ``claude-sonnet-4``). A list gives a price history:
the last entry whose ``since`` (UTC date) is not after the request is used.

LiteLLM's ``model_prices_and_context_window.json`` is recognised by its per-token keys
(``input_cost_per_token`` ...), with ``cache_creation_input_token_cost_above_1hr`` and
``*_above_200k_tokens`` for the 1h write price and the long-context tier, and
``off_peak_pricing`` for rates by the time of day (``offpeak``). cachediag's own format
prices by date only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cachediag.analysis.costs import ModelPrices
from cachediag.errors import PricingError
from cachediag.pricing.checks import checked_prices
from cachediag.pricing.offpeak import OffPeak, parse_off_peak
from cachediag.pricing.slots import DAY_S, DayPrices
from cachediag.safefiles import UnsafeFile, open_regular
from cachediag.text import sanitize

MTOK = 1_000_000


class LongContextPrices(BaseModel):
    """Prices of a whole request whose total input exceeds ``threshold_tokens``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    threshold_tokens: int = Field(gt=0)
    input_mtok: float = Field(ge=0)
    cache_write_5m_mtok: float = Field(ge=0)
    cache_write_1h_mtok: float = Field(ge=0)
    cache_read_mtok: float = Field(ge=0)
    output_mtok: float = Field(ge=0)


class PriceEntry(BaseModel):
    """USD per million tokens of one model, from ``since`` (UTC date) on."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    since: date | None = None
    input_mtok: float = Field(ge=0)
    cache_write_5m_mtok: float = Field(ge=0)
    cache_write_1h_mtok: float = Field(ge=0)
    cache_read_mtok: float = Field(ge=0)
    output_mtok: float = Field(ge=0)
    long_context: LongContextPrices | None = None

    def to_prices(self, source: str) -> ModelPrices:
        lc = self.long_context
        if lc is None:
            return _flat(self, source)
        return replace(
            _flat(self, source),
            long_context_threshold_tokens=lc.threshold_tokens,
            long_context=_flat(lc, source),
        )


def _flat(p: PriceEntry | LongContextPrices, source: str) -> ModelPrices:
    """One level of an entry: the five per-token prices both levels share."""
    return ModelPrices(
        input_mtok=p.input_mtok,
        cache_write_5m_mtok=p.cache_write_5m_mtok,
        cache_write_1h_mtok=p.cache_write_1h_mtok,
        cache_read_mtok=p.cache_read_mtok,
        output_mtok=p.output_mtok,
        source=source,
    )


class PriceFile(BaseModel):
    """cachediag's own price file."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    source: str | None = None
    """A name for reports; defaults to the file name."""
    models: dict[str, PriceEntry | list[PriceEntry]]


@dataclass(slots=True)
class LoadedPrices:
    source: str
    table: dict[str, list[tuple[date | None, ModelPrices]]] = field(default_factory=dict)
    off_peak: dict[str, OffPeak] = field(default_factory=dict)
    """Models of a LiteLLM file with ``off_peak_pricing``."""

    def _match(self, model: str) -> str | None:
        if model in self.table:
            return model
        for candidate in (model.lower(), f"anthropic/{model}"):
            if candidate in self.table:
                return candidate
        prefixes = [k for k in self.table if model.startswith(k)]
        return max(prefixes, key=len) if prefixes else None

    def day_prices(self, model: str, day: int) -> DayPrices:
        """``model``'s prices over UTC day ``day`` (days since the epoch), in slots."""
        key = self._match(model)
        if key is None:
            return DayPrices()
        on = datetime.fromtimestamp(day * DAY_S, UTC).date()
        chosen = None
        for since, prices in self.table[key]:
            if since is None or since <= on:
                chosen = prices
        off_peak = self.off_peak.get(key)
        if chosen is None or off_peak is None:
            return DayPrices(slots=(chosen,))
        return off_peak.day_prices(chosen, day)


def _per_token(entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) * MTOK


def litellm_prices(entry: dict[str, Any], source: str) -> ModelPrices | None:
    """One LiteLLM model entry -> prices; ``None`` when it has no token prices."""

    def tier(suffix: str) -> ModelPrices | None:
        p_in = _per_token(entry, f"input_cost_per_token{suffix}")
        p_out = _per_token(entry, f"output_cost_per_token{suffix}")
        if p_in is None or p_out is None:
            return None
        w5 = _per_token(entry, f"cache_creation_input_token_cost{suffix}")
        w1 = _per_token(entry, f"cache_creation_input_token_cost_above_1hr{suffix}")
        read = _per_token(entry, f"cache_read_input_token_cost{suffix}")
        # Missing cache prices: cached tokens billed as input; a missing 1h price is
        # LiteLLM's own fallback, the 5m write price (said in docs/audit.md).
        w5 = p_in if w5 is None else w5
        return ModelPrices(
            input_mtok=p_in,
            cache_write_5m_mtok=w5,
            cache_write_1h_mtok=w5 if w1 is None else w1,
            cache_read_mtok=p_in if read is None else read,
            output_mtok=p_out,
            source=source,
        )

    base = tier("")
    if base is None:
        return None
    long_context = tier("_above_200k_tokens")
    if long_context is None:
        return base
    return replace(base, long_context_threshold_tokens=200_000, long_context=long_context)


def _is_litellm(data: dict[str, Any]) -> bool:
    return "models" not in data and any(
        isinstance(v, dict) and "input_cost_per_token" in v for v in data.values()
    )


MAX_PRICE_FILE_BYTES = 256 << 20
"""LiteLLM's file is ~1.5 MB; a price file far larger than that is not one."""


def _read_price_file(path: Path) -> Any:
    try:
        with open_regular(str(path)) as fp:
            raw = fp.read(MAX_PRICE_FILE_BYTES + 1)
    except UnsafeFile as exc:
        raise PricingError(f"{path}: price file is not a regular file") from exc
    except OSError as exc:
        raise PricingError(f"{path}: cannot read price file ({exc.strerror or exc})") from exc
    if len(raw) > MAX_PRICE_FILE_BYTES:
        raise PricingError(f"{path}: price file larger than {MAX_PRICE_FILE_BYTES >> 20} MiB")
    try:
        return json.loads(raw)
    except RecursionError as exc:
        raise PricingError(f"{path}: price file is nested too deeply") from exc
    except ValueError as exc:
        raise PricingError(f"{path}: price file is not valid JSON") from exc


@cache
def load_price_file(path: Path) -> LoadedPrices:
    data = _read_price_file(path)
    if not isinstance(data, dict):
        raise PricingError(f"{path}: price file must be a JSON object")
    if _is_litellm(data):
        source = f"litellm file {sanitize(path.name, 80)}"
        loaded = LoadedPrices(source)
        for name, entry in data.items():
            if isinstance(entry, dict):
                prices = litellm_prices(entry, source)
                if prices is None:
                    continue
                off_peak = parse_off_peak(entry.get("off_peak_pricing"))
                try:
                    checked_prices(prices)
                    if off_peak is not None:
                        checked_prices(off_peak.applied(prices))
                except ValueError as exc:
                    model = sanitize(name, 80)
                    raise PricingError(f"{path}: {model}: {exc} (per-token prices)") from None
                loaded.table[name] = [(None, prices)]
                if off_peak is not None:
                    loaded.off_peak[name] = off_peak
        return loaded
    try:
        parsed = PriceFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PricingError(
            f"{path}: not a LiteLLM or cachediag price file ({where}: {first['msg']})"
        ) from exc
    source = sanitize(parsed.source or f"price file {path.name}", 120)
    loaded = LoadedPrices(source)
    for name, value in parsed.models.items():
        entries = value if isinstance(value, list) else [value]
        ordered = sorted(entries, key=lambda e: e.since or date.min)
        loaded.table[name] = [(e.since, e.to_prices(source)) for e in ordered]
    return loaded
