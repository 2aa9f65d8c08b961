"""A usage report's JSON costs no more imports than it needs: rich draws tables only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES

PROBE = """
import sys
from cachediag.cli import main
try:
    main([sys.argv[1], sys.argv[2], "--json", "-z", "UTC"], prog_name="cachediag")
except SystemExit as exc:
    assert not exc.code, exc.code
print(sorted(m for m in sys.modules if m == "rich" or m.startswith("rich.")), file=sys.stderr)
"""


def _loaded(report: str, path: Path) -> tuple[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, report, str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr.strip().splitlines()[-1]


def test_json_reports_do_not_load_rich() -> None:
    tree = FIXTURES / "real" / "spotter"
    for report in ("daily", "session", "blocks"):
        out, loaded = _loaded(report, tree)
        assert out.startswith("{") and loaded == "[]", (report, loaded)
