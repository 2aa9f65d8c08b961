"""Record an opencode scenario's run for tests/test_opencode.py.

``python -m tests.real_agents.opencode_record changes anthropic`` runs each scenario with
the real CLI and writes, per scenario NAME:

- ``tests/data/opencode_home_NAME/opencode/opencode.db``: the database opencode wrote,
  one file (``VACUUM INTO`` from a read-only connection: the WAL folded in);
- ``tests/data/opencode_truth_NAME.json``: the fake's ground truth of every call;
- ``tests/data/ccusage20_opencode_NAME.json``: ``ccusage opencode session --json
  --offline`` (ccusage 20.0.24 from ``$CCUSAGE20``, default /tmp/ccusage20) on that home.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.real_agents.support import ROOT

DATA = ROOT / "tests" / "data"
CCUSAGE = Path(os.environ.get("CCUSAGE20", "/tmp/ccusage20")) / "node_modules" / ".bin" / "ccusage"


def record(name: str, database: Path, truth: list[dict[str, Any]]) -> None:
    home = DATA / f"opencode_home_{name}" / "opencode"
    home.mkdir(parents=True, exist_ok=True)
    target = home / "opencode.db"
    target.unlink(missing_ok=True)
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        conn.execute("VACUUM INTO ?", (str(target),))
    finally:
        conn.close()
    (DATA / f"opencode_truth_{name}.json").write_text(json.dumps(truth, indent=1) + "\n")
    with tempfile.TemporaryDirectory() as empty:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": empty,
               "XDG_DATA_HOME": str(home.parent), "TZ": "UTC"}  # fmt: skip
        out = subprocess.run(
            [str(CCUSAGE), "opencode", "session", "--json", "--offline"],
            env=env, capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
    parsed = json.loads(out.stdout)
    (DATA / f"ccusage20_opencode_{name}.json").write_text(json.dumps(parsed, indent=2) + "\n")


if __name__ == "__main__":
    from tests.real_agents.opencode_scenarios import SCENARIOS

    for scenario in sys.argv[1:]:
        session = SCENARIOS[scenario]()
        record(scenario, session.database, session.truth())
        session.cleanup()
        print(scenario, "recorded")
