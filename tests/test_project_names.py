"""Projects are named by their real path when the transcripts carry ``cwd``.

Claude Code keeps a project's sessions in a folder named after the path with every
character but a letter or a digit turned into ``-``: ``/home/me/my-app`` and
``/home/me/my_app`` both become ``-home-me-my-app``. The folder's name is only the
fallback, for transcripts without ``cwd``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import REAL

SHORT = REAL / "spotter" / "short.jsonl"
TOOL_HEAVY = REAL / "spotter" / "tool_heavy.jsonl"  # the same cwd, and one miss
CWD = "/home/marco/projects/spotter"
FOLDER = "-home-marco-projects-spotter"


def rewrite(source: Path, target: Path, change: Callable[[int, dict[str, Any]], None]) -> Path:
    """``source`` with ``change(line number, object)`` applied to every line."""
    out = []
    for n, raw in enumerate(source.read_text().splitlines()):
        obj = json.loads(raw)
        change(n, obj)
        out.append(json.dumps(obj, separators=(",", ":")))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(out) + "\n")
    return target


def set_cwd(
    cwd: str | None, session_id: str | None = None
) -> Callable[[int, dict[str, Any]], None]:
    """Every line's ``cwd`` set (or removed); with ``session_id``, a session of its own:
    that id, and message and request ids of its own."""

    def change(_: int, obj: dict[str, Any]) -> None:
        if cwd is None:
            obj.pop("cwd", None)
        elif "cwd" in obj:
            obj["cwd"] = cwd
        if session_id is not None:
            obj["sessionId"] = session_id
            if isinstance(obj.get("requestId"), str):
                obj["requestId"] += session_id
            message = obj.get("message")
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                message["id"] += session_id

    return change


def invoke(*args: str, stdin: bytes | None = None, width: int = 120) -> str:
    result = CliRunner().invoke(
        main, list(args), input=stdin, env={"COLUMNS": str(width), "NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def analyzed(*paths: Path) -> list[dict[str, Any]]:
    out = invoke("analyze", "--json", "--now", "0", *map(str, paths))
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``projects/<encoded path>/short.jsonl``, as Claude Code lays it out."""
    target = tmp_path / "projects" / FOLDER / "short.jsonl"
    target.parent.mkdir(parents=True)
    target.write_bytes(SHORT.read_bytes())
    return tmp_path / "projects"


def test_the_transcripts_cwd_names_the_project(tree: Path) -> None:
    (session,) = analyzed(tree)
    assert session["project"] == CWD
    table = invoke("analyze", "--now", "0", str(tree))
    assert f"  project {CWD} ·" in table


def test_without_cwd_the_folder_names_it(tree: Path, tmp_path: Path) -> None:
    path = tree / FOLDER / "short.jsonl"
    rewrite(path, path, set_cwd(None))
    (session,) = analyzed(tree)
    assert session["project"] == FOLDER


def test_the_first_cwd_is_the_project_though_the_shell_moves(tree: Path) -> None:
    path = tree / FOLDER / "short.jsonl"

    started = False

    def cd_later(_: int, obj: dict[str, Any]) -> None:
        nonlocal started
        if started and "cwd" in obj:
            obj["cwd"] = CWD + "/assets"  # a `cd assets` in the session's shell
        started = started or obj.get("type") == "assistant"

    rewrite(path, path, cd_later)
    (session,) = analyzed(tree)
    assert session["project"] == CWD


def test_a_piped_transcript_is_named_by_its_cwd() -> None:
    out = invoke("analyze", "--json", "--now", "0", "-", stdin=SHORT.read_bytes())
    assert json.loads(out)["project"] == CWD


def test_two_paths_one_folder_name_stay_two_projects(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-me-my-app"
    rewrite(TOOL_HEAVY, folder / "a.jsonl", set_cwd("/home/me/my-app", "a"))
    rewrite(TOOL_HEAVY, folder / "b.jsonl", set_cwd("/home/me/my_app", "b"))
    out = invoke("audit", "--json", "--no-progress", "--by", "project", str(tmp_path / "projects"))
    (report,) = [json.loads(line) for line in out.splitlines()]
    assert sorted(g["key"] for g in report["groups"]) == ["/home/me/my-app", "/home/me/my_app"]
    # Each session's miss (tool_heavy has one) under its own project.
    misses = sorted((m["session_id"], m["project"]) for m in report["top_misses"])
    assert misses == [("a", "/home/me/my-app"), ("b", "/home/me/my_app")]
    table = invoke("audit", "--no-progress", "--by", "project", str(tmp_path / "projects"))
    assert "/home/me/my-app " in table and "/home/me/my_app " in table


def test_a_long_path_is_shortened_from_the_left_at_80_columns(tmp_path: Path) -> None:
    deep = "/home/someone/work/clients/acme-corporation/monorepo/packages/frontend-web-app"
    folder = tmp_path / "projects" / "x"
    rewrite(SHORT, folder / "short.jsonl", set_cwd(deep))
    (report,) = [
        json.loads(line)
        for line in invoke(
            "audit", "--json", "--no-progress", "--by", "project", str(folder)
        ).splitlines()
    ]
    assert report["groups"][0]["key"] == deep
    for width in (80, 120):
        table = invoke("audit", "--no-progress", "--by", "project", str(folder), width=width)
        assert max(map(len, table.splitlines())) <= width
        # Its end tells projects apart: cut from the left, at a "/".
        shown = next(line for line in table.splitlines() if "frontend-web-app" in line)
        assert shown.startswith("…/") and "/packages/frontend-web-app │" in shown
        assert deep not in table
    wide = invoke("audit", "--no-progress", "--by", "project", str(folder), width=200)
    assert f"{deep} │" in wide


def test_watch_names_the_project_by_its_path(tree: Path) -> None:
    events = [
        json.loads(line) for line in invoke("watch", "--once", "--json", str(tree)).splitlines()
    ]
    named = [e for e in events if "project" in e]
    assert named and {e["project"] for e in named} == {CWD}
    assert {e["event"] for e in named} >= {"request", "summary"}
    lines = invoke("watch", "--once", str(tree))
    assert f"({CWD})" in lines


def test_warm_names_the_project_by_its_path(tree: Path) -> None:
    (session,) = analyzed(tree)
    expires = session["prompt_cache"]["expires_at"]
    out = invoke("warm", "--json", "--now", str(expires - 60), str(tree))
    (row,) = json.loads(out)["sessions"]
    assert row["project"] == CWD
    assert CWD in invoke("warm", "--now", str(expires - 60), str(tree))


def test_a_hostile_cwd_reaches_the_terminal_sanitised(tmp_path: Path) -> None:
    evil = "/tmp/x\x1b]0;owned\x07\ny\u202e"
    folder = tmp_path / "projects" / "p"
    rewrite(SHORT, folder / "short.jsonl", set_cwd(evil))
    (session,) = analyzed(folder)
    assert session["project"] == evil  # JSON keeps it exactly (escaped)
    for out in (
        invoke("analyze", "--now", "0", str(folder)),
        invoke("audit", "--no-progress", "--by", "project", str(folder)),
        invoke("watch", "--once", str(folder)),
    ):
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        assert "/tmp/x?]0;owned??y?" in out
