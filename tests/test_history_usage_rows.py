"""Usage rows through the index equal those read without it, over a copy of the corpus
changed between runs; a row is what ccusage counts from a line."""

from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path

import pytest

from cachediag.history import index, store
from cachediag.history import usage_rows as rows_module
from cachediag.history.index import Stats
from cachediag.history.usage_rows import UsageRow, dedup_key, parse, row_of, usage_rows
from tests.conftest import ROOT

CORPUS = ROOT.parent / "shared" / "corpus" / "claude-code"


def test_a_row_is_a_line_with_usage_numbers_and_a_time() -> None:
    line = {
        "timestamp": "2026-01-01T00:00:00.000Z",
        "sessionId": "s",
        "requestId": "req_1",
        "costUSD": 0.5,
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
    row = row_of(line)
    assert row == UsageRow(
        "2026-01-01T00:00:00.000Z", "s", "claude-opus-4-5", "msg_1", "req_1", 3, 4, 5, 6, 0.5, 2
    )
    assert row is not None and dedup_key(row) == "msg_1:req_1"
    broken: object
    for broken in (
        {**line, "timestamp": 5},
        {**line, "message": {"usage": {"input_tokens": "3", "output_tokens": 4}}},
        {**line, "message": {"usage": {"input_tokens": 3}}},
        {**line, "message": "x"},
        [],
    ):
        assert row_of(broken) is None
    data = (json.dumps(line) + '\n{not json "usage"\n' + json.dumps(line)).encode()
    assert parse("x", data, 0) == [row, row]


def test_with_and_without_the_index_the_rows_are_the_same(tmp_path: Path) -> None:
    if not CORPUS.is_dir():
        pytest.skip("no shared corpus")
    tree = tmp_path / "projects"
    shutil.copytree(CORPUS, tree)
    cache = str(tmp_path / "cache")
    paths = sorted(str(p) for p in tree.rglob("*.jsonl"))

    def check() -> Stats:
        stats = Stats()
        got = usage_rows(paths, root=cache, stats=stats)
        assert got == usage_rows(paths, index=False)
        return stats

    assert check().read == len(paths)
    assert check().unchanged == len(paths)
    big = max(paths, key=os.path.getsize)
    last = Path(big).read_bytes().splitlines()[-1]
    with open(big, "ab") as fp:
        fp.write(last + b"\n")
    assert check().appended == 1
    Path(paths[0]).write_bytes(Path(paths[0]).read_bytes()[:1000])
    os.unlink(paths[1])
    stats = check()
    assert stats.read == 1 and stats.gone == 1


def _response(n: int, pad: int = 0) -> bytes:
    obj = {
        "type": "assistant",
        "timestamp": f"2026-01-01T00:00:{n % 60:02d}.000Z",
        "sessionId": "s",
        "requestId": f"req_{n}",
        "pad": "x" * pad,
        "message": {"id": f"msg_{n}", "usage": {"input_tokens": n, "output_tokens": 1}},
    }
    return json.dumps(obj).encode() + b"\n"


def test_lines_across_chunks_longer_than_one_or_overlong_give_a_whole_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With small chunks: lines cut by chunk ends, a line spanning several chunks (the
    buffer grows), overlong lines skipped (one ending the file), written in pieces cut
    anywhere, each read from where the last stopped; the cursor's line count is the
    file's."""
    monkeypatch.setattr(index, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(index, "MAX_LINE_BYTES", 20_000)
    monkeypatch.setattr(rows_module, "MAX_LINE_BYTES", 20_000)
    lines = [_response(n, pad) for n, pad in enumerate([0, 900, 3000, 15_000, 0, 50_000, 7, 0])]
    lines += [_response(n + 8) for n in range(40)] + [_response(99, 30_000)]
    data = b"".join(lines)
    path = tmp_path / "s.jsonl"
    cache = str(tmp_path / "cache")

    def whole(upto: int) -> list[UsageRow]:
        return [r for x in data[:upto].split(b"\n") if len(x) <= 20_000 for r in parse("x", x, 0)]

    cuts = sorted({0, 1, 4095, 4097, 20_001, 40_000, 70_001, len(data) - 5, len(data)})
    for at, upto in itertools.pairwise(cuts):
        with open(path, "ab") as fp:
            fp.write(data[at:upto])
        stats = Stats()
        got = usage_rows([str(path)], root=cache, stats=stats)
        assert got == [whole(upto)], upto
        assert stats.read + stats.appended == 1
        entry = store.load(store.index_path("usage", cache), rows_module.SCHEMA)["files"]
        cursor = entry[str(path)]["cursor"]
        assert cursor["lines"] == data[: cursor["offset"]].count(b"\n")
    assert len(got[0]) == len(lines) - 2  # only the two overlong lines left out
