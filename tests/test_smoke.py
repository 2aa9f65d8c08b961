from __future__ import annotations

import json

from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import SPOTTER_SESSION


def test_analyze_json_on_bundled_session() -> None:
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", "0", str(SPOTTER_SESSION)])
    assert result.exit_code == 0, result.output
    obj = json.loads(result.stdout)
    assert obj["session_id"] == "4d5611e5-241a-462a-8d15-5122611a9569"
    assert obj["prompt_cache"]["requests"] == 139
    assert {s["kind"] for s in obj["streams"]} == {"subagent", "compaction"}
