"""The history index: rows of a copy of the corpus answered from the index equal the rows
read afresh, after files are appended to, rewritten (also at the same size), truncated,
replaced and removed between runs; only what changed is parsed again; the index is
private, survives damage and two processes updating it at once."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from cachediag.history import store
from cachediag.history.index import RowCodec, Stats, rows_by_file
from tests.conftest import ROOT

CORPUS = ROOT.parent / "shared" / "corpus" / "claude-code"


class Usage(NamedTuple):
    message_id: str | None
    timestamp: str | None
    input_tokens: int
    output_tokens: int
    offset: int


def parse(path: str, data: bytes | bytearray, start: int, end: int) -> tuple[list[Usage], int]:
    """A reader of independent JSON lines, as the reports' is: one row per usage line of
    ``data[:end]``, and how many newlines those lines hold."""
    rows = []
    offset = start
    lines = bytes(data[:end])
    for line in lines.splitlines(keepends=True):
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            obj = {}
        message = obj.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
        if isinstance(message, dict) and isinstance(usage, dict):
            rows.append(
                Usage(
                    message.get("id"),
                    obj.get("timestamp"),
                    int(usage.get("input_tokens") or 0),
                    int(usage.get("output_tokens") or 0),
                    offset,
                )
            )
        offset += len(line)
    return rows, lines.count(b"\n")


CODEC = RowCodec("test-usage-1", list, lambda values: Usage(*values))


def fresh(paths: list[str]) -> list[list[Usage]]:
    out = []
    for path in paths:
        try:
            data = Path(path).read_bytes()
            out.append(parse(path, data, 0, len(data))[0])
        except FileNotFoundError:
            out.append([])
    return out


@pytest.fixture
def history(tmp_path: Path) -> Path:
    if not CORPUS.is_dir():
        pytest.skip("no shared corpus")
    tree = tmp_path / "projects"
    shutil.copytree(CORPUS, tree)
    return tree


def files_of(tree: Path) -> list[str]:
    return sorted(str(p) for p in tree.rglob("*.jsonl"))


def indexed(paths: list[str], root: Path) -> tuple[list[list[Usage]], Stats]:
    stats = Stats()
    rows = rows_by_file(paths, parse, CODEC, kind="test", root=str(root), stats=stats)
    return rows, stats


def response_line(n: int) -> bytes:
    line = {
        "type": "assistant",
        "timestamp": f"2026-01-01T00:00:{n:02d}.000Z",
        "message": {"id": f"msg_added{n}", "usage": {"input_tokens": n, "output_tokens": 2 * n}},
    }
    return json.dumps(line).encode() + b"\n"


def test_every_change_between_runs_gives_the_rows_of_a_fresh_read(
    history: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    paths = files_of(history)
    assert len(paths) > 10
    first, stats = indexed(paths, cache)
    assert first == fresh(paths) and stats.read == len(paths) and sum(map(len, first)) > 1000
    again, stats = indexed(paths, cache)
    assert again == first and stats.unchanged == len(paths) and stats.parsed_bytes == 0

    big = max(paths, key=os.path.getsize)
    with open(big, "ab") as fp:
        fp.write(response_line(1))
    rows, stats = indexed(paths, cache)
    assert rows == fresh(paths) and stats.appended == 1 and stats.read == 0
    assert stats.parsed_bytes == len(response_line(1))  # only the appended line read
    assert rows[paths.index(big)][-1].message_id == "msg_added1"

    # An unfinished last line counts as it is, and again once it is complete.
    with open(big, "ab") as fp:
        fp.write(response_line(2)[:-1])
    assert indexed(paths, cache)[0] == fresh(paths)
    with open(big, "ab") as fp:
        fp.write(b"\n" + response_line(3))
    assert indexed(paths, cache)[0] == fresh(paths)

    # Rewritten at the same size (one token count changed in place, mtime moved).
    victim = next(p for p in paths if b'"output_tokens":1' in Path(p).read_bytes())
    data = Path(victim).read_bytes()
    Path(victim).write_bytes(data.replace(b'"output_tokens":1', b'"output_tokens":7', 1))
    assert os.path.getsize(victim) == len(data)
    rows, stats = indexed(paths, cache)
    assert rows == fresh(paths) and stats.read == 1 and stats.appended == 0

    # Truncated, replaced by another file (new inode), and removed.
    cut = paths[1]
    Path(cut).write_bytes(Path(cut).read_bytes()[: os.path.getsize(cut) // 2])
    swapped = paths[2]
    tmp = swapped + ".new"
    Path(tmp).write_bytes(Path(paths[3]).read_bytes())
    os.replace(tmp, swapped)
    gone = paths[4]
    os.unlink(gone)
    rows, stats = indexed(paths, cache)
    assert rows == fresh(paths) and stats.read == 2 and stats.gone == 1
    assert rows[4] == []
    index = store.load(store.index_path("test", str(cache)), CODEC.schema)
    assert gone not in index["files"]

    # Grown and rewritten before the old end: seen by the sampled blocks, read whole.
    data = Path(big).read_bytes()
    Path(big).write_bytes(b"X" + data[1:] + response_line(4))
    rows, stats = indexed(paths, cache)
    assert rows == fresh(paths) and stats.read == 1 and stats.appended == 0


def test_the_index_is_private_and_damage_only_rebuilds_it(history: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    paths = files_of(history)[:5]
    expected, _ = indexed(paths, cache)
    where = Path(store.index_path("test", str(cache)))
    assert where.stat().st_mode & 0o777 == 0o600
    assert where.parent.stat().st_mode & 0o777 == 0o700
    data = where.read_bytes()
    where.write_bytes(data[:-10] + b"0" + data[-9:])  # one byte flipped
    rows, stats = indexed(paths, cache)
    assert rows == expected and stats.read == len(paths)
    where.write_bytes(b"")
    assert indexed(paths, cache)[0] == expected
    # A row schema of another version is not used.
    other = RowCodec("test-usage-2", CODEC.encode, CODEC.decode)
    stats = Stats()
    rows_by_file(paths, parse, other, kind="test", root=str(cache), stats=stats)
    assert stats.read == len(paths)
    # No prompt text is kept: only what the rows hold.
    assert b'"content"' not in where.read_bytes()


def test_a_folder_others_can_write_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "history").mkdir(parents=True)
    (cache / "history").chmod(0o777)
    with pytest.raises(OSError, match="writable by others"):
        rows_by_file([], parse, CODEC, kind="test", root=str(cache))


def _update_many(args: tuple[list[str], str, int]) -> list[list[Any]]:
    paths, root, rounds = args
    out = []
    for _ in range(rounds):
        out = rows_by_file(paths, parse, CODEC, kind="test", root=root)
    return [list(map(list, rows)) for rows in out]


def test_two_processes_updating_at_once_never_corrupt_it(history: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    paths = files_of(history)
    # Half the files change under the processes' feet while both update the index.
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        pending = pool.map_async(_update_many, [(paths, cache, 6), (paths[::-1], cache, 6)])
        for n, path in enumerate(paths[::2]):
            with open(path, "ab") as fp:
                fp.write(response_line(n % 60))
        results = pending.get(timeout=120)
    assert all(len(r) == len(paths) for r in results)
    index = store.load(store.index_path("test", cache), CODEC.schema)  # whole, checksum ok
    assert set(index["files"]) == set(paths)
    rows, _ = indexed(paths, Path(cache))
    assert rows == fresh(paths)


def test_past_its_deadline_it_stops_saves_what_it_read_and_says_so(
    history: Path, tmp_path: Path
) -> None:
    cache = str(tmp_path / "cache")
    paths = files_of(history)
    stats = Stats()
    rows = rows_by_file(paths, parse, CODEC, kind="test", root=cache, stats=stats, deadline=0.0)
    assert stats.incomplete and stats.read == 0 and rows == [[] for _ in paths]
    stats = Stats()
    rows = rows_by_file(paths, parse, CODEC, kind="test", root=cache, stats=stats)
    assert not stats.incomplete and rows == fresh(paths)
