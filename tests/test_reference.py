"""cachediag's accounting against an independent reading of the spec and independent data.

``tests/reference_ledger.py`` is a second, plain implementation of prompt-cache.md §1-3
written without reading cachediag's ingest or analysis code. (ccusage's recorded token
totals, a third party's deduplication of the same transcripts, are compared in
``tests/test_audit.py``.)
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cachediag.cli import main
from tests import reference_ledger as ref
from tests.conftest import REAL, ROOT, RULES

SUMMARY_FIELDS = (
    "caching_observed",
    "ttl",
    "expires_at",
    "requests",
    "misses",
    "expected_rebuilds",
    "hit_ratio",
    "cache_write_tokens",
    "miss_recache_tokens",
    "last_miss_at",
    "recache_tokens_if_cold",
    "hits",
    "cold_starts",
)
TOTAL_FIELDS = ("input_tokens", "cache_read_tokens", "cache_creation_tokens", "output_tokens")


def analyze(path: Path, now: float = 0.0) -> dict[str, Any]:
    res = CliRunner().invoke(
        main, ["analyze", "--json", "--requests", "--now", repr(now), str(path)]
    )
    assert res.exit_code == 0, res.output
    result: dict[str, Any] = json.loads(res.stdout)
    return result


def assert_same(ours: Any, theirs: Any, what: str) -> None:
    if isinstance(ours, float) or isinstance(theirs, float):
        assert ours is not None and theirs is not None, f"{what}: {ours!r} != {theirs!r}"
        # Absolute tolerance only: a relative one would hide seconds on epoch timestamps.
        assert ours == pytest.approx(theirs, rel=0, abs=1e-6), what
    else:
        assert ours == theirs, f"{what}: cachediag {ours!r}, reference {theirs!r}"


def compare_stream(
    label: str, stream: ref.Stream, pc: dict[str, Any], requests: list[dict[str, Any]], now: float
) -> None:
    entries = ref.classify(stream.requests)
    assert len(requests) == len(entries), f"{label}: request count"
    for i, (got, want) in enumerate(zip(requests, entries, strict=True)):
        where = f"{label} request {i} (line {got['line']})"
        assert_same(got["message_id"], want.request.key[0], f"{where} message_id")
        assert_same(got["at"], want.request.at, f"{where} at")
        assert_same(got["output_tokens"], want.request.output_tokens, f"{where} output_tokens")
        assert_same(got["outcome"], want.outcome, f"{where} outcome")
        assert_same(got["ttl"], want.ttl, f"{where} ttl")
        assert_same(got["announced"] is not None, want.request.announced, f"{where} announced")
    summary = ref.summarize(stream, now)
    for key in (*SUMMARY_FIELDS, "warm"):
        assert_same(pc[key], summary[key], f"{label} prompt_cache.{key}")


def check_session_file(path: Path) -> None:
    out = analyze(path)
    subagents = sorted(path.with_suffix("").glob("subagents/**/*.jsonl"))
    assert out["totals"] == ref.read_totals([path, *subagents]), "totals"
    # A file of sidechain lines alone is a subagent stream of the session its lines name:
    # the main conversation is not in the input.
    alone = ref.all_sidechain(path)
    if alone:
        assert out["prompt_cache"] is None and out["requests"] == []
        assert out["session_id"] == ref.read_lines(path)[0][1]["sessionId"]
        assert [Path(s["source"]).name for s in out["streams"]] == [path.name]
    else:
        compare_stream(
            "main", ref.read_stream(path, main_only=True), out["prompt_cache"], out["requests"], 0.0
        )
    compare_other_streams(path, out, inline=not alone)


def compare_other_streams(path: Path, out: dict[str, Any], *, inline: bool, now: float = 0) -> None:
    """Subagent files and 1.0.x inline sidechains against the reference."""
    sidechains = ref.read_inline_sidechains(path) if inline else {}
    seen_inline: list[str] = []
    for s in out["streams"]:
        source = Path(s["source"])
        if not source.is_absolute():
            source = ROOT / source
        if not inline or source.resolve() != path.resolve():
            stream = ref.read_stream(source, main_only=False)
        else:
            # Inline sidechains: the spec does not say how to split them; the reference
            # splits by parentUuid chain, and the two must agree on the split.
            ids = [r["message_id"] for r in s["requests"]]
            match = [u for u, c in sidechains.items() if [r.key[0] for r in c.requests] == ids]
            assert len(match) == 1, f"{s['id']}: no reference sidechain has its requests"
            seen_inline.append(match[0])
            stream = sidechains[match[0]]
        compare_stream(s["id"], stream, s["prompt_cache"], s["requests"], now)
    assert sorted(seen_inline) == sorted(sidechains), "inline sidechain streams"


def transcripts(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*/*.jsonl"))


BUNDLED = transcripts(REAL) if REAL.is_dir() else []
BUNDLED = [p for p in BUNDLED if p.parent.name != "claude-trace"]


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bundled_transcript_matches_reference(path: Path) -> None:
    check_session_file(path)


RULE_FILES = sorted(RULES.glob("*compaction*.jsonl"))


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.stem)
def test_rule_fixture_matches_reference(path: Path) -> None:
    """The hand-built compaction transcripts too: both forms, 1.0.x and 2.x."""
    check_session_file(path)


def test_corpus_transcripts_match_reference(corpus: Path) -> None:
    files = transcripts(corpus / "claude-code")
    assert files
    # Subagent files whose session file is not in the corpus, analysed on their own.
    orphans = [
        p
        for p in sorted((corpus / "claude-code").glob("*/*/subagents/agent-*.jsonl"))
        if not p.parent.parent.with_suffix(".jsonl").exists()
    ]
    assert orphans
    files += orphans
    for path in files:
        check_session_file(path)


def test_reference_reads_bundled_session_as_documented() -> None:
    """Pin the reference itself on numbers worked out from the file with grep, so that a
    reference that drifted into agreeing with everything would fail here."""
    path = REAL / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    stream = ref.read_stream(path, main_only=True)
    # 254 assistant lines with isSidechain false carry 139 distinct message.id values
    # (jq -r 'select(.type=="assistant" and .isSidechain==false) | .message.id' FILE
    #  | sort -u | wc -l).
    assert len(stream.requests) == 139
    # One compact_boundary in the file: exactly one request is announced.
    assert sum(r.announced for r in stream.requests) == 1


# --- random sessions ----------------------------------------------------------------

T0 = 1_770_000_000.0  # whole seconds, so hand-worked gaps are exact floats
MODELS = ("claude-opus-4-6", "claude-sonnet-4-5-20250929")


def iso(at: float) -> str:
    ms = round(at * 1000)
    dt = datetime.fromtimestamp(ms // 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


EDGES_MS = (299_999, 300_000, 300_001, 3_599_999, 3_600_000, 3_600_001)
# Gaps in milliseconds, crowded around the two TTL edges (300 s and 3600 s).
gap_ms = st.one_of(
    st.integers(0, 60_000),
    st.integers(295_000, 305_000),
    st.sampled_from(EDGES_MS),
    st.integers(3_590_000, 3_610_000),
    st.integers(0, 8_000_000),
)


@st.composite
def usage(draw: st.DrawFn, prev_total: int, caching: bool) -> dict[str, int]:
    uncached = draw(st.one_of(st.integers(0, 10), st.integers(0, 5000)))
    if not caching:
        return {
            "input": uncached + draw(st.integers(0, 50_000)),
            "read": 0,
            "creation": 0,
            "c1h": 0,
        }
    scenario = draw(st.sampled_from(["free", "free", "share_edge", "size_edge"]))
    if scenario == "free":
        read = draw(
            st.one_of(
                st.just(0),
                st.just(prev_total),
                st.integers(0, prev_total),
                st.integers(0, prev_total // 2),
                st.integers(0, 200_000),
            )
        )
        creation = draw(st.one_of(st.just(0), st.integers(0, 3000), st.integers(0, 150_000)))
    else:
        # cur.total >= prev_total, so M = prev_total and the edge is exact: read just
        # around 0.95 * M, or M - read just around 2000.
        d = draw(st.integers(-2, 2))
        read = max(
            0, -(-95 * prev_total // 100) + d if scenario == "share_edge" else prev_total - 2000 + d
        )
        creation = max(0, prev_total - read - uncached) + draw(st.integers(0, 3000))
    c1h = draw(st.one_of(st.just(0), st.just(creation), st.integers(0, creation)))
    return {"input": uncached, "read": read, "creation": creation, "c1h": c1h}


@st.composite
def sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Events of one session: ``request`` (with its copies) and ``boundary``."""
    events: list[dict[str, Any]] = []
    prev_at = last_ms = 0  # the previous response's first and last line
    prev_total = draw(st.integers(0, 100_000))
    # Some sessions start without caching (or never cache): the `uncached` outcome.
    uncached_first = draw(st.sampled_from([0, 0, 0, 1, 2, 10]))
    for i in range(draw(st.integers(1, 10))):
        # The gap runs from the previous response's first line (its `at`) to this one's.
        at_ms = max(prev_at + draw(gap_ms), last_ms)
        kinds = [
            draw(st.sampled_from(["compact_boundary", "microcompact_boundary"]))
            for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2])))
        ]
        # Boundaries anywhere in the pause, or exactly a TTL edge before this request.
        edges = [last_ms, at_ms, *(at_ms - e for e in EDGES_MS if at_ms - e >= last_ms)]
        offsets = sorted(
            draw(st.one_of(st.integers(last_ms, at_ms), st.sampled_from(edges))) for _ in kinds
        )
        for kind, when in zip(kinds, offsets, strict=True):
            events.append({"kind": "boundary", "subtype": kind, "at_ms": when})
        u = draw(usage(prev_total, caching=i >= uncached_first))
        prev_total = u["input"] + u["read"] + u["creation"]
        copies = draw(st.integers(1, 3))
        outs = draw(st.lists(st.integers(1, 900), min_size=copies, max_size=copies))
        steps = draw(st.lists(st.integers(0, 4000), min_size=copies - 1, max_size=copies - 1))
        times = [at_ms + sum(steps[:k]) for k in range(copies)]
        events.append(
            {
                "kind": "request",
                "n": i,
                "usage": u,
                "outputs": outs,
                "at_ms": times,
                "model": draw(st.sampled_from(MODELS)),
                "sidechain": draw(st.sampled_from(["none", "none", "own", "replay"])),
                "api_error_after": draw(st.booleans()),
            }
        )
        prev_at, last_ms = times[0], times[-1]
    if draw(st.integers(0, 2)) == 0:
        # A compaction after the last request: a rebuild announced, not yet consumed.
        events.append(
            {
                "kind": "boundary",
                "subtype": "compact_boundary",
                "at_ms": last_ms + draw(st.integers(0, 10_000)),
            }
        )
    return events


