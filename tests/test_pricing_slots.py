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


def test_a_model_without_hourly_prices_is_looked_up_once_a_day(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The memo is on the hot path of analyze and audit: one genai-prices lookup (one
    # get_prices) per model and day however many requests, slots or not.
    from genai_prices import types

    calls: list[str] = []
    get_prices = types.ModelInfo.get_prices

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(self.id)
        return get_prices(self, *args, **kwargs)

    monkeypatch.setattr(types.ModelInfo, "get_prices", counted)
    price_of = pricing.price_function()
    for model in ("claude-opus-4-6", "deepseek-reasoner"):
        for day in range(2):
            for i in range(200):
                at = DAY + day * 86400 + 431 * i
                price_of(_record(model, at))
                pricing.lookup_prices(model, at)
    # deepseek-reasoner: a slot from midnight, 00:30 and 16:30 (off-peak, peak, off-peak).
    assert calls == ["claude-opus-4-6"] * 2 + ["deepseek-reasoner"] * 3 * 2


def _record(model: str, at: float, inp: int = 1_000_000) -> RequestRecord:
    return RequestRecord(
        at=at,
        input_tokens=inp,
        cache_read_tokens=0,
        cache_creation_tokens=0,
        output_tokens=0,
        model=model,
    )


WARM_RUN = """
import json, sys
from cachediag.pricing import lookup_prices
day, models = float(sys.argv[1]), sys.argv[2:]
prices = {
    f"{m} {h}": lookup_prices(m, day + h * 3600).input_mtok
    for m in models for h in (0, 1, 5, 12, 17, 23.9)
}
print(json.dumps({"prices": prices, "genai_prices": "genai_prices" in sys.modules}))
"""


def test_saved_slots_price_a_warm_run_without_genai_prices(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    models = [info.id for info in constrained_models()] + ["claude-opus-4-6"]

    def run() -> dict[str, Any]:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path)}
        out = subprocess.run(
            [sys.executable, "-c", WARM_RUN, str(DAY), *models],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        result: dict[str, Any] = json.loads(out.stdout)
        return result

    cold, warm = run(), run()
    assert cold["genai_prices"] and not warm["genai_prices"]
    want = {
        f"{m} {h}": float(direct(m, DAY + h * 3600).input_mtok)
        for m in models
        for h in (0, 1, 5, 12, 17, 23.9)
    }
    assert cold["prices"] == warm["prices"] == want
    assert (tmp_path / "cachediag" / "prices.json").stat().st_mode & 0o777 == 0o600


def test_two_installs_keep_their_own_saved_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pipx install and a venv have price data of different stamps: each keeps its
    # entries instead of replacing the other's on every run; the oldest go past 4.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    one_day = pricing.DayPrices(slots=(genai.genai_prices("claude-opus-4-6", DAY),))
    for n, stamp in enumerate(["a", "b", "c", "d", "e", "a"]):
        monkeypatch.setattr(disk, "_stamp", lambda s=stamp: s)
        monkeypatch.setattr(disk.time, "time", lambda n=n: 1000.0 + n)
        saved = disk.DiskPrices()
        saved.put(f"m-{stamp}|1", one_day)
        saved.save()
    for stamp, kept in [("a", True), ("b", False), ("c", True), ("e", True)]:
        monkeypatch.setattr(disk, "_stamp", lambda s=stamp: s)
        reread = disk.DiskPrices()
        assert (reread.get(f"m-{stamp}|1") == one_day) is kept, stamp
        assert reread.get("m-a|1" if stamp != "a" else "m-c|1") is None  # not another's


def test_zoned_times_of_day_are_placed_on_their_date() -> None:
    from datetime import date, time, timedelta, timezone
    from zoneinfo import ZoneInfo

    from cachediag.pricing.slots import utc_changes

    h = 3600.0
    new_york = time(9, 0, tzinfo=ZoneInfo("America/New_York"))
    # 9:00 in New York is 14:00 UTC in winter, 13:00 in summer; genai-prices reads the
    # zone at its 1970-01-01 offset (14:00 all year): both are cuts in summer.
    assert utc_changes([new_york], date(2026, 1, 15)) == [14 * h]
    assert utc_changes([new_york], date(2026, 7, 1)) == [13 * h, 14 * h]
    # The day DST begins (2026-03-08, at 2:00 local): 9:00 is already 13:00 UTC.
    assert utc_changes([new_york], date(2026, 3, 8)) == [13 * h, 14 * h]
    # 00:30 in Beijing falls on the UTC day before, at 16:30; naive times are UTC.
    beijing = time(0, 30, tzinfo=timezone(timedelta(hours=8)))
    assert utc_changes([beijing, time(0, 0), time(6, 15, 30)], date(2026, 11, 2)) == [
        6 * h + 15 * 60 + 30,
        16.5 * h,
    ]


@pytest.mark.usefixtures("fresh")
def test_a_zoned_peak_agrees_with_genai_prices_every_five_minutes() -> None:
    # A model whose peak hours are in a DST zone, in genai-prices' own data model: on a
    # winter and a summer day, each request gets genai-prices' answer for its instant.
    from datetime import time
    from decimal import Decimal
    from zoneinfo import ZoneInfo

    from genai_prices import data_snapshot, types

    zone = ZoneInfo("America/New_York")
    peak = types.TimeOfDateConstraint(time(9, 0, tzinfo=zone), time(17, 0, tzinfo=zone))
    info = types.ModelInfo(
        id="zoned-model",
        match=types.ClauseEquals(equals="zoned-model"),
        prices=[
            types.ConditionalPrice(
                prices=types.ModelPrice(input_mtok=Decimal(1), output_mtok=Decimal(2))
            ),
            types.ConditionalPrice(
                constraint=peak,
                prices=types.ModelPrice(input_mtok=Decimal(3), output_mtok=Decimal(6)),
            ),
        ],
    )
    provider = types.Provider(
        id="zoned",
        name="Zoned",
        api_pattern="zoned",
        model_match=types.ClauseStartsWith(starts_with="zoned"),
        models=[info],
    )
    data_snapshot.set_custom_snapshot(data_snapshot.DataSnapshot([provider], False))
    try:
        for day in (datetime(2026, 1, 15, tzinfo=UTC), datetime(2026, 7, 1, tzinfo=UTC)):
            start = day.timestamp()
            for i in range(288):
                at = start + 300 * i
                want = float(direct("zoned-model", at).input_mtok)
                assert pricing.lookup_prices("zoned-model", at).input_mtok == want, i
    finally:
        data_snapshot.set_custom_snapshot(None)


@pytest.mark.usefixtures("fresh")
def test_saved_day_prices_are_checked() -> None:
    from cachediag.pricing.slots import day_prices_from_data

    p = genai.genai_prices("claude-opus-4-6", DAY)
    good = pricing.DayPrices((100.0,), (p, None)).to_data()
    assert day_prices_from_data(good) == pricing.DayPrices((100.0,), (p, None))
    for bad in (
        {**good, "changes": [100.0, 50.0]},
        {**good, "changes": [0.0]},
        {**good, "changes": [86400.0]},
        {**good, "changes": [float("nan")]},
        {**good, "changes": [True]},
        {**good, "slots": [None]},
        {**good, "slots": "x"},
        {"slots": [None]},
        [good],
    ):
        with pytest.raises(ValueError):
            day_prices_from_data(bad)


def test_the_status_line_prices_each_miss_in_its_own_slot(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # deepseek-reasoner, one UTC day: a 5m-TTL miss at 12:00 (peak) and one at 20:00
    # (off-peak), in one run and then with the second miss added to a saved state.
    import json

    from cachediag.analysis.costs import miss_cost_usd
    from cachediag.analysis.ledger import Outcome
    from cachediag.analysis.session_analysis import analyze_session
    from cachediag.ingest.discover import sessions_for_file
    from cachediag.ingest.reader import read_session
    from tests.statusline_support import assistant, run_line, write

    monkeypatch.setenv("COLUMNS", "200")
    model = "deepseek-reasoner"
    noon, evening = DAY + 12 * 3600, DAY + 20 * 3600
    lines = [
        assistant(1, noon, inp=10, read=0, write=20000, model=model),
        assistant(2, noon + 60, inp=10, read=20000, write=500, model=model),
        assistant(3, noon + 1000, inp=10, read=0, write=21000, model=model),
        assistant(4, evening, inp=10, read=0, write=22000, model=model),
    ]
    t = tmp_path / "s1.jsonl"

    def line_cost() -> float:
        payload = {"transcript_path": str(t)}
        out = json.loads(run_line(payload, "--json", "--now", str(evening + 10)))
        cost: float = out["cachediag"]["miss_cost_usd"]
        return cost

    def expected() -> float:
        # Each miss at genai-prices' price for its own instant, nothing memoised.
        analysis = analyze_session(read_session(sessions_for_file(t)), evening + 10)
        misses = [e for e in analysis.main.entries if e.outcome is Outcome.MISS]
        assert len(misses) == 2
        total = 0.0
        for e in misses:
            prices = genai.genai_prices(model, e.record.at)
            assert prices is not None
            total += miss_cost_usd(e, prices)
        return round(total, 6)

    assert genai.genai_prices(model, noon) != genai.genai_prices(model, evening)
    write(t, lines)
    assert line_cost() == expected()
    write(t, lines[:3])
    first = line_cost()
    write(t, lines[3:], "a")
    assert line_cost() == expected() != first


LITELLM_DEEPSEEK = {
    # LiteLLM's off_peak_pricing (docs.litellm.ai/docs/proxy/off_peak_pricing): standard
    # rates, and other ones while a window is open.
    "deepseek/deepseek-reasoner": {
        "input_cost_per_token": 5.5e-7,
        "output_cost_per_token": 2.19e-6,
        "cache_read_input_token_cost": 1.4e-7,
        "off_peak_pricing": {
            "hours_utc": ["16:30-00:30", "not a window"],
            "input_cost_per_token": 1.35e-7,
            "output_cost_per_token": 5.5e-7,
            "cache_read_input_token_cost": "3.5e-8",
        },
    },
    "deepseek/deepseek-v4-pro": {
        "input_cost_per_token": 1.32e-6,
        "output_cost_per_token": 3.96e-6,
        "off_peak_pricing": {
            "hours_utc": ["00:00-01:00", "04:00-06:00", "10:00-00:00"],
            # Weekends are off-peak all day, on Beijing's calendar.
            "windows": [{"hours_utc": "00:00-00:00", "weekdays": ["sat", "Sunday"]}],
            "weekday_timezone": "Asia/Shanghai",
            "input_cost_per_token": 6.6e-7,
            "output_cost_per_token": 1.98e-6,
        },
    },
}


def _litellm_file(tmp_path: Path, data: Any) -> Path:
    import json

    path = tmp_path / "litellm.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.usefixtures("fresh")
def test_a_litellm_file_prices_its_off_peak_hours(tmp_path: Path) -> None:
    price_of = pricing.price_function(_litellm_file(tmp_path, LITELLM_DEEPSEEK))

    def rates(model: str, when: str) -> tuple[float, float, float]:
        at = datetime.fromisoformat(when).replace(tzinfo=UTC).timestamp()
        p = price_of(_record(f"deepseek/{model}", at))
        assert p is not None
        return p.input_mtok, p.output_mtok, p.cache_read_mtok

    standard, off_peak = (0.55, 2.19, 0.14), (0.135, 0.55, 0.035)
    # One UTC day, 2026-11-02 (a Monday), in order and out of it.
    for when, want in [
        ("2026-11-02T12:00", standard),
        ("2026-11-02T20:00", off_peak),
        ("2026-11-02T00:29:59", off_peak),
        ("2026-11-02T00:30", standard),
        ("2026-11-02T16:29:59", standard),
        ("2026-11-02T16:30", off_peak),
    ]:
        assert rates("deepseek-reasoner", when) == pytest.approx(want), when
    peak, calm = (1.32, 3.96), (0.66, 1.98)
    for when, want in [
        ("2026-11-02T02:00", peak),  # Monday
        ("2026-11-02T05:00", calm),
        ("2026-11-02T07:00", peak),
        ("2026-11-02T12:00", calm),
        ("2026-11-06T09:59", peak),  # Friday, 17:59 in Beijing
        ("2026-11-07T02:00", calm),  # Saturday in Beijing (and in UTC)
        ("2026-11-08T09:00", calm),  # Sunday 17:00 in Beijing
        ("2026-11-08T16:30", calm),  # Monday 00:30 in Beijing: off-peak hours anyway
        ("2026-11-09T01:00", peak),  # Monday 09:00 in Beijing
    ]:
        assert rates("deepseek-v4-pro", when)[:2] == pytest.approx(want), when


@pytest.mark.usefixtures("fresh")
def test_a_litellm_weekday_starts_on_its_own_calendar(tmp_path: Path) -> None:
    # Weekends off-peak all day in Beijing: Saturday begins Friday 16:00 UTC, and ends
    # (Monday begins) Sunday 16:00 UTC, inside one UTC day each.
    entry = {
        "input_cost_per_token": 2e-6,
        "output_cost_per_token": 4e-6,
        "off_peak_pricing": {
            "windows": [{"hours_utc": "07:00-07:00", "weekdays": [6, 7]}],
            "weekday_timezone": "Asia/Shanghai",
            "input_cost_per_token": 1e-6,
        },
    }
    path = _litellm_file(tmp_path, {"m-weekend": entry})
    friday, sunday = datetime(2026, 11, 6, tzinfo=UTC), datetime(2026, 11, 8, tzinfo=UTC)
    got = [
        pricing.lookup_prices("m-weekend", day.timestamp() + hour * 3600, path)
        for day in (friday, sunday)
        for hour in (15.99, 16)
    ]
    assert [p.input_mtok if p else None for p in got] == [2, 1, 1, 2]
    days = [
        pricing.day_prices("m-weekend", int(d.timestamp() // 86400), path) for d in (friday, sunday)
    ]
    assert [d.changes for d in days] == [(16 * 3600.0,), (16 * 3600.0,)]


@pytest.mark.parametrize(
    "off_peak",
    [
        {"hours_utc": "01:00-02:00", "input_cost_per_token": "nan"},
        {"hours_utc": "01:00-02:00", "output_cost_per_token": -1e-6},
    ],
    ids=["nan", "negative"],
)
def test_a_bad_off_peak_rate_is_a_clear_error(tmp_path: Path, off_peak: Any) -> None:
    from cachediag.errors import PricingError
    from cachediag.pricing.overrides import load_price_file

    entry = {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}
    path = _litellm_file(tmp_path, {"m-1": {**entry, "off_peak_pricing": off_peak}})
    with pytest.raises(PricingError, match=r"m-1: .*(finite|>= 0)"):
        load_price_file(path)
