"""The real-client suite's scenarios, started once for the whole session.

Both test files ask for ``all_runs``, so the scenarios (the 5-minute pauses first) run in
the background while the interactive run and the first checks go on."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

# The fake API and the proxy need the proxy extra (aiohttp). Without it (a plain install,
# not CI: tests/conftest.py fails CI then), the suite is not collected at all.
if importlib.util.find_spec("aiohttp") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    from tests.real_client.harness import claude_binary, versions
    from tests.real_client.scenarios import SCENARIOS, Run, run_all

    CASES = [(v, n) for v in versions() for n in SCENARIOS]

    # Package scope: the pools' threads end with the suite's last test, not with the whole
    # run (any thread alive keeps parallel.map_ordered from forking in later tests).
    @pytest.fixture(scope="package")
    def all_runs() -> Iterator[dict[tuple[str, str], Future[Run]]]:
        pairs = [c for c in CASES if claude_binary(c[0]) is not None]
        pools, futures = run_all(pairs)
        yield futures
        for pool in pools:
            pool.shutdown(wait=True)
        for fut in futures.values():
            if fut.done() and fut.exception() is None:
                fut.result().session.cleanup()
