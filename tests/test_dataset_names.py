"""Names that are not UTF-8 (a folder or file name in other bytes, a ``--label`` typed in
another encoding): every writer of ``audit``, ``report`` and ``export`` goes on, or says
what is wrong in one line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.dataset_support import audit_json, require_module, run

SESSION = FIXTURES / "proxy" / "session.jsonl"


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """A project folder and a session file whose names are not UTF-8, and a transcript
    without ``cwd`` (so the folder's name is the project's)."""
    root = tmp_path / "projects"
    folder = os.path.join(os.fsencode(root), b"proj-\xff\xfe")
    os.makedirs(folder)
    lines = [json.loads(line) for line in SESSION.read_text().splitlines()]
    for line in lines:
        line.pop("cwd", None)
    with open(os.path.join(folder, b"s\xe9.jsonl"), "w") as fp:
        fp.writelines(json.dumps(line) + "\n" for line in lines)
    return root


def _clean(result: Any) -> None:
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output


def test_audit_by_project(history: Path) -> None:
    report = audit_json("--by", "project", str(history))
    assert [g["key"] for g in report["groups"]] == ["proj-\ufffd\ufffd"]
    assert report["whatif_by_session"][0]["session_id"] == "s\ufffd"
    _clean(run("audit", "--by", "project", str(history)))
    _clean(run("audit", "--csv", "--by", "session", str(history)))


def test_report(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    _clean(run("report", str(history), "--output", str(out)))
    assert "proj-\ufffd\ufffd" in out.read_text(encoding="utf-8")


def test_export_and_its_audit(history: Path, tmp_path: Path) -> None:
    require_module("pyarrow")
    require_module("duckdb")
    out = tmp_path / "ds"
    _clean(run("export", str(history), "--output", str(out), "--label", "host=h"))
    report = audit_json("--by", "project", str(out))
    assert [g["key"] for g in report["groups"]] == ["proj-\ufffd\ufffd"]
    assert report["totals"]["requests"] == audit_json(str(history))["totals"]["requests"]
    # Read again (each response once) from the file as the file system names it.
    twice = audit_json(str(history), str(history / os.fsdecode(b"proj-\xff\xfe")))
    assert twice["totals"]["requests"] == report["totals"]["requests"]


def test_a_label_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    label = "team=" + os.fsdecode(b"\xff")
    result = run("export", str(SESSION), "--output", str(tmp_path / "ds"), "--label", label)
    assert result.exit_code == 2
    assert "--label" in result.stderr and "not UTF-8" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "ds").exists()
