"""The usage reports as users run them: the history index on by default, ``--no-index``
reads every file, and both print the same bytes, run after run, as the history grows."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

FIXTURES = ROOT / "fixtures" / "real" / "spotter"
NOW = "1790000000"


def _run(tree: Path, cache: Path, *extra: str) -> bytes:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "TZ": "UTC"}
    done = subprocess.run(
        [sys.executable, "-m", "cachediag", "daily", "--json", "--now", NOW, *extra, str(tree)],
        capture_output=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_index_answers_and_no_index_agrees(tmp_path: Path) -> None:
    tree = tmp_path / "projects" / "-home-marco-projects-spotter"
    shutil.copytree(FIXTURES, tree)
    cache = tmp_path / "cache"
    first = _run(tree.parent, cache)
    index = cache / "cachediag" / "history"
    kept = sorted(p for p in index.iterdir() if p.suffix == ".index")
    assert kept, list(index.iterdir())
    assert index.stat().st_mode & 0o777 == 0o700
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in kept)
    assert _run(tree.parent, cache) == first  # answered from the index
    assert _run(tree.parent, cache, "--no-index") == first
    # One more response in a transcript: the index reads it and agrees with a full read.
    transcript = next(p for p in sorted(tree.glob("*.jsonl")) if p.stat().st_size > 0)
    lines = transcript.read_bytes().splitlines(keepends=True)
    last_usage = next(line for line in reversed(lines) if b'"usage"' in line)
    appended = last_usage.replace(b'"id":"msg_', b'"id":"msg_x').replace(
        b'"requestId":"req_', b'"requestId":"req_x'
    )
    assert appended != last_usage
    with transcript.open("ab") as out:
        out.write(appended if appended.endswith(b"\n") else appended + b"\n")
    grown = _run(tree.parent, cache)
    assert grown != first
    assert grown == _run(tree.parent, tmp_path / "fresh", "--no-index")


PROBE = """
import atexit, sys
atexit.register(lambda: print("read:", "cachediag.pipeline" in sys.modules, file=sys.stderr))
from cachediag.entry import main
sys.argv = ["cachediag", *sys.argv[1:]]
main()
"""
"""The command as the console script runs it, saying at exit whether it read the history
(the pipeline loaded) or printed a stored answer."""


def _probe(args: list[str], cache: Path, tz: str = "UTC") -> tuple[bytes, bool]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "TZ": tz}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()[-1]
    assert said in (b"read: True", b"read: False"), done.stderr
    return done.stdout, said == b"read: True"


def _full_read(args: list[str], tmp: Path, tz: str = "UTC") -> bytes:
    cache = tmp / f"fresh-{len(list(tmp.glob('fresh-*')))}"
    return _probe([*args, "--no-index"], cache, tz)[0]


def _answered(args: list[str], cache: Path, expected: bytes) -> None:
    """A run prints ``expected`` from its stored answer. A few tries: a code file edited
    meanwhile (a checkout being worked on) rightly makes a run read again."""
    from cachediag.history.answers import RACY_S

    for _ in range(5):
        out, read = _probe(args, cache)
        assert out == expected, args
        if not read:
            return
        time.sleep(RACY_S)
    raise AssertionError(f"never answered from a stored answer: {args}")


def _bump(path: Path, data: bytes) -> None:
    """``path`` rewritten with ``data``, its mtime put back: only its ctime (and maybe its
    size) tells."""
    st = path.stat()
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _retagged(data: bytes) -> bytes:
    """Other responses than ``data``'s (other ids), so a report counts them apart."""
    return data.replace(b'"id":"msg_', b'"id":"msg_y').replace(
        b'"requestId":"req_', b'"requestId":"req_y'
    )


def _new_project(transcript: Path) -> None:
    other = transcript.parent.with_name("-home-marco-projects-other")
    other.mkdir()
    (other / transcript.name).write_bytes(_retagged(transcript.read_bytes()))


