"""``cachediag analyze`` as users run it: files, folders, stdin, --jq, tables."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import REAL, ROOT, RULES, SPOTTER_SESSION

VIEWER = REAL / "claude-code-viewer"


def invoke(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(main, list(args), input=stdin, env=env)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_stdin_dash_equals_file() -> None:
    from_file = invoke("analyze", "--json", "--now", "0", str(SPOTTER_SESSION))
    from_stdin = invoke("analyze", "--json", "--now", "0", "-", stdin=SPOTTER_SESSION.read_bytes())
    a, b = json.loads(from_file), json.loads(from_stdin)
    assert a["prompt_cache"] == b["prompt_cache"]
    assert b["session_id"] == "4d5611e5-241a-462a-8d15-5122611a9569"
    assert b["source"] == "-"


def test_piped_stdin_is_read_without_dash(tmp_path: Path) -> None:
    # The everyday use: cat s.jsonl | cachediag analyze --json (a real pipe, a real process).
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CLAUDE_CONFIG_DIR": str(tmp_path)}
    with SPOTTER_SESSION.open("rb") as fp:
        out = subprocess.run(
            [sys.executable, "-m", "cachediag", "analyze", "--json", "--now", "0"],
            stdin=fp,
            capture_output=True,
            env=env,
            check=True,
        ).stdout
    assert json.loads(out)["prompt_cache"]["requests"] == 139


def test_default_tree_honours_claude_config_dir(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-me-app"
    project.mkdir(parents=True)
    shutil.copy(RULES / "hit.jsonl", project / "s1.jsonl")
    shutil.copy(RULES / "ttl_expired_5m.jsonl", project / "s2.jsonl")
    result = CliRunner().invoke(
        main, ["analyze", "--jq", ".session_id"], env={"CLAUDE_CONFIG_DIR": str(tmp_path)}
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == ["s1", "s2"]


def test_no_history_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["analyze"], env={"CLAUDE_CONFIG_DIR": str(tmp_path)})
    assert result.exit_code == 1
    assert "no Claude Code history found" in result.stderr


def test_json_lines_one_per_session_with_streams() -> None:
    lines = invoke("analyze", "--json", "--now", "0", str(VIEWER)).splitlines()
    sessions = {o["session_id"]: o for o in map(json.loads, lines)}
    assert len(sessions) == 3
    inline = sessions["5c0375b4-57a5-4f26-b12d-d022ee4e51b7"]
    kinds = sorted((s["kind"], s["prompt_cache"]["requests"]) for s in inline["streams"])
    # Two inline 1.0.x sidechains (3 and 7 responses) and two 2.0 agent files beside it.
    assert kinds == [("sidechain", 3), ("sidechain", 7), ("subagent", 1), ("subagent", 1)]
    assert inline["prompt_cache"]["requests"] == 10


def test_orphan_subagent_folder(corpus: Path) -> None:
    folder = corpus / "claude-code" / "spotter" / "6c2214d7-b87e-4432-8e41-22ba294ea584"
    obj = json.loads(invoke("analyze", "--json", "--now", "0", str(folder)))
    # The main conversation is not in the input: no object claims it had no requests.
    assert obj["prompt_cache"] is None
    assert obj["session_id"] == folder.name
    assert [s["id"] for s in obj["streams"]] == ["agent-afc096d"]
    assert obj["streams"][0]["prompt_cache"]["requests"] == 18


def test_requests_records_fields() -> None:
    obj = json.loads(
        invoke("analyze", "--requests", "--now", "0", str(RULES / "ttl_expired_5m.jsonl"))
    )
    miss = obj["requests"][1]
    assert miss["outcome"] == "miss" and miss["causes"] == ["ttl_expired_5m"]
    assert miss["cause_source"] == "inferred" and miss["gap_s"] == 400
    assert miss["evidence"]["fell_back_to"] == "nothing"
    for key in (
        "index",
        "at",
        "message_id",
        "request_id",
        "model",
        "input_tokens",
        "cache_read_tokens",
        "cache_creation_tokens",
        "cache_creation_1h_tokens",
        "output_tokens",
        "ttl",
        "gap_s",
        "outcome",
        "causes",
        "cause_source",
    ):
        assert key in miss


def test_jq_filter_prints_strings_raw() -> None:
    out = invoke(
        "analyze",
        "--now",
        "0",
        "--jq",
        ".prompt_cache.last_miss_cause.causes[0] // empty",
        str(RULES / "model_changed.jsonl"),
    )
    assert out == "model_changed\n"


def test_bad_jq_filter_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["analyze", "--jq", ".[", str(RULES / "hit.jsonl")])
    assert result.exit_code == 2 and "--jq" in result.stderr


def test_table_report() -> None:
    out = invoke("analyze", "--now", "0", str(SPOTTER_SESSION), env={"COLUMNS": "160"})
    assert "Prompt cache (main): 139 requests · 96% of input tokens from cache · 3 misses" in out
    assert "ttl_expired_5m: 2" in out and "expected (compaction)" in out
    assert "Prompt cache (subagent agent-a2898e3): 12 requests" in out


@pytest.mark.skipif(not (shutil.which("jq") and shutil.which("bc")), reason="needs jq and bc")
def test_claude_code_statusline_script_works_unchanged() -> None:
    script = (
        "input=$(cat)\n"
        "cause=$(echo \"$input\" | jq -r '.prompt_cache.last_miss_cause.causes[0] // empty')\n"
        "ratio=$(echo \"$input\" | jq -r '.prompt_cache.hit_ratio // 0')\n"
        'printf "cache %.0f%%" "$(echo "$ratio * 100" | bc -l)"\n'
        '[ -n "$cause" ] && printf " | last miss: %s" "$cause"\n'
    )
    data = invoke("analyze", "--json", "--now", "0", str(SPOTTER_SESSION))
    out = subprocess.run(
        ["bash", "-c", script], input=data, capture_output=True, text=True, check=False
    ).stdout
    assert out == "cache 96% | last miss: messages_rewritten"


def test_worker_processes_give_the_same_output() -> None:
    one = invoke("analyze", "--json", "--now", "0", "--jobs", "1", str(REAL))
    two = invoke("analyze", "--json", "--now", "0", "--jobs", "2", str(REAL))
    assert one == two and len(one.splitlines()) >= 5


def test_table_keeps_its_numbers_at_80_columns() -> None:
    out = invoke("analyze", "--now", "0", str(SPOTTER_SESSION), env={"COLUMNS": "80"})
    # The cause column takes its widest cause, a two-word one: read/cached is shortened
    # to make room for it rather than wrap it.
    cells = (" 18 │", "4h11m", "81,960", "$0.47", "ttl_expired_5m", "0/82.0k")
    for cell in (*cells, "│ expected (compaction) │ 21.5k/165k"):
        assert cell in out, cell
    assert max(len(line) for line in out.splitlines() if "│" in line) <= 80
    wide = invoke("analyze", "--now", "0", str(SPOTTER_SESSION), env={"COLUMNS": "120"})
    assert "│ expected (compaction) │ 21,478/164,830" in wide


def test_continued_session_counts_copied_responses_once(tmp_path: Path) -> None:
    # B continues A in a new file: it starts with copies of A's responses, then adds one.
    project = tmp_path / "proj"
    project.mkdir()
    lines = (RULES / "hit.jsonl").read_bytes().splitlines(keepends=True)
    first_two = [raw for raw in lines if b'"msg_0001"' in raw or b'"msg_0005"' in raw]
    third = [raw for raw in lines if b'"msg_0008"' in raw]
    assert first_two and third
    a, b = project / "a.jsonl", project / "b.jsonl"
    a.write_bytes(b"".join(first_two))
    b.write_bytes(b"".join(first_two + third))
    os.utime(a, (1, 1))  # A is the older file
    out = invoke("analyze", "--json", "--now", "0", str(project))
    sessions = {o["session_id"]: o for o in map(json.loads, out.splitlines())}
    assert sessions["a"]["prompt_cache"]["requests"] == 2
    assert sessions["b"]["prompt_cache"]["requests"] == 1
    assert sessions["b"]["replayed_responses"] == 2
    audit = json.loads(invoke("audit", "--json", str(project)))
    assert audit["totals"]["requests"] == 3
