"""``analysis.totals.session_totals`` and ``SessionTotals`` (the line under analyze's
reports) against the per-request figures of the session's own JSON: the same requests,
the same prices, the misses' and rebuilds' costs kept apart by each request's outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.analysis.totals import SessionTotals, session_totals
from cachediag.pipeline import Run
from cachediag.pricing import price_function
from cachediag.report.serialize import session_dict
from tests.conftest import FIXTURES

PRICES = FIXTURES / "prices" / "golden.json"


def _sessions(folder: Path) -> list[SessionAnalysis]:
    return list(Run(jobs=1).sessions([folder], None, 1.8e9))


def _requests(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [*obj["requests"], *(r for s in obj["streams"] for r in s["requests"])]


@pytest.mark.parametrize("folder", ["real", "providers", "captures"])
def test_a_session_adds_up_its_own_requests(folder: str) -> None:
    price = price_function(PRICES)
    sessions = _sessions(FIXTURES / folder)
    assert len(sessions) > 3
    for a in sessions:
        t = session_totals(a, price)
        obj = session_dict(a, requests=True, price_of=price)
        rows = _requests(obj)
        priced = [r for r in rows if "cost_usd" in r and r["cost_usd"] is not None]
        assert t.requests == len(rows) == obj["totals"]["requests"]
        assert t.input_tokens == obj["totals"]["input_tokens"]
        assert t.cache_read_tokens == obj["totals"]["cache_read_tokens"]
        assert t.misses == sum(r["outcome"] == "miss" for r in rows)
        assert t.expected_rebuilds == sum(r["outcome"] == "expected" for r in rows)
        assert t.reprocessed_tokens == sum(r["reprocessed_tokens"] for r in rows)
        assert t.unpriced_requests == len(rows) - len(priced)
        assert t.cost_usd == pytest.approx(sum(r["cost_usd"] for r in priced), rel=1e-12)
        for outcome, total in (("miss", t.miss_cost_usd), ("expected", t.rebuild_cost_usd)):
            paid = sum(r["miss_cost_usd"] or 0.0 for r in priced if r["outcome"] == outcome)
            assert total == pytest.approx(paid, rel=1e-12, abs=1e-15)
        # Unpriced, a session still has its counts, and no cost at all.
        bare = session_totals(a)
        assert (bare.requests, bare.misses, bare.cost_usd) == (t.requests, t.misses, 0.0)
        assert bare.unpriced_requests == 0


def test_the_run_total_is_the_sum_of_its_sessions() -> None:
    price = price_function(PRICES)
    sessions = _sessions(FIXTURES / "real")
    run = SessionTotals()
    for a in sessions:
        run.add(a, price)
    each = [session_totals(a, price) for a in sessions]
    assert run.sessions == len(sessions) and run.priced
    assert run.totals.requests == sum(t.requests for t in each)
    assert run.totals.misses == sum(t.misses for t in each)
    assert run.totals.cost_usd == pytest.approx(sum(t.cost_usd for t in each), rel=1e-12)
    recache = sum(t.miss_cost_usd + t.rebuild_cost_usd for t in each)
    assert recache > 0 and run.recache_usd == pytest.approx(recache, rel=1e-12)
    unpriced = SessionTotals()
    unpriced.add(sessions[0], None)
    assert not unpriced.priced and unpriced.recache_usd == 0.0