def envelope(kind: str, at_ms: int, n: int, sidechain: bool = False) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": f"u-{kind}-{n}-{at_ms}",
        "parentUuid": None,
        "timestamp": iso(T0 + at_ms / 1000),
        "sessionId": "00000000-0000-4000-8000-000000000000",
        "isSidechain": sidechain,
        "version": "2.1.39",
        "cwd": "/tmp/p",
    }


def assistant_line(ev: dict[str, Any], k: int, sidechain: bool = False) -> dict[str, Any]:
    u = ev["usage"]
    line = envelope("assistant", ev["at_ms"][k], ev["n"] * 10 + k, sidechain)
    tag = "side" if sidechain else "main"
    line["requestId"] = f"req_{tag}_{ev['n']}"
    line["message"] = {
        "id": f"msg_{tag}_{ev['n']}",
        "type": "message",
        "role": "assistant",
        "model": ev["model"],
        "content": [{"type": "text", "text": "x"}],
        "stop_reason": None,
        "usage": {
            "input_tokens": u["input"],
            "cache_creation_input_tokens": u["creation"],
            "cache_read_input_tokens": u["read"],
            "cache_creation": {
                "ephemeral_5m_input_tokens": u["creation"] - u["c1h"],
                "ephemeral_1h_input_tokens": u["c1h"],
            },
            "output_tokens": ev["outputs"][k],
            "service_tier": "standard",
        },
    }
    if ev.get("applied_edits"):
        line["message"]["context_management"] = {
            "applied_edits": [
                {
                    "type": "clear_tool_uses_20250919",
                    "cleared_tool_uses": 3,
                    "cleared_input_tokens": 20_000,
                },
            ]
        }
    return line


