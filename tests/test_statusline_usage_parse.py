"""The status line's usage rows read through the scanner and the line picker equal those
of a whole parse of every line (``row_of(orjson.loads(line))``); their times are
``clock.epoch``'s."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from cachediag.history import usage_rows
from cachediag.history.clock import epoch
from cachediag.history.index import MAX_LINE_BYTES
from cachediag.history.usage_rows import UsageRow, parse, priced, row_of
from cachediag.pricing.slots import DayPrices
from tests.conftest import ROOT

CORPUS = ROOT.parent / "shared" / "corpus" / "claude-code"


def whole_parse(data: bytes) -> list[UsageRow]:
    """Every line parsed whole: what ``parse`` must give."""
    rows = []
    days: dict[tuple[str, int], DayPrices] = {}
    for line in data.split(b"\n"):
        if b'"usage"' not in line or len(line) > MAX_LINE_BYTES:
            continue
        try:
            row = row_of(orjson.loads(line))
        except ValueError:
            continue
        if row is not None:
            cost = None if row.cost_usd is not None else priced(row, days)
            rows.append(row._replace(priced_usd=cost))
    return rows


def line(**over: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "type": "assistant",
        "timestamp": "2026-01-01T00:05:00.210Z",
        "sessionId": "s",
        "requestId": "req_1",
        "message": {
            "id": "msg_1",
            "model": "claude-opus-4-5",
            "usage": {
                "input_tokens": 3,
                "output_tokens": 4,
                "cache_creation_input_tokens": 5,
                "cache_read_input_tokens": 6,
                "cache_creation": {"ephemeral_1h_input_tokens": 2},
            },
        },
    }
    obj.update(over)
    return obj


def usage(**over: Any) -> dict[str, Any]:
    return {**line()["message"], "usage": {**line()["message"]["usage"], **over}}


EDGES: list[bytes] = [
    json.dumps(line()).encode(),
    json.dumps(line(sessionId="")).encode(),  # kept as "" (the picker says None)
    json.dumps(line(sessionId=7)).encode(),
    json.dumps({k: v for k, v in line().items() if k != "sessionId"}).encode(),
    json.dumps(line(costUSD=0.5)).encode(),
    json.dumps(line(costUSD=True)).encode(),
    json.dumps(line()).encode().replace(b'"sessionId"', b'"cost\\u0055SD": 1.5, "sessionId"'),
    json.dumps(line(timestamp=5)).encode(),
    json.dumps(line(timestamp="2026-01-01T00:05:00Z")).encode(),
    # The last millisecond before DeepSeek's peak price (from 00:30 UTC) and a day's end.
    json.dumps(
        line(timestamp="2026-01-01T00:29:59.999Z", message={**usage(), "model": "deepseek-chat"})
    ).encode(),
    json.dumps(line(timestamp="2026-01-01T23:59:59.999Z")).encode(),
    json.dumps(line(timestamp="2026-01-01T00:05:00.2+02:00")).encode(),
    json.dumps(line(timestamp="2026-01-01T00:60:00.210Z")).encode(),
    json.dumps(line(timestamp="2026-01-01T24:05:00.210Z")).encode(),
    json.dumps(line(timestamp="2026-02-31T00:05:61.210Z")).encode(),
    json.dumps(line(timestamp=" 2026-01-01T00:05:0.21Z")).encode(),
    json.dumps(line(timestamp="2026-01-01T00:0\u0665:00.210Z"), ensure_ascii=False).encode(),
    json.dumps(line(timestamp="2026-01-01T00:05:00.2\u00b20Z"), ensure_ascii=False).encode(),
    json.dumps(line(message=usage(input_tokens=3.7, output_tokens=1e3))).encode(),
    json.dumps(line(message=usage(input_tokens=True))).encode(),
    json.dumps(line(message=usage(output_tokens=-1))).encode(),
    json.dumps(line(message=usage(cache_read_input_tokens="6"))).encode(),
    json.dumps(line(message=usage(cache_creation=None))).encode(),
    json.dumps(line(message=usage(cache_creation={"ephemeral_1h_input_tokens": True}))).encode(),
    json.dumps(line(message=usage(cache_creation={"ephemeral_1h_input_tokens": 2.5}))).encode(),
    json.dumps(line(message=usage(cache_creation={"ephemeral_1h_input_tokens": -3}))).encode(),
    b"  " + json.dumps(line()).encode() + b" \t",  # not {...} to the scanner: still a row
    json.dumps(line(message={"usage": "x"})).encode(),
    json.dumps(line(message="x")).encode(),
    json.dumps(line(type="user", message={"content": [{"usage": {"input_tokens": 1}}]})).encode(),
    json.dumps(line()).encode() + b"\r",
    json.dumps(line()).encode().replace(b'"requestId"', b'"requestId": "dup", "requestId"'),
    b'{not json "usage"',
    b'["usage"]',
    json.dumps(line(), indent=1).encode().replace(b"\n", b" "),
]


def test_edge_lines_give_the_rows_of_a_whole_parse() -> None:
    for raw in EDGES:
        assert parse("x", raw, 0) == whole_parse(raw), raw
    data = b"\n".join(EDGES)
    got = parse("x", data, 0)
    assert got == whole_parse(data)
    assert len(got) > 10  # the lines above are mostly rows: nothing was dropped wholesale
    assert got[1].session_id == ""


@pytest.mark.parametrize("scanner", ["compiled", "python"])
def test_a_range_of_a_reused_buffer_gives_its_own_rows_and_newlines(
    scanner: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if scanner == "python":
        monkeypatch.setattr(usage_rows, "_SCANNER", None)
    elif usage_rows._SCANNER is None:
        pytest.skip("the compiled scanner is not built")
    data = b"\n".join(EDGES) + b"\n"
    # What the index's buffer may still hold past the range: never read.
    stale = bytearray(data + json.dumps(line(requestId="req_stale")).encode() + b"\n")
    rows, newlines = usage_rows.parse_counted("x", stale, 0, len(data))
    assert rows == whole_parse(data) and newlines == len(EDGES)
    cut = data.index(b"\n", len(data) // 2) + 1  # a range that starts mid-buffer's history
    assert usage_rows.parse_counted("x", bytearray(data[cut:]), cut, len(data) - cut) == (
        whole_parse(data[cut:]),
        data[cut:].count(b"\n"),
    )


def test_corpus_files_give_the_rows_of_a_whole_parse() -> None:
    files = sorted(CORPUS.rglob("*.jsonl")) if CORPUS.is_dir() else []
    if not files:
        pytest.skip("no shared corpus")
    rows = 0
    for path in files:
        data = path.read_bytes()
        got = parse(str(path), data, 0)
        assert got == whole_parse(data), path
        rows += len(got)
    assert rows > 100


def test_times_are_those_of_clock_epoch() -> None:
    usage_rows._HOURS.clear()
    rng = random.Random(27)
    base = "2026-01-01T23:59:59.999Z"
    stamps = [
        base,
        "2026-01-01T23:59:60.000Z",
        "2026-01-01T23:59:61.000Z",
        "2026-13-01T00:00:00.000Z",
        "2026-01-01T00:00:00.00ZZ",
        "2026-01-01t00:00:00.000Z",
        "2026-01-01T00-00-00.000Z",
        "\u30002026-01-01T00:00:00.0Z",
    ]
    alphabet = "0123456789:-.TZtz +\u0665\u00b2x"
    for _ in range(5000):
        chars = list(base)
        for _ in range(rng.randint(1, 3)):
            chars[rng.randrange(len(chars))] = rng.choice(alphabet)
        stamps.append("".join(chars))
    for stamp in stamps * 2:  # the second time from the hours already seen
        assert usage_rows.epoch_of(stamp) == epoch(stamp), stamp


def test_rows_through_the_index_are_those_of_a_whole_parse(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(EDGES) + b"\n")
    cache = str(tmp_path / "cache")
    first = usage_rows.usage_rows([str(path)], root=cache)
    again = usage_rows.usage_rows([str(path)], root=cache)
    assert first == again == [whole_parse(path.read_bytes())]
