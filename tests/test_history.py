"""Histories as people have them: copies, backups, two config dirs, every response once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.ingest.discover import claude_projects_dirs
from tests.conftest import REAL, ROOT, SPOTTER_SESSION
from tests.history_tree import BACKED_UP, build_history

DEDUP = ROOT / "tests" / "data" / "ccusage_sessions_dedup.json"
TOKENS = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_creation_tokens": "cacheCreationTokens",
    "cache_read_tokens": "cacheReadTokens",
}


def run(args: list[str], env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, args, env=env)


def analyze_lines(args: list[str], env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    result = run(["analyze", "--json", "--now", "0", *args], env)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture
def history(tmp_path: Path) -> dict[str, str]:
    """CLAUDE_CONFIG_DIR naming the two config dirs of ``tests/history_tree.py``."""
    return {"CLAUDE_CONFIG_DIR": ",".join(map(str, build_history(tmp_path)))}


def compare_with_ccusage(recorded: Path, history: dict[str, str]) -> None:
    theirs = json.loads(recorded.read_text())["totals"]
    lines = analyze_lines([], history)
    for ours, key in TOKENS.items():
        assert sum(o["totals"][ours] for o in lines) == theirs[key], ours
    cost = sum(o["cost"]["cost_usd"] for o in lines)
    assert cost == pytest.approx(theirs["totalCost"], rel=0.01)

    audit = run(["audit", "--json", "--no-progress"], history)
    assert audit.exit_code == 0, audit.stderr
    totals = json.loads(audit.stdout)["totals"]
    for ours, key in TOKENS.items():
        assert totals[ours] == theirs[key], ours
    assert totals["cost_usd"] == pytest.approx(theirs["totalCost"], rel=0.01)


def test_copies_and_backups_total_what_ccusage_counts_deduplicated(
    history: dict[str, str],
) -> None:
    # Recorded by scripts/record_ccusage.py from this very tree (ccusage 20.0.24, which
    # counts each message.id + requestId once across everything it reads).
    compare_with_ccusage(DEDUP, history)


def test_corpus_copies_and_backups_total_what_ccusage_counts(corpus: Path, tmp_path: Path) -> None:
    """The same tree built from the whole shared corpus (1.0.x and 2.x sessions, an
    orphan subagent folder, root-level agent files)."""
    dirs = build_history(tmp_path, corpus / "claude-code")
    compare_with_ccusage(
        DEDUP.with_name("ccusage_sessions_dedup_corpus.json"),
        {"CLAUDE_CONFIG_DIR": ",".join(map(str, dirs))},
    )


def test_a_session_in_many_places_is_one_session(history: dict[str, str]) -> None:
    lines = analyze_lines([], history)
    ids = [o["session_id"] for o in lines]
    assert len(ids) == len(set(ids)) == 6
    # Its copies, its backups and the second config dir add nothing to the session.
    merged = next(o for o in lines if o["session_id"] == BACKED_UP)
    (alone,) = analyze_lines([str(SPOTTER_SESSION)])
    for key in ("prompt_cache", "totals", "api_errors", "skipped_lines"):
        assert merged[key] == alone[key], key
    assert [s["prompt_cache"] for s in merged["streams"]] == [
        s["prompt_cache"] for s in alone["streams"]
    ]
    assert merged["replayed_responses"] == 0


def test_a_backup_holding_a_later_part_merges_each_response_once(tmp_path: Path) -> None:
    """Two partial copies that each hold responses the other lacks: the session is their
    union, in time order, and equals the whole file."""
    lines = SPOTTER_SESSION.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    shutil.copytree(SPOTTER_SESSION.with_suffix(""), tmp_path / "a" / BACKED_UP)
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / SPOTTER_SESSION.name).write_bytes(b"".join(lines[: half + 50]))
    (tmp_path / "b" / SPOTTER_SESSION.name).write_bytes(b"".join(lines[half - 50 :]))
    (merged,) = analyze_lines(["--requests", str(tmp_path / "a"), str(tmp_path / "b")])
    (whole,) = analyze_lines(["--requests", str(SPOTTER_SESSION)])
    assert merged["prompt_cache"] == whole["prompt_cache"]
    assert merged["totals"] == whole["totals"]
    ours = [(r["message_id"], r["outcome"], r["output_tokens"]) for r in merged["requests"]]
    assert ours == [(r["message_id"], r["outcome"], r["output_tokens"]) for r in whole["requests"]]


def test_the_same_path_named_twice_is_read_once() -> None:
    once = analyze_lines([str(REAL / "spotter")])
    twice = analyze_lines([str(REAL / "spotter"), str(SPOTTER_SESSION), str(REAL)])
    ids = [o["session_id"] for o in twice]
    assert len(ids) == len(set(ids))
    totals = {o["session_id"]: o["totals"] for o in twice}
    assert [totals[o["session_id"]] for o in once] == [o["totals"] for o in once]
    assert sum(o["totals"]["requests"] for o in twice) == sum(
        o["totals"]["requests"] for o in analyze_lines([str(REAL)])
    )


def test_hand_made_files_sharing_a_session_id_stay_apart(tmp_path: Path) -> None:
    # Examples written by hand often reuse one session id; only copies of one file (same
    # name, or a file named after the session) are one session.
    rules = ROOT / "fixtures" / "rules"
    for name in ("hit.jsonl", "ttl_expired_5m.jsonl"):
        shutil.copy(rules / name, tmp_path / name)
    assert [o["session_id"] for o in analyze_lines([str(tmp_path)])] == ["hit", "ttl_expired_5m"]


# --- where the history is ------------------------------------------------------------


def test_default_history_is_both_config_dirs(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert claude_projects_dirs() == [
        tmp_path / ".config" / "claude" / "projects",
        tmp_path / ".claude" / "projects",
    ]
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert claude_projects_dirs()[0] == xdg / "claude" / "projects"


def test_config_dir_named_twice_or_linked_is_listed_once(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "one" / "projects").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "one")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{tmp_path / 'one'}, {tmp_path / 'link'},")
    assert claude_projects_dirs() == [tmp_path / "one" / "projects"]


def test_history_under_dot_config_is_read(tmp_path: Path) -> None:
    project = tmp_path / ".config" / "claude" / "projects" / "-home-me-app"
    shutil.copytree(REAL / "spotter", project)
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": "", "XDG_CONFIG_HOME": ""}
    lines = analyze_lines([], env)
    assert BACKED_UP in [o["session_id"] for o in lines]


def test_no_history_names_every_place_tried(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": "", "XDG_CONFIG_HOME": ""}
    result = run(["analyze", "--json"], env)
    assert result.exit_code == 1
    assert str(tmp_path / ".config" / "claude" / "projects") in result.stderr
    assert str(tmp_path / ".claude" / "projects") in result.stderr
    both = f"{tmp_path / 'a'},{tmp_path / 'b'}"
    result = run(["audit", "--json"], {"CLAUDE_CONFIG_DIR": both})
    assert result.exit_code == 1
    assert str(tmp_path / "a" / "projects") in result.stderr
    assert str(tmp_path / "b" / "projects") in result.stderr
    assert "CLAUDE_CONFIG_DIR" in result.stderr


# --- a subagent's file on its own ----------------------------------------------------

SUBAGENT = SPOTTER_SESSION.with_suffix("") / "subagents" / "agent-a2898e3.jsonl"


@pytest.mark.parametrize(
    ("path", "session", "stream"),
    [
        (SUBAGENT, BACKED_UP, "agent-a2898e3"),  # 2.1: <session>/subagents/agent-*.jsonl
        (  # 2.0: agent-*.jsonl beside the sessions, every line a sidechain line
            REAL / "claude-code-viewer" / "agent-test-hash-123.jsonl",
            "5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
            "agent-test-hash-123",
        ),
    ],
)
def test_a_subagent_file_alone_is_a_stream_of_its_session(
    path: Path, session: str, stream: str
) -> None:
    (out,) = analyze_lines(["--requests", str(path)])
    assert out["session_id"] == session
    assert out["prompt_cache"] is None and out["requests"] == []
    (only,) = out["streams"]
    assert (only["id"], only["kind"], Path(only["source"]).name) == (stream, "subagent", path.name)
    assert only["prompt_cache"]["requests"] == len(only["requests"]) > 0
    table = run(["analyze", str(path)])
    assert table.exit_code == 0, table.stderr
    assert f"Subagent file(s) of session {session}" in table.stdout
    assert "Prompt cache (main)" not in table.stdout


def test_a_renamed_subagent_file_is_known_by_its_lines(tmp_path: Path) -> None:
    renamed = tmp_path / "notes.jsonl"
    shutil.copy(SUBAGENT, renamed)
    (out,) = analyze_lines([str(renamed)])
    assert out["session_id"] == BACKED_UP and out["prompt_cache"] is None
    assert [s["kind"] for s in out["streams"]] == ["subagent"]


def test_explain_takes_the_stream_of_a_subagent_file_alone() -> None:
    result = run(["explain", "--json", "--request", "1", str(SUBAGENT)])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["stream"] == "agent-a2898e3"
