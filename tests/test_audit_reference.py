"""The fast ``audit_session`` gives, to the last bit, what the spec's own reading of an
audit gives (``tests/reference_audit.py``, which uses none of the implementation's
accounting): on generated sessions of several streams, models (priced, with a
long-context tier, unpriced, unnamed), writes with and without their 5m / 1h split, pauses
across every TTL and keep-alive threshold and across days, windows and zones (whole-hour,
half-hour, DST)."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cachediag.analysis.costs import ModelPrices
from cachediag.analysis.group_keys import Calendar, day_of, month_of, week_of
from cachediag.analysis.rollup import audit_session
from cachediag.analysis.session_analysis import analyze_session
from cachediag.model import (
    MAIN_STREAM,
    RebuildAnnounced,
    RebuildKind,
    RequestRecord,
    SessionLog,
    StreamKind,
)
from tests.reference_audit import reference_audit_session

PRICES = {
    "opus": ModelPrices(5.5, 6.875, 11.0, 0.55, 27.5),
    "sonnet": ModelPrices(
        3.3,
        4.125,
        6.6,
        0.33,
        16.5,
        long_context_threshold_tokens=200_000,
        long_context=ModelPrices(6.6, 8.25, 13.2, 0.66, 24.75),
    ),
}
STREAMS = [
    (MAIN_STREAM, StreamKind.MAIN),
    ("agent-a1", StreamKind.SUBAGENT),
    ("side-call-1", StreamKind.SIDE_CALL),
]
ZONES = [None, "UTC", "Europe/Paris", "Asia/Kolkata", "America/St_Johns"]
START = 1_774_821_600.0  # 2026-03-29 22:00 UTC, hours before Europe's clocks go forward

_GAP = st.sampled_from(
    [0.0, 3.5, 60.0, 250.0, 270.0, 280.0, 301.0, 900.0, 3599.0, 3700.0, 40_000.0, 90_000.0]
)
_REQUEST = st.tuples(
    _GAP,
    st.integers(0, 260_000),  # read
    st.integers(0, 90_000),  # written
    st.integers(0, 5_000),  # uncached input
    st.sampled_from(["5m", "1h"]),
    st.sampled_from(["opus", "opus", "sonnet", "mystery", None]),
    # The 1h share of the write when the log splits it (None: it does not).
    st.sampled_from([None, None, 0.0, 0.25, 1.0]),
)


def price_of(record: RequestRecord) -> ModelPrices | None:
    return None if record.model is None else PRICES.get(record.model)


# The long-context tier's edge, which random sizes almost never land on: prompts of
# exactly 200,000 tokens (the base price) and 200,001 (the whole request at the tier's).
_EDGE = [
    (0.0, 0, 0, 200_000, "5m", "sonnet", None),
    (60.0, 199_000, 1_000, 0, "5m", "sonnet", None),
    (60.0, 200_000, 1, 0, "1h", "sonnet", 1.0),
    (400.0, 0, 200_001, 0, "5m", "sonnet", None),
]


@settings(max_examples=200, deadline=None)
@example([_EDGE], None, None, None, 4)
@given(
    st.lists(st.lists(_REQUEST, min_size=0, max_size=20), min_size=1, max_size=3),
    st.sampled_from(ZONES),
    st.none() | st.floats(START - 1000, START + 200_000),
    st.none() | st.floats(START, START + 400_000),
    st.integers(0, 4),
)
def test_audit_session_is_the_reference(
    streams: list[list[tuple[float, int, int, int, str, str | None, float | None]]],
    zone_name: str | None,
    since: float | None,
    until: float | None,
    top: int,
) -> None:
    log = SessionLog("s", "s.jsonl", "claude-code", project="p")
    for (stream_id, kind), requests in zip(STREAMS, streams, strict=False):
        stream = log.stream(stream_id, kind)
        at = START
        for gap, read, written, uncached, ttl, model, share_1h in requests:
            at += gap
            c1h = None if share_1h is None else int(written * share_1h)
            stream.items.append(
                RequestRecord(
                    at=at,
                    input_tokens=uncached,
                    cache_read_tokens=read,
                    cache_creation_tokens=written,
                    output_tokens=211,
                    # prompt-cache.md §1: a request that wrote 1h cache is a 1h request.
                    ttl="1h" if ttl == "1h" or (c1h or 0) > 0 else "5m",
                    cache_creation_5m_tokens=None if c1h is None else written - c1h,
                    cache_creation_1h_tokens=c1h,
                    model=model,
                    stream=stream_id,
                )
            )
    analysis = analyze_session(log, 0.0)
    options = {"since": since, "until": until, "top": top}
    if zone_name is not None:
        options["zone"] = ZoneInfo(zone_name)
    fast = audit_session(analysis, price_of, **options)  # type: ignore[arg-type]
    reference = reference_audit_session(analysis, price_of, **options)  # type: ignore[arg-type]
    assert fast == reference


def _opus(at: float, read: int, written: int, ttl: str = "5m") -> RequestRecord:
    return RequestRecord(
        at=at,
        input_tokens=10,
        cache_read_tokens=read,
        cache_creation_tokens=written,
        output_tokens=211,
        ttl="1h" if ttl == "1h" else "5m",
        model="opus",
    )


@pytest.mark.parametrize(
    ("read", "written"),
    [
        (50_000, 100),  # a hit: under 5m and evidence the fast audit replays it as a miss
        (0, 30_000),  # a rebuild: the fast keep-alive sends none of the 4 pings of the pause
    ],
)
def test_a_compaction_in_a_pause_touches_the_cache(read: int, written: int) -> None:
    # A 1h entry, 20 minutes idle, a compaction announced a minute before the next request.
    log = SessionLog("s", "s.jsonl", "claude-code", project="p")
    stream = log.stream(MAIN_STREAM, StreamKind.MAIN)
    stream.items.append(_opus(START, 0, 50_000, "1h"))
    stream.items.append(RebuildAnnounced(START + 1140.0, RebuildKind.COMPACTION))
    stream.items.append(_opus(START + 1200.0, read, written))
    analysis = analyze_session(log, 0.0)
    reference = reference_audit_session(analysis, price_of)
    assert audit_session(analysis, price_of).whatif == reference.whatif


@pytest.mark.parametrize("zone_name", ["UTC", "Europe/Paris", "Asia/Kolkata", "America/St_Johns"])
def test_calendar_keys_are_day_week_and_month(zone_name: str) -> None:
    # Memoised per minute; every 7 minutes (and a second either side of each whole hour)
    # across the spring and autumn clock changes of Europe and North America.
    zone = ZoneInfo(zone_name)
    calendar = Calendar(zone)
    for start in (1_772_928_000.0, 1_774_742_400.0, 1_792_800_000.0, 1_793_491_200.0):
        for step in range(0, 3 * 86_400, 420):
            for at in (start + step, start + step // 3600 * 3600 - 1, start + step // 3600 * 3600):
                expected = (day_of(at, zone), week_of(at, zone), month_of(at, zone))
                assert calendar.keys(at) == expected, (zone_name, at)
