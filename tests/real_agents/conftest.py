"""The real-agent suite (issue 29): each agent's real CLI from npm, offline, against a
local fake of its provider's API. An agent not installed is skipped with the npm command
that installs it; under CI (``.ci/run`` installs them) a missing one fails the run."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

if importlib.util.find_spec("aiohttp") is None:  # the fakes need the proxy extra
    collect_ignore_glob = ["test_*.py"]


def require_cli(binary: Path | None, name: str, hint: str) -> Path:
    """The agent's binary, or a skip (a failure under CI) that says how to install it."""
    if binary is not None:
        return binary
    message = f"{name} is not installed: {hint}"
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set and .ci/run installs it)", pytrace=False)
    pytest.skip(message)


if importlib.util.find_spec("aiohttp") is not None:
    from tests.real_agents.codex_harness import CodexSession, codex_binary, install_hint
    from tests.real_agents.codex_scenarios import SCENARIOS as CODEX_SCENARIOS
    from tests.real_agents.codex_scenarios import run_all as run_codex

    @pytest.fixture(scope="package")
    def codex_runs() -> Iterator[dict[str, Future[CodexSession]]]:
        """Every Codex scenario, started together (the 5-minute pause alongside the rest)."""
        if os.environ.get("CACHEDIAG_PURE_PYTHON"):
            pytest.skip("the real-agent suite runs once, in the compiled pass")
        require_cli(codex_binary(), "Codex CLI", install_hint())
        pool, futures = run_codex(list(CODEX_SCENARIOS))
        yield futures
        pool.shutdown(wait=True)
        for fut in futures.values():
            if fut.done() and fut.exception() is None:
                fut.result().cleanup()