def write_transcript(events: list[dict[str, Any]], path: Path) -> None:
    lines: list[dict[str, Any]] = []
    for ev in events:
        if ev["kind"] == "boundary":
            b = envelope("system", ev["at_ms"], 0)
            b.update(
                {
                    "subtype": ev["subtype"],
                    "content": "Conversation compacted",
                    "compactMetadata": {"trigger": "auto", "preTokens": 100000},
                }
            )
            lines.append(b)
            continue
        lines.append(envelope("user", ev["at_ms"][0], ev["n"]))
        for k in range(len(ev["outputs"])):
            lines.append(assistant_line(ev, k))
            if ev["sidechain"] == "own":
                # An inline sidechain response: its own stream, never the main one's.
                lines.append(assistant_line(ev, k, sidechain=True))
            elif ev["sidechain"] == "replay":
                # A /btw aside replaying this very line: same message.id and requestId.
                replay = assistant_line(ev, k)
                replay["isSidechain"] = True
                lines.append(replay)
        if ev["api_error_after"]:
            err = envelope("assistant", ev["at_ms"][-1], ev["n"] * 10 + 9)
            err.update(
                {
                    "isApiErrorMessage": True,
                    "requestId": None,
                    "message": {
                        "id": f"err_{ev['n']}",
                        "model": "<synthetic>",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "API Error"}],
                        "usage": {
                            "input_tokens": 0,
                            "output_tokens": 0,
                            "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0,
                        },
                    },
                }
            )
            lines.append(err)
    # Chain the lines as Claude Code does: the main conversation and the (one) inline
    # sidechain each follow their own parentUuid chain; a compact_boundary starts afresh.
    last: dict[bool, str | None] = {False: None, True: None}
    for i, line in enumerate(lines):
        side = line["isSidechain"] is True
        line["uuid"] = f"line-{i}"
        line["parentUuid"] = None if line.get("subtype") == "compact_boundary" else last[side]
        last[side] = line["uuid"]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    events=sessions(),
    now_offset=st.one_of(st.integers(-10, 4000), st.sampled_from([299, 300, 301, 3599, 3600])),
)
def test_random_sessions_match_reference(
    events: list[dict[str, Any]], now_offset: int, tmp_path: Path
) -> None:
    path = tmp_path / "00000000-0000-4000-8000-000000000000.jsonl"
    write_transcript(events, path)
    stream = ref.read_stream(path, main_only=True)
    now = stream.requests[-1].at + now_offset
    out = analyze(path, now)
    compare_stream("main", stream, out["prompt_cache"], out["requests"], now)
    compare_other_streams(path, out, inline=True, now=now)
    assert out["totals"] == ref.read_totals([path])
    # Each injected error line is a <synthetic> isApiErrorMessage line: one API error.
    errors = sum(ev["kind"] == "request" and ev["api_error_after"] for ev in events)
    assert out["api_errors"] == errors


