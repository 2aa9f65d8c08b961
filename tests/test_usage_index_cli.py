"""The usage reports as users run them: the history index on by default, ``--no-index``
reads every file, and both print the same bytes, run after run, as the history grows."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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
