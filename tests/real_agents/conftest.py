"""The real-agent suite (issue 29): each agent's real CLI from npm, offline, against a
local fake of its provider's API. An agent not installed is skipped with the npm command
that installs it; under CI (``.ci/run`` installs them) a missing one fails the run."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

if importlib.util.find_spec("aiohttp") is None:  # the fakes need the proxy extra
    collect_ignore_glob = ["test_*.py"]
else:
    from tests.real_agents.codex_harness import CODEX, CodexSession
    from tests.real_agents.codex_scenarios import SCENARIOS as CODEX_SCENARIOS
    from tests.real_agents.codex_scenarios import run_all as run_codex
    from tests.real_agents.support import scenario_runs

    @pytest.fixture(scope="package")
    def codex_runs() -> Iterator[dict[str, Future[CodexSession]]]:
        """Every Codex scenario, started together (the 5-minute pause alongside the rest)."""
        yield from scenario_runs(CODEX, lambda: run_codex(list(CODEX_SCENARIOS)))
