"""Per-request rows (cachediag.usage.rows) add up to what ccusage counts per session."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

from cachediag.pipeline import Run
from cachediag.pricing import price_function
from cachediag.usage.rows import RequestRow, session_rows, transcript_session

DATA = Path(__file__).parent / "data"


def corpus_rows(corpus: Path) -> list[RequestRow]:
    price_of = price_function(None)
    rows: list[RequestRow] = []
    run = Run(jobs=1)
    for analysis in run.sessions([corpus / "claude-code"], None, time.time()):
        rows.extend(session_rows(analysis, price_of))
    return rows


def test_rows_total_ccusage_session_by_session(corpus: Path) -> None:
    recorded = json.loads((DATA / "ccusage_sessions_corpus.json").read_text())["sessions"]
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0.0])
    for r in corpus_rows(corpus):
        s = sums[(r.project, r.transcript_session)]
        s[0] += r.input_tokens
        s[1] += r.output_tokens
        s[2] += r.cache_creation_tokens
        s[3] += r.cache_read_tokens
        s[4] += r.cost_usd or 0.0
    assert {(s["projectPath"], s["sessionId"]) for s in recorded} == set(sums)
    for s in recorded:
        mine = sums[(s["projectPath"], s["sessionId"])]
        assert mine[:4] == [
            s["inputTokens"],
            s["outputTokens"],
            s["cacheCreationTokens"],
            s["cacheReadTokens"],
        ]
        assert abs(mine[4] - s["totalCost"]) < 0.005


def test_rows_carry_the_cache_outcome(corpus: Path) -> None:
    rows = corpus_rows(corpus)
    outcomes = {r.outcome for r in rows}
    assert "hit" in outcomes and "miss" in outcomes
    assert all(r.recache_usd == 0 for r in rows if r.outcome == "hit")
    assert any(r.recache_usd > 0 for r in rows if r.outcome == "miss")
    assert [r.at for r in rows if r.session_id == rows[0].session_id] == sorted(
        r.at for r in rows if r.session_id == rows[0].session_id
    )


def test_transcript_session_names_files_as_ccusage_does() -> None:
    assert transcript_session("/p/proj/abc.jsonl", "x") == "abc"
    assert transcript_session("/p/proj/abc/subagents/agent-a1.jsonl", "x") == "abc"
    assert transcript_session("/p/proj/agent-old.jsonl", "abc") == "agent-old"
    assert transcript_session(None, "abc") == "abc"
