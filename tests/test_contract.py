"""The serializer's output and the pydantic contract describe the same JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.report.contract import Session
from tests.conftest import FIXTURES, REAL, RULES

INPUTS = [
    REAL / "spotter",
    REAL / "claude-code-viewer",
    REAL / "claude-trace" / "test-traffic.jsonl",
    RULES,
    *sorted((FIXTURES / "captures").glob("*.jsonl")),
    # A subagent's file alone: prompt_cache is null.
    REAL / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569" / "subagents" / "agent-a2898e3.jsonl",
]


@pytest.mark.parametrize("path", INPUTS, ids=[p.name for p in INPUTS])
def test_analyze_output_validates_against_contract(path: Path) -> None:
    result = CliRunner().invoke(main, ["analyze", "--requests", "--now", "0", str(path)])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines
    for line in lines:
        Session.model_validate(json.loads(line))


def test_contract_rejects_a_renamed_field() -> None:
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", "0", str(RULES / "hit.jsonl")])
    obj = json.loads(result.stdout)
    obj["prompt_cache"]["hitRatio"] = obj["prompt_cache"].pop("hit_ratio")
    with pytest.raises(ValueError):
        Session.model_validate(obj)


def test_schema_command_prints_both_schemas() -> None:
    out = CliRunner().invoke(main, ["schema", "--output"]).stdout
    assert "prompt_cache" in json.loads(out)["properties"]
    assert "RequestIn" in json.loads(CliRunner().invoke(main, ["schema"]).stdout)["$defs"]