def test_a_stored_answer_is_printed_until_a_file_it_depends_on_changes(tmp_path: Path) -> None:
    from cachediag.history.answers import RACY_S

    changes = {
        "same-size rewrite": lambda t: _bump(
            t, t.read_bytes().replace(b'"output_tokens":1', b'"output_tokens":2', 1)
        ),
        "touched": lambda t: os.utime(t, ns=(t.stat().st_atime_ns, t.stat().st_mtime_ns + 10**9)),
        "removed": lambda t: t.unlink(),
        "new file": lambda t: t.with_name(f"{'0' * 8}-0000-0000-0000-{'0' * 12}.jsonl").write_bytes(
            _retagged(t.read_bytes())
        ),
        "new folder": lambda t: _new_project(t),
    }
    trees = {}
    for name in [*changes, "zone"]:
        tree = tmp_path / name.replace(" ", "-") / "projects" / "-home-marco-projects-spotter"
        shutil.copytree(FIXTURES, tree)
        trees[name] = tree
    time.sleep(RACY_S + 0.2)  # older than the clock's tick: an answer is kept for them
    cache = tmp_path / "cache"
    before = {}
    for name, tree in trees.items():
        args = ["daily", "--json", str(tree.parent)]
        first, read = _probe(args, cache)
        assert read and first == _full_read(args, tmp_path)
        _answered(args, cache, first)
        before[name] = first
    kept = sorted((cache / "cachediag" / "history").glob("answer-*.index"))
    assert len(kept) == len(trees) and all(p.stat().st_mode & 0o777 == 0o600 for p in kept)
    for name, change in changes.items():
        tree = trees[name]
        target = max((p for p in tree.glob("*.jsonl")), key=lambda p: p.stat().st_size)
        change(target)
        args = ["daily", "--json", str(tree.parent)]
        now, read = _probe(args, cache)
        assert read, name
        assert now == _full_read(args, tmp_path), name
        if name != "touched":
            assert now != before[name], name
    args = ["daily", "--json", str(trees["zone"].parent)]
    other_zone, read = _probe(args, cache, tz="Pacific/Kiritimati")
    assert read and other_zone == _full_read(args, tmp_path, tz="Pacific/Kiritimati")
    assert other_zone != before["zone"]


def test_blocks_and_no_index_are_never_answered_from_a_stored_answer(tmp_path: Path) -> None:
    from cachediag.history.answers import RACY_S

    tree = tmp_path / "projects" / "-home-marco-projects-spotter"
    shutil.copytree(FIXTURES, tree)
    time.sleep(RACY_S + 0.2)
    cache = tmp_path / "cache"
    for args in (
        ["blocks", "--json", str(tree.parent)],
        ["daily", "--json", "--no-index", str(tree.parent)],
    ):
        for _ in range(2):
            assert _probe(args, cache)[1], args  # read each time: the clock moves blocks
    assert not list((cache / "cachediag" / "history").glob("answer-*"))


def test_every_kept_report_answers_as_a_full_read_does(tmp_path: Path) -> None:
    from cachediag.history.answers import RACY_S
    from cachediag.history.report_answers import KEPT

    tree = tmp_path / "projects" / "-home-marco-projects-spotter"
    shutil.copytree(FIXTURES, tree)
    time.sleep(RACY_S + 0.2)
    cache = tmp_path / "cache"
    for report in KEPT:
        args = [report, "--json", str(tree.parent)]
        first, read = _probe(args, cache)
        assert read and first == _full_read(args, tmp_path), report
        _answered(args, cache, first)
    target = max(tree.glob("*.jsonl"), key=lambda p: p.stat().st_size)
    with target.open("ab") as out:
        out.write(
            _retagged(
                next(x for x in reversed(target.read_bytes().splitlines(True)) if b'"usage"' in x)
            )
        )
    for report in KEPT:
        args = [report, "--json", str(tree.parent)]
        now, read = _probe(args, cache)
        assert read and now == _full_read(args, tmp_path), report


def test_the_default_history_answer_notices_another_agents_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cachediag.history.answers import RACY_S

    home = tmp_path / "home"
    tree = home / ".claude" / "projects" / "-home-marco-projects-spotter"
    shutil.copytree(FIXTURES, tree)
    (home / ".codex").mkdir()
    time.sleep(RACY_S + 0.2)
    monkeypatch.setenv("HOME", str(home))  # the children's environment (``_probe``)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "CODEX_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    cache = tmp_path / "cache"
    args = ["daily", "--json"]
    first, read = _probe(args, cache)
    assert read and first == _full_read(args, tmp_path)
    _answered(args, cache, first)
    rollouts = ROOT / "tests" / "data" / "codex_home_pause" / "sessions"
    shutil.copytree(rollouts, home / ".codex" / "sessions")  # a place that was not there
    now, read = _probe(args, cache)
    assert read and now == _full_read(args, tmp_path)
    assert now != first
