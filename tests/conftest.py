from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import settings

# The proxy tests (aiohttp) and the dataset tests (duckdb, pyarrow) skip where their extra
# is missing; .ci/run installs them (the test extra), so in CI a missing one is a broken
# install that must fail the run, never a silent skip.
if os.environ.get("CI"):
    for _module in ("aiohttp", "duckdb", "pyarrow"):
        if importlib.util.find_spec(_module) is None:
            raise ImportError(f"{_module} is not installed, but .ci/run installs it (CI is set)")

# Developers' runs explore new random examples every time; CI (HYPOTHESIS_PROFILE=ci, set
# by .ci/run) replays a fixed set, so that a landing never depends on the draw. Failures
# found locally are pinned with @example.
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# The capture proxy's default folder is joined to every transcript read: a developer's
# own ~/.local/state/cachediag/captures must not change what the tests see.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="cachediag-test-state-")
# The usage reports' history index and the status line's state live under the cache
# folder: never the developer's own.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="cachediag-test-cache-")
# Human output is in the machine's zone (as ccusage's): tests pin it, whatever the
# machine running them, and pass --timezone where a zone is the point.
os.environ["TZ"] = "UTC"
time.tzset()
# The status line stops reading after its time budget (1 s by default) and shows what it
# has, marked partial. Tests on a busy machine must not depend on that, so they get a
# generous budget; the tests of the budget itself set their own.
os.environ.setdefault("CACHEDIAG_STATUSLINE_BUDGET", "30")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
REAL = FIXTURES / "real"
RULES = FIXTURES / "rules"
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"
SPOTTER_SESSION = REAL / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


_NO_CORPUS = "../shared/corpus is not present (a plain clone)"


def corpus_if_present() -> Path | None:
    """The shared corpus, or None on a plain clone without ../shared.

    CI checks the project out beside ../shared, so there a missing corpus is a broken
    checkout: the run fails rather than passing with the corpus checks left out. Every
    test that reads the corpus comes through here (or the ``corpus`` fixture)."""
    if (CORPUS / "claude-code").is_dir():
        return CORPUS
    if os.environ.get("CI"):
        pytest.fail(f"{_NO_CORPUS}, but CI is set and CI has ../shared", pytrace=False)
    return None


@pytest.fixture
def corpus() -> Path:
    """The shared corpus, for extra checks; skipped on a plain clone (never under CI)."""
    found = corpus_if_present()
    if found is None:
        pytest.skip(_NO_CORPUS)
    return found


def bench_analyze_module() -> ModuleType:
    """scripts/bench_analyze.py as a module (its tree builders are tested and reused)."""
    spec = importlib.util.spec_from_file_location(
        "bench_analyze", ROOT / "scripts/bench_analyze.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def checkout_order_mtimes() -> None:
    """The bundled fixtures' modification times as a fresh clone has them: in path order.

    A project's sessions are read oldest file first (a continued session's copies count
    once, in the session that made them), and fixtures/rules holds files that share
    message ids, so the recorded outputs depend on that order; a working copy where a
    fixture was edited later would otherwise read them in another order."""
    files = sorted(p for p in (ROOT / "fixtures").rglob("*") if p.is_file() and not p.is_symlink())
    # Now, a microsecond apart: `warm` passes over files older than its window, as it
    # would a fresh clone's.
    base = time.time_ns() - len(files) * 1000
    for i, path in enumerate(files):
        os.utime(path, ns=(base + i * 1000, base + i * 1000))
