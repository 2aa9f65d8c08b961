"""Files that vanish or cannot be read: named on stderr, counted, and the run goes on.

Claude Code prunes old sessions while a scan runs, and a folder may lack permission.
The tests make reads fail by a hook between discovery and reading, or by a failing
``open`` / ``scandir`` for one path: as root (CI) a ``chmod 000`` does not stop a read.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import cachediag.pipeline
from cachediag.cli import main
from cachediag.ingest import walk
from cachediag.ingest.discover import SessionSource
from tests.conftest import REAL, RULES


def tree(tmp_path: Path) -> Path:
    """Three projects of small sessions; project ``b`` holds a session with a subagent."""
    root = tmp_path / "projects"
    for project, names in (("a", ["hit", "ttl_expired_5m"]), ("c", ["model_changed"])):
        (root / project).mkdir(parents=True)
        for name in names:
            shutil.copy(RULES / f"{name}.jsonl", root / project / f"{name}.jsonl")
    shutil.copytree(REAL / "spotter", root / "b")
    return root


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def json_lines(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture
def delete_after_discovery(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """Deletes the given files once discovery has listed them, before they are read."""
    doomed: list[Path] = []
    real = cachediag.pipeline.discover

    def discover_then_delete(paths: list[Path], on_error: Any = None) -> list[SessionSource]:
        found = real(paths, on_error)
        for path in doomed:
            path.unlink()
        return found

    monkeypatch.setattr(cachediag.pipeline, "discover", discover_then_delete)
    return doomed.append


def fail_open_for(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """Opening ``target`` fails as a file without read permission does (the readers open
    every file they find through ``ingest.files``)."""
    from cachediag.ingest import files

    real = files.open_regular

    def guarded(path: str, **kwargs: Any) -> Any:
        if Path(path) == target:
            raise PermissionError(13, "Permission denied", path)
        return real(path, **kwargs)

    monkeypatch.setattr(files, "open_regular", guarded)


def test_files_deleted_during_a_scan_are_named_and_the_rest_is_read(
    tmp_path: Path, delete_after_discovery: Callable[[Path], None]
) -> None:
    root = tree(tmp_path)
    gone = root / "a" / "hit.jsonl"
    subagent = next((root / "b").glob("*/subagents/agent-a2898e3.jsonl"))
    delete_after_discovery(gone)
    delete_after_discovery(subagent)
    result = invoke("analyze", "--json", "--now", "0", str(root))
    assert result.exit_code == 0, result.stderr
    assert f"{gone}: vanished before it could be read" in result.stderr
    assert f"{subagent}: vanished before it could be read" in result.stderr
    lines = json_lines(result)
    ids = [o["session_id"] for o in lines]
    assert "hit" not in ids and {"ttl_expired_5m", "model_changed"} <= set(ids)
    # The session that lost its subagent file keeps its main conversation.
    owner = next(o for o in lines if o["unreadable_files"])
    assert owner["unreadable_files"] == 1 and owner["prompt_cache"]["requests"] > 0
    assert subagent.stem not in [s["id"] for s in owner["streams"]]
    assert len(owner["streams"]) == 1  # the compaction agent's file is still there
    assert sum(o["unreadable_files"] for o in lines) == 1


def test_audit_counts_files_deleted_during_its_scan(
    tmp_path: Path, delete_after_discovery: Callable[[Path], None]
) -> None:
    root = tree(tmp_path)
    delete_after_discovery(root / "c" / "model_changed.jsonl")
    result = invoke("audit", "--json", "--no-progress", str(root))
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["unreadable_files"] == 1 and report["sessions"] >= 3
    assert "model_changed.jsonl: vanished" in result.stderr


def test_a_folder_that_cannot_be_listed_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path)
    locked = root / "c"
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    # The failure is simulated in Python: the Python walk sees it (tests/test_walk.py
    # holds the compiled walk to the same answers, a folder it cannot list included).
    monkeypatch.setattr(walk, "list_tree", walk.py_list_tree)
    result = invoke("analyze", "--json", "--now", "0", str(root))
    assert result.exit_code == 0, result.stderr
    assert f"{locked}: cannot read folder (Permission denied)" in result.stderr
    assert "model_changed" not in [o["session_id"] for o in json_lines(result)]
    audit = invoke("audit", "--json", "--no-progress", str(root))
    assert json.loads(audit.stdout)["unreadable_files"] == 1


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root reads a chmod 000 folder anyway (the scandir test covers the same path)",
)
def test_a_chmod_000_folder_is_named(tmp_path: Path) -> None:
    root = tree(tmp_path)
    locked = root / "c"
    locked.chmod(0)
    try:
        result = invoke("analyze", "--json", "--now", "0", str(root))
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 0, result.stderr
    assert f"{locked}: cannot read folder" in result.stderr


def test_a_file_without_read_permission_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path)
    target = root / "a" / "ttl_expired_5m.jsonl"
    fail_open_for(monkeypatch, target)
    result = invoke("analyze", "--json", "--now", "0", str(root))
    assert result.exit_code == 0, result.stderr
    assert f"{target}: cannot read (Permission denied)" in result.stderr
    assert "ttl_expired_5m" not in [o["session_id"] for o in json_lines(result)]


def test_nothing_readable_fails_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "hit.jsonl"
    shutil.copy(RULES / "hit.jsonl", target)
    fail_open_for(monkeypatch, target)
    gone = tmp_path / "gone.jsonl"
    for command in (["analyze", "--json"], ["audit", "--json", "--no-progress"], ["explain"]):
        result = invoke(*command, str(target))
        assert result.exit_code == 1, command
        assert result.stderr == f"Error: {target}: cannot read (Permission denied)\n"
        if command[0] == "explain":
            continue  # explain reads one log
        both = invoke(*command, str(target), str(gone))
        assert both.exit_code == 1, command
        assert f"{target}: cannot read (Permission denied)" in both.stderr
        assert f"{gone}: no such file or directory" in both.stderr
        assert "Error: nothing could be read (2 path(s) unreadable)" in both.stderr
        assert "Traceback" not in both.stderr


def test_audit_counts_skipped_lines_and_empty_sessions_as_analyze(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    shutil.copy(RULES / "hit.jsonl", project / "hit.jsonl")
    # A session of one prompt and nine broken lines: no request, nine lines skipped.
    first = (RULES / "hit.jsonl").read_text().splitlines()[0]
    assert json.loads(first)["type"] == "user"
    (project / "broken.jsonl").write_text(first + "\n" + "{not json\n" * 9)
    analyzed = json_lines(invoke("analyze", "--json", "--now", "0", str(project)))
    report = json.loads(invoke("audit", "--json", "--no-progress", str(project)).stdout)
    # The session without a request comes last.
    assert [(o["session_id"], o["skipped_lines"]) for o in analyzed] == [("hit", 0), ("broken", 9)]
    assert report["skipped_lines"] == sum(o["skipped_lines"] for o in analyzed) == 9
    assert report["empty_sessions"] == 1 and report["sessions"] == 1
    assert report["sessions"] + report["empty_sessions"] == len(analyzed)
    assert report["unreadable_files"] == sum(o["unreadable_files"] for o in analyzed) == 0


def test_a_named_path_that_is_gone_is_reported_and_the_rest_read(tmp_path: Path) -> None:
    gone = tmp_path / "pruned.jsonl"
    result = invoke("analyze", "--json", "--now", "0", str(RULES / "hit.jsonl"), str(gone))
    assert result.exit_code == 0, result.stderr
    assert [o["session_id"] for o in json_lines(result)] == ["hit"]
    assert f"{gone}: no such file or directory" in result.stderr
    alone = invoke("analyze", "--json", str(gone))
    assert (alone.exit_code, alone.stderr) == (1, f"Error: {gone}: no such file or directory\n")


def test_an_unreadable_file_name_reaches_the_terminal_sanitised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "evil\x1b[31m.jsonl"
    shutil.copy(RULES / "hit.jsonl", target)
    fail_open_for(monkeypatch, target)
    result = invoke("analyze", "--json", str(target), str(RULES / "hit.jsonl"))
    assert result.exit_code == 0
    assert "could not read 1 path(s)" in result.stderr and "\x1b" not in result.stderr