# --- hand-worked edges --------------------------------------------------------------


def req(
    n: int, at_s: float, read: int, creation: int, c1h: int = 0, uncached: int = 0
) -> dict[str, Any]:
    return {
        "kind": "request",
        "n": n,
        "at_ms": [round(at_s * 1000)],
        "outputs": [5],
        "usage": {"input": uncached, "read": read, "creation": creation, "c1h": c1h},
        "model": MODELS[0],
        "sidechain": "none",
        "api_error_after": False,
    }


def compaction(at_s: float) -> dict[str, Any]:
    return {"kind": "boundary", "subtype": "compact_boundary", "at_ms": round(at_s * 1000)}


HAND_CASES = {
    # r1 re-processes M = min(50_000, 50_000) = 50_000 >= 2000 with read 0 < 0.95 * M;
    # announced; alive iff 400 - max(0, 100) = 300 < 300: no -> miss.
    "compaction_exactly_at_ttl": (
        [req(0, 0, 0, 50_000), compaction(100), req(1, 400, 0, 50_000)],
        ["cold", "miss"],
    ),
    # Same with r1 1 ms earlier: 299.999 < 300 -> expected.
    "compaction_just_inside_ttl": (
        [req(0, 0, 0, 50_000), compaction(100), req(1, 399.999, 0, 50_000)],
        ["cold", "expected"],
    ),
    # A /compact after a long pause touches the cache: 1010 - max(0, 1000) = 10 < 300.
    "compaction_after_long_pause": (
        [req(0, 0, 0, 50_000), compaction(1000), req(1, 1010, 0, 50_000)],
        ["cold", "expected"],
    ),
    # Two compactions: the later one counts, 600 - max(0, 350) = 250 < 300
    # (the earlier one would give 500: a miss).
    "two_compactions_latest_counts": (
        [req(0, 0, 0, 50_000), compaction(100), compaction(350), req(1, 600, 0, 50_000)],
        ["cold", "expected"],
    ),
    # r1 writes nothing and inherits r0's 1h TTL; r2: 1500 + 3599 - max(1000, 1500) = 3599
    # < 3600 -> expected (under a 5m TTL it would be a miss).
    "inherited_1h_keeps_compaction_alive": (
        [
            req(0, 0, 0, 50_000, c1h=50_000),
            req(1, 1000, 50_000, 0),
            compaction(1500),
            req(2, 5099, 0, 50_000),
        ],
        ["cold", "hit", "expected"],
    ),
    # M = 100_000: read 95_000 is not < 95_000 -> hit; read 94_999 < 95_000 and
    # W = 100_000 - 94_999 = 5_001 >= 2000 -> miss.
    "share_edge": (
        [req(0, 0, 0, 100_000), req(1, 10, 95_000, 5_000), req(2, 20, 94_999, 5_001)],
        ["cold", "hit", "miss"],
    ),
    # M = min(30_000, 30_000): read 28_000 < 28_500 and W = 2_000 >= 2000 -> miss;
    # then M = 30_000, read 28_001 < 28_500 but W = 1_999 < 2000 -> hit.
    "size_edge": (
        [req(0, 0, 0, 30_000), req(1, 10, 28_000, 2_000), req(2, 20, 28_001, 1_999)],
        ["cold", "miss", "hit"],
    ),
    # Nothing cached yet -> uncached; the first write -> cold; then a request that reads
    # nothing: M = 1_000 + 0 + 40_000 vs 41_000, W = 41_000 >= 2000 -> miss.
    "uncached_then_cold_then_miss": (
        [
            req(0, 0, 0, 0, uncached=1_000),
            req(1, 5, 0, 0, uncached=1_000),
            req(2, 10, 0, 40_000, uncached=1_000),
            req(3, 20, 0, 0, uncached=41_000),
        ],
        ["cold", "uncached", "cold", "miss"],
    ),
}


