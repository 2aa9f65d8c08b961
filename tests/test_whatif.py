"""TTL what-if on hand-built streams; every expected cost is worked out in the comments.

Prices (USD per million tokens): input 1, 5m write 1.25, 1h write 2, read 0.10, output 5
(Haiku 4.5's). Per thousand tokens: write 5m $0.00125, write 1h $0.002, read $0.0001.
A keep-alive reads the previous request's whole prompt and writes 1 output token ($0.000005).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachediag.analysis.costs import ModelPrices
from cachediag.analysis.ledger import LedgerEntry, Outcome, run_ledger
from cachediag.analysis.whatif import (
    Policy,
    PolicyResult,
    WhatIf,
    keep_alive_pings,
    replay_stream,
    replay_streams,
)
from cachediag.model import RebuildAnnounced, RebuildKind, RequestRecord

K = 1000
PRICES = ModelPrices(
    input_mtok=1,
    cache_write_5m_mtok=1.25,
    cache_write_1h_mtok=2,
    cache_read_mtok=0.1,
    output_mtok=5,
)


def price_of(record: RequestRecord) -> ModelPrices | None:
    return None if record.model == "unpriced" else PRICES


def req(
    at: float, read: int, write: int, *, ttl: str = "5m", model: str = "m", input_tokens: int = 0
) -> RequestRecord:
    one_hour = ttl == "1h"
    return RequestRecord(
        at=at,
        input_tokens=input_tokens,
        cache_read_tokens=read,
        cache_creation_tokens=write,
        output_tokens=0,
        ttl="1h" if one_hour else "5m",
        cache_creation_5m_tokens=0 if one_hour else write,
        cache_creation_1h_tokens=write if one_hour else 0,
        model=model,
    )


def entries(*records: RequestRecord | RebuildAnnounced) -> list[LedgerEntry]:
    return run_ledger(records)[1]


def run_all(stream: list[LedgerEntry]) -> WhatIf:
    return replay_streams([stream], price_of)


# Two 10-minute pauses in a 5m-TTL stream; every turn writes a 10K tail.
PAUSES = entries(
    req(0, 0, 100 * K),  # cold
    req(60, 100 * K, 10 * K),  # hit
    req(660, 0, 120 * K),  # miss after 600 s: re-processes min(110K, 120K) = 110K
    req(720, 120 * K, 10 * K),  # hit
    req(1320, 0, 140 * K),  # miss after 600 s: re-processes 130K
)


def test_the_pause_stream_is_what_the_ledger_says() -> None:
    assert [e.outcome for e in PAUSES] == [
        Outcome.COLD,
        Outcome.HIT,
        Outcome.MISS,
        Outcome.HIT,
        Outcome.MISS,
    ]
    assert [e.reprocessed_tokens for e in PAUSES] == [0, 0, 110 * K, 0, 130 * K]


def test_as_happened_and_5m_everywhere() -> None:
    # r0 100K w5 = 0.125; r1 100K read 0.01 + 10K w5 0.0125 = 0.0225; r2 120K w5 = 0.15;
    # r3 120K read 0.012 + 10K w5 0.0125 = 0.0245; r4 140K w5 = 0.175.
    # 0.125 + 0.0225 + 0.15 + 0.0245 + 0.175 = 0.497, 2 misses.
    w = run_all(PAUSES)
    for policy in (Policy.AS_HAPPENED, Policy.TTL_5M):
        assert w.results[policy].cost_usd == pytest.approx(0.497)
        assert w.results[policy].misses == 2


def test_1h_everywhere_turns_pause_misses_into_hits() -> None:
    # r0 100K w1 = 0.2; r1 0.01 + 10K w1 0.02 = 0.03;
    # r2 alive (600 < 3600): reads 110K (0.011), writes 10K (0.02) = 0.031;
    # r3 0.012 + 0.02 = 0.032; r4 reads 130K (0.013) + 10K w1 (0.02) = 0.033.
    # 0.2 + 0.03 + 0.031 + 0.032 + 0.033 = 0.326, no miss.
    r = run_all(PAUSES).results[Policy.TTL_1H]
    assert r.cost_usd == pytest.approx(0.326)
    assert r.misses == 0


def test_keep_alive_pings_before_each_expiry() -> None:
    # r0 0.125; r1 0.0225.
    # r2: pings at 270 s and 540 s into the 600 s pause, each reading r1's 110K prompt:
    #     2 * (0.011 + 0.000005) = 0.02201; alive (600 - 540 < 300): 110K read 0.011 +
    #     10K w5 0.0125 = 0.0235.
    # r3 0.0245.
    # r4: 2 pings reading r3's 130K: 2 * (0.013 + 0.000005) = 0.02601; hit: 0.013 + 0.0125
    #     = 0.0255.
    # 0.125 + 0.0225 + 0.02201 + 0.0235 + 0.0245 + 0.02601 + 0.0255 = 0.26902
    r = run_all(PAUSES).results[Policy.KEEP_ALIVE]
    assert r.cost_usd == pytest.approx(0.26902)
    assert (r.misses, r.keep_alive_requests) == (0, 4)


def test_evidence_rule_switches_after_first_pause_miss() -> None:
    # r0 0.125; r1 0.0225; r2 misses (600 s pause, under an hour): paid at 5m, 0.15,
    # and the rule switches. r3 writes its tail at 1h: 0.012 + 10K w1 0.02 = 0.032.
    # r4: the 1h entry is alive after 600 s: 130K read 0.013 + 10K w1 0.02 = 0.033.
    # 0.125 + 0.0225 + 0.15 + 0.032 + 0.033 = 0.3625, 1 miss.
    r = run_all(PAUSES).results[Policy.EVIDENCE]
    assert r.cost_usd == pytest.approx(0.3625)
    assert r.misses == 1


def test_recommendation_names_the_cheapest_policy() -> None:
    # keep-alive 0.26902 vs 0.497: saves 0.22798, 0.22798 / 0.497 = 45.9%.
    w = run_all(PAUSES)
    assert w.best() is Policy.KEEP_ALIVE
    assert w.recommendation() == (
        "keep the cache alive through pauses: it would have saved $0.23 (45.9%)"
    )


def test_keep_alive_recommendation_asks_for_nothing_claude_code_lacks() -> None:
    # Claude Code sends no keep-alive requests: the JSON's sentence names the effect
    # (as the audit's text does, whose "How:" line then says what Claude Code can do).
    from cachediag.analysis.advice import KEEP_ALIVE_HOW
    from cachediag.analysis.whatif import ADVICE

    advice = ADVICE[Policy.KEEP_ALIVE]
    assert "send" not in advice and "request" not in advice
    assert "Claude Code sends no keep-alive requests" in KEEP_ALIVE_HOW


# An overnight pause: no TTL would have kept the prefix.
OVERNIGHT = entries(req(0, 0, 100 * K), req(7200, 0, 110 * K))


def test_overnight_pause_favours_what_happened() -> None:
    w = run_all(OVERNIGHT)
    # (a) 100K w5 0.125 + 110K w5 0.1375 = 0.2625
    assert w.results[Policy.AS_HAPPENED].cost_usd == pytest.approx(0.2625)
    # (c) the hour expires too: 100K w1 0.2 + 110K w1 0.22 = 0.42, still a miss
    assert w.results[Policy.TTL_1H].cost_usd == pytest.approx(0.42)
    assert w.results[Policy.TTL_1H].misses == 1
    # (d) a keep-alive gives up after an hour: 13 pings (270 s ... 3510 s), each reading
    # 100K: 13 * 0.010005 = 0.130065; the prefix then expires: 0.125 + 0.130065 + 0.1375
    k = w.results[Policy.KEEP_ALIVE]
    assert k.cost_usd == pytest.approx(0.392565)
    assert (k.misses, k.keep_alive_requests) == (1, 13)
    # (e) a 2-hour pause is not one the hour would have covered: no switch, as (a).
    assert w.results[Policy.EVIDENCE].cost_usd == pytest.approx(0.2625)
    assert w.best() is Policy.AS_HAPPENED
    assert "keep what you have" in w.recommendation()


# A 1h stream whose 10-minute pause was covered: a 5m policy would have missed.
ONE_HOUR = entries(req(0, 0, 100 * K, ttl="1h"), req(600, 100 * K, 10 * K, ttl="1h"))


def test_shorter_ttl_turns_covered_pause_into_miss() -> None:
    w = run_all(ONE_HOUR)
    # (a) 100K w1 0.2 + 100K read 0.01 + 10K w1 0.02 = 0.23, no miss
    assert w.results[Policy.AS_HAPPENED].cost_usd == pytest.approx(0.23)
    assert w.results[Policy.AS_HAPPENED].misses == 0
    # (b) 100K w5 0.125; after 600 s the 5m entry is gone: 110K w5 0.1375 = 0.2625
    assert w.results[Policy.TTL_5M].cost_usd == pytest.approx(0.2625)
    assert w.results[Policy.TTL_5M].misses == 1
    # (c) same as what happened
    assert w.results[Policy.TTL_1H].cost_usd == pytest.approx(0.23)
    # (e) starts at 5m, so pays the miss before it can switch: 0.2625
    assert w.results[Policy.EVIDENCE].cost_usd == pytest.approx(0.2625)
    assert w.results[Policy.EVIDENCE].misses == 1


def test_misses_with_other_causes_stay_misses() -> None:
    # A model switch 60 s in: r1 re-writes 100K whatever the TTL.
    stream = entries(req(0, 0, 100 * K, model="a"), req(60, 0, 100 * K, model="b"))
    r = replay_stream(stream, Policy.TTL_1H, price_of)
    # 100K w1 0.2 + 100K w1 0.2 = 0.4
    assert r.cost_usd == pytest.approx(0.4)
    assert r.misses == 1


def test_unpriced_requests_are_counted_not_priced() -> None:
    stream = entries(req(0, 0, 100 * K, model="unpriced"), req(60, 100 * K, 10 * K))
    r = replay_stream(stream, Policy.AS_HAPPENED, price_of)
    # only r1: 0.01 + 0.0125 = 0.0225
    assert r.cost_usd == pytest.approx(0.0225)
    assert r.unpriced_requests == 1


# A 1h entry, a 20-minute pause, a compaction announced a minute before the next request:
# the compaction touched the cache, so the cache was idle 60 s (spec §2), while a
# keep-alive sender pinged through the whole 1200 s pause (at 270, 540, 810, 1080 s).
def _after_compaction(read: int, write: int) -> list[LedgerEntry]:
    return run_ledger(
        [
            req(0, 0, 100 * K, ttl="1h"),
            RebuildAnnounced(1140.0, RebuildKind.COMPACTION),
            req(1200, read, write),
        ]
    )[1]


def test_a_compaction_in_the_pause_keeps_a_hit_a_hit() -> None:
    stream = _after_compaction(100 * K, 1 * K)
    assert stream[1].outcome is Outcome.HIT
    both = run_all(stream)
    # r0 w5 0.125; r1 idle 60 s < 300: still a hit, 100K read 0.01 + 1K w5 0.00125.
    for policy in (Policy.TTL_5M, Policy.EVIDENCE):
        r = both.results[policy]
        assert r.cost_usd == pytest.approx(0.13625), policy
        assert r.misses == 0, policy
        assert replay_stream(stream, policy, price_of) == r
    # Keep-alive: 4 pings reading r0's 100K, 4 * (0.01 + 0.000005) = 0.04002.
    r = both.results[Policy.KEEP_ALIVE]
    assert r.cost_usd == pytest.approx(0.125 + 0.04002 + 0.01125)
    assert (r.misses, r.keep_alive_requests) == (0, 4)


def test_keep_alives_before_a_compaction_are_sent() -> None:
    stream = _after_compaction(0, 30 * K)
    assert stream[1].outcome is Outcome.EXPECTED
    # r0 w5 0.125; 4 pings 0.04002 (the sender cannot know a compaction is coming);
    # r1 rebuilds 30K at w5 0.0375.
    r = run_all(stream).results[Policy.KEEP_ALIVE]
    assert r.cost_usd == pytest.approx(0.125 + 0.04002 + 0.0375)
    assert (r.misses, r.keep_alive_requests) == (0, 4)
    assert replay_stream(stream, Policy.KEEP_ALIVE, price_of) == r


@pytest.mark.parametrize(
    ("idle", "pings"), [(0, 0), (270, 0), (271, 1), (540, 1), (541, 2), (10_000, 13)]
)
def test_keep_alive_ping_count(idle: float, pings: int) -> None:
    assert keep_alive_pings(idle) == pings


# Pauses around every threshold the replay looks at: the keep-alive interval, both TTLs,
# the keep-alive's hour; and unpriced requests, 1h writes, cold rebuilds. Prices that no
# float holds exactly and token counts of any size, so that a sum added in another order
# shows in the last bits; a long-context tier, so that the tier of each request counts.
_GAPS = st.sampled_from(
    [0.0, 5.0, 200.0, 270.0, 271.0, 299.0, 301.0, 600.0, 3599.0, 3601.0, 9000.0]
)
_REQUEST = st.tuples(
    _GAPS,
    st.integers(0, 250_000),
    st.integers(0, 80_000),
    st.sampled_from(["5m", "1h"]),
    st.sampled_from(["m", "m", "m", "unpriced"]),
    st.integers(0, 3000),
    st.sampled_from([None, None, None, 0.0, 0.5, 0.95]),
)
_ODD = ModelPrices(
    input_mtok=3.3,
    cache_write_5m_mtok=4.125,
    cache_write_1h_mtok=6.6,
    cache_read_mtok=0.33,
    output_mtok=16.5,
    long_context_threshold_tokens=200_000,
    long_context=ModelPrices(6.6, 8.25, 13.2, 0.66, 24.75),
)


def _odd_price_of(record: RequestRecord) -> ModelPrices | None:
    return None if record.model == "unpriced" else _ODD


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_REQUEST, min_size=1, max_size=25), min_size=1, max_size=3))
def test_one_pass_replay_is_the_per_policy_replay(
    streams: list[list[tuple[float, int, int, str, str, int, float | None]]],
) -> None:
    # ``replay_streams`` replays every policy in one pass, with prices looked up once;
    # ``replay_stream`` walks one policy at a time. Same sums, to the last bit.
    built = []
    for stream in streams:
        at = 0.0
        records: list[RequestRecord | RebuildAnnounced] = []
        for gap, read, write, ttl, model, uncached, announce in stream:
            if announce is not None:
                # A compaction some way into the pause (spec §2: it touches the cache).
                records.append(RebuildAnnounced(at + gap * announce, RebuildKind.COMPACTION))
            at += gap
            records.append(
                RequestRecord(
                    at=at,
                    input_tokens=uncached,
                    cache_read_tokens=read,
                    cache_creation_tokens=write,
                    output_tokens=137,
                    ttl="1h" if ttl == "1h" else "5m",
                    model=model,
                )
            )
        built.append(entries(*records))
    together = replay_streams(built, _odd_price_of)
    for policy in Policy:
        expected = PolicyResult(policy)
        for stream_entries in built:
            expected.add(replay_stream(stream_entries, policy, _odd_price_of))
        assert together.results[policy] == expected
