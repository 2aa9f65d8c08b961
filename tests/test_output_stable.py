"""``analyze --json`` output, byte for byte, against files recorded before the reader was
made faster (main at ``3f73edf``: sessions oldest first, project from the cwd): a
speed-up must not change one byte of what users get. Re-recorded once since, for the
announced change of JSON text to orjson's (docs/CHANGELOG.md): every recorded line was
then checked to be the old line's object written anew, nothing else.

Covered: the bundled real corpus and the rule fixtures (as folders, file by file, and
piped on stdin), and two generated benchmark-style trees (copies of the corpus under
fresh ids, and many small session files cut from it), each read by one process and by
two. The recorded outputs are in ``tests/data/golden/``. When the output is meant to
change (a new field, a fix), write them anew from a checkout whose output is right:

    CACHEDIAG_WRITE_GOLDEN=1 python -m pytest tests/test_output_stable.py

(with this test file and scripts/bench_analyze.py copied into a checkout of main, and
PYTHONPATH pointing at it, to record what main writes before a change of speed).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import FIXTURES, REAL, ROOT, RULES, bench_analyze_module

GOLDEN = Path(__file__).parent / "data" / "golden"
NOW = "1800000000"
WRITE = os.environ.get("CACHEDIAG_WRITE_GOLDEN", "") not in ("", "0")


def _files(folder: Path) -> Iterator[Path]:
    return iter(sorted(folder.rglob("*.jsonl")))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


FOLDER_RUNS = {
    "real": ["fixtures/real"],
    "rules": ["fixtures/rules"],
    "real-files": [_rel(p) for p in _files(REAL)],
}
FILE_RUNS = [_rel(p) for p in (*_files(REAL), *_files(RULES))]


def _analyze(args: list[str], stdin: bytes | None = None) -> bytes:
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", NOW, *args], input=stdin)
    assert result.exit_code in (0, 1), result.output  # 1: a file that is not a log
    return result.stdout_bytes


def _check(name: str, output: bytes) -> None:
    path = GOLDEN / f"{name}.jsonl.gz"
    if WRITE:
        path.parent.mkdir(parents=True, exist_ok=True)
        # mtime=0: the same output gives the same file.
        path.write_bytes(gzip.compress(output, mtime=0))
        return
    expected = gzip.decompress(path.read_bytes())
    if output != expected:
        got, want = output.splitlines(), expected.splitlines()
        first = next(
            (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
            min(len(got), len(want)),
        )
        pytest.fail(
            f"{name}: output differs from {path.name} from line {first + 1} on "
            f"({len(got)} lines, {len(want)} recorded)"
        )


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch, checkout_order_mtimes: None) -> None:
    """Paths in the output as given: relative to the checkout, the same on every machine."""
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("name", sorted(FOLDER_RUNS))
@pytest.mark.usefixtures("at_root")
def test_folders(name: str) -> None:
    _check(f"folder-{name}", _analyze(["--requests", *FOLDER_RUNS[name]]))


@pytest.mark.usefixtures("at_root")
def test_each_file() -> None:
    out = b"".join(f"== {name}\n".encode() + _analyze(["--requests", name]) for name in FILE_RUNS)
    _check("each-file", out)


@pytest.mark.usefixtures("at_root")
def test_stdin() -> None:
    out = b"".join(
        f"== {name}\n".encode() + _analyze(["--requests", "-"], (ROOT / name).read_bytes())
        for name in FILE_RUNS
    )
    _check("stdin", out)


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copied tree (3 MiB) and a small-files tree (400 files, 2 MiB), built from the
    bundled corpus, as the benchmark builds its trees."""
    bench = bench_analyze_module()
    root = tmp_path_factory.mktemp("trees")
    units = bench.read_units(FIXTURES / "real")
    bench.build_tree(root / "copies", units, 3 << 20)
    bench.build_small_tree(root / "small", units, 400, 2 << 20)
    return root


@pytest.mark.parametrize("tree", ["copies", "small"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_trees(trees: Path, tree: str, jobs: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(trees / tree)
    # Each --jobs checks the same recorded file: how the work is shared changes nothing.
    _check(f"tree-{tree}", _analyze(["--jobs", jobs, "projects"]))
    _check(f"tree-{tree}-requests", _analyze(["--jobs", jobs, "--requests", "projects"]))
