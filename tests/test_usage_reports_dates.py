"""Usage rows are dated as ccusage dates a response (the line whose usage it keeps),
from what the transcript reader noted while merging the response's lines
(``RequestRecord.kept_at``), and equal to reading those lines again (``usage.stamps``)."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import cachediag.usage.rows as rows_module
from cachediag.pipeline import Run
from cachediag.pricing import price_function
from cachediag.usage.rows import RequestRow, priced, session_rows
from cachediag.usage.stamps import last_times

DAY = "2026-03-01T"


def _line(mid: str, clock: str, output: int, cost: float | None = None) -> str:
    line: dict[str, Any] = {
        "type": "assistant",
        "sessionId": "s1",
        "cwd": "/x",
        "timestamp": f"{DAY}{clock}Z",
        "requestId": f"r-{mid}",
        "uuid": f"u-{mid}-{clock}",
        "message": {
            "id": mid,
            "model": "claude-sonnet-4-5-20250929",
            "usage": {
                "input_tokens": 10,
                "output_tokens": output,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        },
    }
    if cost is not None:
        line["costUSD"] = cost
    return json.dumps(line, separators=(",", ":"))


def _epoch(clock: str) -> float:
    return datetime.fromisoformat(f"{DAY}{clock}+00:00").astimezone(UTC).timestamp()


def _rows(*paths: Path) -> list[RequestRow]:
    price_of = price_function(None)
    out: list[RequestRow] = []
    for analysis in Run(jobs=1).sessions(list(paths), None, time.time()):
        out.extend(session_rows(analysis, price_of))
    return out


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "proj" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_response_is_dated_by_its_line_with_the_final_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(
        tmp_path,
        [
            _line("m1", "10:00:00.000", 1),
            _line("m1", "10:00:05.000", 7),  # the final count: kept
            _line("m1", "10:00:09.000", 7),  # not more: not kept
            _line("m1", "09:59:58.000", 3),  # written earlier, read later
            _line("m2", "11:00:05.000", 2),
            _line("m2", "11:00:01.000", 2),  # earlier, not more: the first line stays
        ],
    )

    def no_reread(paths: object) -> object:
        raise AssertionError("a transcript without costUSD is read once")

    monkeypatch.setattr(rows_module, "last_times", no_reread)
    by_id = {r.message_id: r for r in _rows(path)}
    assert by_id["m1"].at == _epoch("10:00:05.000")
    assert by_id["m1"].started_at == _epoch("09:59:58.000")
    assert by_id["m1"].output_tokens == 7
    assert by_id["m2"].at == _epoch("11:00:05.000")
    assert by_id["m2"].started_at == _epoch("11:00:01.000")
    assert all(r.logged_cost_usd is None for r in by_id.values())


def test_a_line_with_its_own_cost_is_read_again_for_it(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            _line("m1", "10:00:00.000", 1, cost=0.25),
            _line("m1", "10:00:04.000", 9, cost=0.75),
            _line("m2", "10:30:00.000", 4),
        ],
    )
    by_id = {r.message_id: r for r in _rows(path)}
    assert by_id["m1"].logged_cost_usd == 0.75
    assert by_id["m1"].at == _epoch("10:00:04.000")
    assert priced(by_id["m1"], "auto").cost_usd == 0.75
    assert by_id["m2"].logged_cost_usd is None
    assert priced(by_id["m2"], "display").cost_usd == 0.0


def test_the_readers_dates_equal_the_lines_read_again_on_the_corpus(corpus: Path) -> None:
    price_of = price_function(None)
    compared = moved = 0
    for analysis in Run(jobs=1).sessions([corpus / "claude-code"], None, time.time()):
        files = sorted({s.log.source for s in analysis.streams if s.log.source})
        kept = last_times(files)
        for row in session_rows(analysis, price_of):
            if row.message_id is None or row.message_id not in kept:
                continue
            compared += 1
            moved += row.at != row.started_at
            assert row.at == kept[row.message_id].at, (row.source, row.line)
            assert row.logged_cost_usd == kept[row.message_id].logged_cost_usd
    assert compared > 1000 and moved > 100  # the corpus has responses dated late


def test_a_fifo_is_not_opened_to_look_for_costs(tmp_path: Path) -> None:
    from cachediag.usage.stamps import needs_reread

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)  # opened for reading, it would block: the test would hang
    plain = _write(tmp_path, [_line("m1", "10:00:00.000", 1)])
    costed = tmp_path / "costed.jsonl"
    costed.write_text(_line("m1", "10:00:00.000", 1, cost=0.5) + "\n")
    assert not needs_reread("claude-code", [str(fifo), str(plain)])
    assert needs_reread("claude-code", [str(plain), str(costed)])
    assert needs_reread("codex", [str(plain)])
    assert last_times([str(fifo)]) == {}
