"""The usage reports through the history index: the same bytes as without it, over a
copy of the corpus whose files are appended to, rewritten (also at the same size),
truncated and removed between runs; only the project groups that changed are read."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from cachediag.commands.usage import UsageOptions, rows_for, select_rows
from cachediag.commands.usage_build import build_report
from cachediag.history.index import Stats
from cachediag.history.report_rows import indexed_rows_for
from tests.conftest import ROOT

CORPUS = ROOT.parent / "shared" / "corpus" / "claude-code"
REPORTS = ("daily", "weekly", "monthly", "session", "blocks")
NOW = 1_780_000_000.0


def report(rows: list, options: UsageOptions) -> object:  # type: ignore[type-arg]
    return build_report(select_rows(rows, options), options)


def test_every_report_is_the_same_with_and_without_the_index(tmp_path: Path) -> None:
    if not CORPUS.is_dir():
        pytest.skip("no shared corpus")
    tree = tmp_path / "projects"
    shutil.copytree(CORPUS, tree)
    cache = str(tmp_path / "cache")
    options = {
        r: UsageOptions(report=r, paths=(tree,), json=True, now=NOW, jobs=1) for r in REPORTS
    }

    def check() -> Stats:
        stats = Stats()
        with_index = indexed_rows_for((tree,), options["daily"], root=cache, stats=stats)
        without = rows_for((tree,), replace(options["daily"], index=False))
        assert sorted(map(repr, with_index)) == sorted(map(repr, without))
        for name, opts in options.items():
            assert report(with_index, opts) == report(without, opts), name
        return stats

    first = check()
    groups = first.read
    assert groups >= 2 and first.unchanged == 0
    assert check().unchanged == groups  # nothing read again
    files = sorted(tree.rglob("*.jsonl"), key=lambda p: -p.stat().st_size)
    big = files[0]
    lines = big.read_bytes().splitlines(keepends=True)
    last_response = next(x for x in reversed(lines) if b'"usage"' in x)
    with big.open("ab") as fp:
        fp.write(last_response.replace(b'"msg_', b'"msg_again_').replace(b'"req_', b'"req_again_'))
    stats = check()
    assert stats.read == 1 and stats.unchanged == groups - 1  # that project alone
    data = files[1].read_bytes()
    files[1].write_bytes(data.replace(b'"output_tokens":', b'"output_tokens": ', 1)[: len(data)])
    check()
    files[2].write_bytes(files[2].read_bytes()[: files[2].stat().st_size // 2])
    check()
    os.unlink(files[3])
    check()
