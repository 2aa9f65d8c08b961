"""Prices that change with the time of day (genai-prices' ``TimeOfDateConstraint``).

Some models (DeepSeek's peak and off-peak hours) cost more in some hours of a UTC day
than in others; every memo of a price must tell those hours apart. The expected
prices are genai-prices' own answer for each request's instant.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import cachediag.pricing as pricing
from cachediag.model import RequestRecord
from cachediag.pricing import disk, genai

DAY = datetime(2026, 11, 2, tzinfo=UTC).timestamp()  # a Monday
"""A UTC midnight after every constrained model's last dated price change."""


def constrained_models() -> list[Any]:
    """Every genai-prices model with a time-of-day price, as cachediag finds it."""
    from genai_prices import data_snapshot, types

    found = []
    for provider in data_snapshot.get_snapshot().providers:
        for info in provider.models:
            conditional = info.prices if isinstance(info.prices, list) else []
            if any(isinstance(c.constraint, types.TimeOfDateConstraint) for c in conditional):
                found.append(info)
    return found


def direct(model_id: str, at: float) -> Any:
    """genai-prices' own prices for ``model_id`` at ``at``, not memoised by anyone."""
    from genai_prices import data_snapshot

    _, info = data_snapshot.get_snapshot().find_provider_model(model_id, None, None, None)
    return info.get_prices(datetime.fromtimestamp(at, UTC))


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No memo and an empty disk cache of its own, so the first lookup is this test's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(pricing, "_MEMO", {})
    monkeypatch.setattr(disk, "DISK", disk.DiskPrices())
    pricing._price_function.cache_clear()


def test_the_data_has_time_of_day_prices() -> None:
    # The tests below are only as good as this: genai-prices 0.2.3 has five such models.
    ids = {info.id for info in constrained_models()}
    assert {"deepseek-chat", "deepseek-reasoner", "deepseek-v4-pro"} <= ids


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize("model", [info.id for info in constrained_models()])
def test_each_hour_of_a_day_gets_its_own_price(model: str) -> None:
    # Every quarter hour of one UTC day, in random order: whichever request comes
    # first, each gets the price genai-prices gives for its own instant.
    instants = [DAY + 900 * i + 7 for i in range(96)]
    random.Random(model).shuffle(instants)
    seen = set()
    for at in instants:
        got = pricing.lookup_prices(model, at)
        want = direct(model, at)
        assert got is not None
        assert (got.input_mtok, got.output_mtok) == (
            float(want.input_mtok),
            float(want.output_mtok),
        ), datetime.fromtimestamp(at, UTC)
        assert got == genai.genai_prices(model, at)
        seen.add(got.input_mtok)
    assert len(seen) > 1  # the day does have two prices


@pytest.mark.usefixtures("fresh")
def test_two_requests_of_one_day_in_peak_and_off_peak_hours() -> None:
    # deepseek-reasoner: off-peak 16:30-00:30 UTC, standard 00:30-16:30 (genai-prices).
    def record(hour: float) -> RequestRecord:
        return RequestRecord(
            at=DAY + hour * 3600,
            input_tokens=1_000_000,
            cache_read_tokens=0,
            cache_creation_tokens=0,
            output_tokens=0,
            model="deepseek-reasoner",
        )

    price_of = pricing.price_function()
    off_peak, peak = price_of(record(20)), price_of(record(12))
    assert off_peak is not None and peak is not None
    assert (off_peak.input_mtok, peak.input_mtok) == (0.135, 0.55)
    # The edges, on the second: 00:30 and 16:30 start a slot.
    assert price_of(record(0.5)) == peak and price_of(record(0.5 - 1 / 3600)) == off_peak
    assert price_of(record(16.5)) == off_peak and price_of(record(16.5 - 1 / 3600)) == peak
