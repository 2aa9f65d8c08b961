"""Price lookup: genai-prices by default, LiteLLM and cachediag price files as overrides.

Expected prices are those of ../shared/spec/pricing.md's table (USD per million tokens),
not values read back from the library under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.analysis.costs import request_cost_usd
from cachediag.cli import main
from cachediag.errors import PricingError
from cachediag.model import RequestRecord
from cachediag.pricing import lookup_prices, price_function, pricing_source
from tests.conftest import ROOT, SPOTTER_SESSION


def epoch(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


FEB_2026 = epoch("2026-02-12")


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        # model: (input, 5m write, 1h write, read, output) from pricing.md
        ("claude-opus-4-6", (5, 6.25, 10, 0.5, 25)),
        ("claude-opus-4-1-20250805", (15, 18.75, 30, 1.5, 75)),
        ("claude-sonnet-4-20250514", (3, 3.75, 6, 0.3, 15)),
        ("claude-sonnet-4-5-20250929", (3, 3.75, 6, 0.3, 15)),
        ("claude-haiku-4-5-20251001", (1, 1.25, 2, 0.1, 5)),
    ],
)
def test_genai_prices_match_the_spec_table(model: str, expected: tuple[float, ...]) -> None:
    p = lookup_prices(model, FEB_2026)
    assert p is not None
    got = (
        p.input_mtok,
        p.cache_write_5m_mtok,
        p.cache_write_1h_mtok,
        p.cache_read_mtok,
        p.output_mtok,
    )
    assert got == pytest.approx(expected)
    assert p.source.startswith("genai-prices ")


def test_long_context_tier_and_price_history() -> None:
    # Sonnet 4.5 above 200k: $6 in, $22.50 out (pricing.md), for every token.
    sonnet = lookup_prices("claude-sonnet-4-5-20250929", FEB_2026)
    assert sonnet is not None and sonnet.long_context_threshold_tokens == 200_000
    long = sonnet.tier_for(200_001)
    assert (long.input_mtok, long.output_mtok) == pytest.approx((6, 22.5))
    assert sonnet.tier_for(200_000) is sonnet
    # 250,000 uncached input + 1,000 out in the long tier:
    # 250,000 * 6 / 1e6 + 1,000 * 22.5 / 1e6 = 1.5 + 0.0225 = 1.5225
    r = RequestRecord(
        at=FEB_2026,
        input_tokens=250_000,
        cache_read_tokens=0,
        cache_creation_tokens=0,
        output_tokens=1_000,
    )
    assert request_cost_usd(r, sonnet) == pytest.approx(1.5225)
    # genai-prices dates the end of Opus 4.6's long-context premium to 2026-03-13.
    later = lookup_prices("claude-opus-4-6", epoch("2026-04-01"))
    assert later is not None and later.long_context is None


def test_unknown_model_is_unpriced_not_zero() -> None:
    assert lookup_prices("mystery-model-9", FEB_2026) is None
    record = RequestRecord(
        at=FEB_2026,
        input_tokens=5,
        cache_read_tokens=0,
        cache_creation_tokens=0,
        output_tokens=1,
        model="mystery-model-9",
    )
    assert price_function()(record) is None


def test_lookups_are_memoised() -> None:
    first = lookup_prices("claude-opus-4-6", FEB_2026)
    assert lookup_prices("claude-opus-4-6", FEB_2026 + 3600) is first


def test_pricing_source_names_package_and_version() -> None:
    from genai_prices import __version__

    assert pricing_source() == f"genai-prices {__version__}"


def test_importing_pricing_does_not_load_price_data() -> None:
    # The status line imports cachediag.pricing on every run: the data must stay unloaded.
    code = "import sys, cachediag.pricing; print('genai_prices' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "False", out.stderr


OWN = {
    "source": "test contract",
    "models": {
        "claude-sonnet-4": [
            {
                "input_mtok": 3,
                "cache_write_5m_mtok": 3.75,
                "cache_write_1h_mtok": 6,
                "cache_read_mtok": 0.3,
                "output_mtok": 15,
            },
            {
                "since": "2026-03-01",
                "input_mtok": 2,
                "cache_write_5m_mtok": 2.5,
                "cache_write_1h_mtok": 4,
                "cache_read_mtok": 0.2,
                "output_mtok": 10,
            },
        ],
        "claude-sonnet-4-5": {
            "input_mtok": 3,
            "cache_write_5m_mtok": 3.75,
            "cache_write_1h_mtok": 6,
            "cache_read_mtok": 0.3,
            "output_mtok": 15,
            "long_context": {
                "threshold_tokens": 200000,
                "input_mtok": 6,
                "cache_write_5m_mtok": 7.5,
                "cache_write_1h_mtok": 12,
                "cache_read_mtok": 0.6,
                "output_mtok": 22.5,
            },
        },
    },
}


def write_json(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_own_price_file_prefix_match_and_history(tmp_path: Path) -> None:
    path = write_json(tmp_path, "prices.json", OWN)
    before = lookup_prices("claude-sonnet-4-20250514", FEB_2026, path)
    after = lookup_prices("claude-sonnet-4-20250514", epoch("2026-03-02"), path)
    assert before is not None and after is not None
    assert (before.input_mtok, after.input_mtok) == (3, 2)
    # The longest matching key wins: sonnet-4-5 is not priced as sonnet-4.
    s45 = lookup_prices("claude-sonnet-4-5-20250929", FEB_2026, path)
    assert s45 is not None and s45.tier_for(300_000).output_mtok == 22.5
    assert lookup_prices("claude-opus-4-6", FEB_2026, path) is None
    assert pricing_source(path) == "test contract"


def test_litellm_price_file(tmp_path: Path) -> None:
    data = {
        "sample_spec": {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0},
        "claude-sonnet-4-5": {
            "input_cost_per_token": 3e-06,
            "output_cost_per_token": 1.5e-05,
            "cache_creation_input_token_cost": 3.75e-06,
            "cache_creation_input_token_cost_above_1hr": 6e-06,
            "cache_read_input_token_cost": 3e-07,
            "input_cost_per_token_above_200k_tokens": 6e-06,
            "output_cost_per_token_above_200k_tokens": 2.25e-05,
            "cache_creation_input_token_cost_above_200k_tokens": 7.5e-06,
            "cache_read_input_token_cost_above_200k_tokens": 6e-07,
        },
        "anthropic/claude-haiku-4-5": {
            "input_cost_per_token": 1e-06,
            "output_cost_per_token": 5e-06,
            "cache_creation_input_token_cost": 1.25e-06,
            "cache_read_input_token_cost": 1e-07,
        },
    }
    path = write_json(tmp_path, "model_prices_and_context_window.json", data)
    s45 = lookup_prices("claude-sonnet-4-5-20250929", FEB_2026, path)
    assert s45 is not None
    assert (
        s45.input_mtok,
        s45.cache_write_5m_mtok,
        s45.cache_write_1h_mtok,
        s45.cache_read_mtok,
        s45.output_mtok,
    ) == pytest.approx((3, 3.75, 6, 0.3, 15))
    long = s45.tier_for(200_001)
    assert (long.input_mtok, long.cache_write_5m_mtok, long.output_mtok) == pytest.approx(
        (6, 7.5, 22.5)
    )
    # No 1h key: LiteLLM's own fallback, the 5m write price.
    haiku = lookup_prices("claude-haiku-4-5", FEB_2026, path)
    assert haiku is not None and haiku.cache_write_1h_mtok == pytest.approx(1.25)
    assert pricing_source(path) == "litellm file model_prices_and_context_window.json"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"models": {"x": {"input_mtok": 1}}}', "not a LiteLLM or cachediag price file"),
    ],
)
def test_bad_price_file_is_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    from cachediag.pricing.overrides import load_price_file

    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(PricingError, match=message):
        load_price_file(path)
    result = CliRunner().invoke(main, ["audit", "--pricing", str(path), str(SPOTTER_SESSION)])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and message in result.stderr


def test_sonnet_4_long_context_tier_is_filled_in() -> None:
    # pricing.md: Sonnet 4 above 200k prompt tokens: $6 in, $22.50 out for the whole request
    # (cache prices scale with input: 7.50 / 12 / 0.60).
    from cachediag.pricing import lookup_prices

    p = lookup_prices("claude-sonnet-4-20250514", 1_764_460_800.0)
    assert p is not None and p.long_context is not None
    assert p.long_context_threshold_tokens == 200_000
    lc = p.long_context
    assert (lc.input_mtok, lc.output_mtok) == (6.0, 22.5)
    assert (lc.cache_write_5m_mtok, lc.cache_write_1h_mtok, lc.cache_read_mtok) == (7.5, 12.0, 0.6)


def test_disk_prices_saved_by_a_worker_and_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Workers end with os._exit, so atexit never saves what they looked up; and two
    # runs (or a run and its workers) each saving what they loaded would drop the
    # other's entries. A worker flushes; every save merges with the file.
    from cachediag.analysis.costs import ModelPrices
    from cachediag.pricing.disk import DiskPrices
    from cachediag.pricing.slots import DayPrices

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    parent = DiskPrices()
    parent.get("a|1")  # loaded before the fork, as run_audit does
    prices = DayPrices((3600.0,), (ModelPrices(1, 1.25, 2, 0.1, 5), None))
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            parent.put("worker|1", prices)
            parent.flush()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    parent.put("parent|1", DayPrices())
    parent.flush()  # the loading process leaves saving to atexit
    assert DiskPrices().get("worker|1") == prices
    assert DiskPrices().get("parent|1") is None
    parent.save()
    saved = DiskPrices()
    assert saved.get("worker|1") == prices
    assert saved.get("parent|1") == DayPrices()