@pytest.mark.parametrize("case", sorted(HAND_CASES))
def test_hand_worked_outcomes(case: str, tmp_path: Path) -> None:
    events, outcomes = HAND_CASES[case]
    path = tmp_path / "00000000-0000-4000-8000-000000000000.jsonl"
    write_transcript(events, path)
    assert [
        e.outcome for e in ref.classify(ref.read_stream(path, main_only=True).requests)
    ] == outcomes, "reference"
    got = analyze(path)
    assert [r["outcome"] for r in got["requests"]] == outcomes, "cachediag"


def test_applied_edits_announce_a_rebuild(tmp_path: Path) -> None:
    # r1 reads nothing: M = 50_000, W = 50_000 >= 2000 -> a rebuild. Its own response
    # carries context_management.applied_edits (the API cleared old tool results), so it
    # is announced; the cache is alive: 10 - 0 = 10 < 300 s -> expected, not a miss.
    events = [req(0, 0, 0, 50_000), {**req(1, 10, 0, 50_000), "applied_edits": True}]
    path = tmp_path / "00000000-0000-4000-8000-000000000000.jsonl"
    write_transcript(events, path)
    stream = ref.read_stream(path, main_only=True)
    assert [e.outcome for e in ref.classify(stream.requests)] == ["cold", "expected"]
    got = analyze(path)
    assert [r["outcome"] for r in got["requests"]] == ["cold", "expected"]
    assert got["prompt_cache"]["misses"] == 0
    assert got["prompt_cache"]["expected_rebuilds"] == 1


def test_at_is_the_earliest_copy(tmp_path: Path) -> None:
    # One response written as three lines stamped 5 s, 1 s and 3 s after T0: at = T0 + 1.
    first = {**req(0, 0, 0, 50_000), "at_ms": [5_000, 1_000, 3_000], "outputs": [1, 2, 3]}
    path = tmp_path / "00000000-0000-4000-8000-000000000000.jsonl"
    write_transcript([first, req(1, 100, 50_000, 10)], path)
    assert ref.read_stream(path, main_only=True).requests[0].at == T0 + 1
    got = analyze(path)
    assert got["requests"][0]["at"] == T0 + 1
    assert got["requests"][0]["output_tokens"] == 3
