"""Stored answers (``history.answers``): given back only while every file, folder and
missing path they depend on is as it was; never kept when a time is too recent to tell;
private files; keys that move with what the output depends on."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import cachediag
from cachediag.history import answers

LATER = time.time_ns() + 3600 * 10**9
"""A snapshot time an hour ahead: nothing the tests write is racy against it."""


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "projects"
    (tree / "p" / "s" / "subagents").mkdir(parents=True)
    (tree / "p" / "a.jsonl").write_bytes(b'{"x":1}\n')
    (tree / "p" / "s" / "subagents" / "agent-1.jsonl").write_bytes(b'{"y":2}\n')
    return tree


def _kept(tmp_path: Path, roots: list[str]) -> str:
    snap = answers.snapshot(roots)
    assert not answers.racy(snap, LATER)
    answers.save_answer("k", snap, "out\n", "note\n", str(tmp_path))
    assert answers.stored_answer("k", str(tmp_path)) == ("out\n", "note\n")
    return "k"


@pytest.mark.parametrize(
    "change",
    [
        lambda t: (t / "p" / "a.jsonl").write_bytes(b'{"x":2}\n'),  # same size
        lambda t: (t / "p" / "a.jsonl").open("ab").write(b"\n"),
        lambda t: os.utime(t / "p" / "a.jsonl", ns=(0, 10**18)),
        lambda t: (t / "p" / "a.jsonl").chmod(0o400),
        lambda t: (t / "p" / "a.jsonl").unlink(),
        lambda t: (t / "p" / "b.jsonl").write_bytes(b"{}\n"),
        lambda t: (t / "p" / "s" / "subagents" / "agent-2.jsonl").write_bytes(b"{}\n"),
        lambda t: (t / "q").mkdir(),
        lambda t: os.replace(t / "p" / "a.jsonl", t / "p" / "c.jsonl"),
    ],
    ids=["rewritten", "appended", "touched", "chmod", "removed", "new", "deep new", "dir", "moved"],
)
def test_any_change_below_a_root_drops_the_answer(tmp_path: Path, change: object) -> None:
    tree = _tree(tmp_path)
    key = _kept(tmp_path, [str(tree)])
    change(tree)  # type: ignore[operator]
    assert answers.stored_answer(key, str(tmp_path)) is None


def test_a_missing_path_appearing_drops_the_answer(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    key = _kept(tmp_path, [str(home / ".codex" / "sessions")])
    (home / ".codex").mkdir()
    assert answers.stored_answer(key, str(tmp_path)) is None


def test_a_link_retargeted_drops_the_answer(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    link = tree / "p" / "l.jsonl"
    link.symlink_to(tree / "p" / "a.jsonl")
    key = _kept(tmp_path, [str(tree)])
    (tree / "p" / "a.jsonl").unlink()  # the link now broken, in a folder whose mtime moved
    os.utime(tree / "p", ns=(0, (tree / "p").stat().st_mtime_ns))
    assert answers.stored_answer(key, str(tmp_path)) is None


def test_a_snapshot_too_recent_is_racy(tmp_path: Path) -> None:
    snap = answers.snapshot([str(_tree(tmp_path))])
    assert answers.racy(snap, time.time_ns()) and not answers.racy(snap, LATER)


def test_answers_are_private_and_never_read_through_a_link(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    _kept(tmp_path, [str(tree)])
    folder = tmp_path / "history"
    (path,) = folder.glob("answer-k.index")
    assert folder.stat().st_mode & 0o777 == 0o700 and path.stat().st_mode & 0o777 == 0o600
    planted = tmp_path / "planted"
    planted.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(planted)
    assert answers.stored_answer("k", str(tmp_path)) is None
    data = planted.read_bytes()
    planted.write_bytes(data.replace(b"out", b"own"))
    path.unlink()
    path.write_bytes(planted.read_bytes())  # the checksum no longer matches
    assert answers.stored_answer("k", str(tmp_path)) is None


def test_only_the_newest_answers_are_kept(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    snap = answers.snapshot([str(tree)])
    for i in range(answers.KEEP + 3):
        answers.save_answer(f"k{i}", snap, f"{i}\n", "", str(tmp_path))
        path = tmp_path / "history" / f"answer-k{i}.index"
        os.utime(path, ns=(0, 10**18 + i))
    left = sorted(p.name for p in (tmp_path / "history").glob("answer-*.index"))
    assert len(left) == answers.KEEP and "answer-k0.index" not in left
    assert answers.stored_answer(f"k{answers.KEEP + 2}", str(tmp_path)) is not None


def test_the_key_moves_with_arguments_folder_and_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = answers.answer_key(["daily", "--json"], "1")
    assert answers.answer_key(["daily", "--json"], "1") == base
    assert answers.answer_key(["weekly", "--json"], "1") != base
    assert answers.answer_key(["daily", "--json"], "2") != base
    for name in ("TZ", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "HOME", "CODEX_HOME"):
        with monkeypatch.context() as m:
            m.setenv(name, str(tmp_path / "elsewhere"))
            assert answers.answer_key(["daily", "--json"], "1") != base, name
    with monkeypatch.context() as m:
        m.setenv("CLAUDE_CODE_OAUTH_TOKEN", "not part of any key")
        m.setenv("UNRELATED_VARIABLE", "x")
        assert answers.answer_key(["daily", "--json"], "1") == base
    monkeypatch.chdir(tmp_path)
    assert answers.answer_key(["daily", "--json"], "1") != base


def test_a_database_named_is_kept_with_the_files_sqlite_keeps_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cachediag.commands.usage import UsageOptions
    from cachediag.history.report_answers import keeping

    monkeypatch.setattr(answers, "RACY_S", -3600.0)  # written just now, kept all the same
    db = tmp_path / "opencode.db"
    db.write_bytes(b"SQLite format 3\0")
    args = ["daily", "--json", str(db)]
    options = UsageOptions(report="daily", paths=(db,), json=True)
    root = str(tmp_path / "cache")
    assert keeping(args, options, lambda: "{}", root) == "{}"
    key = answers.answer_key(args, cachediag.__version__)
    assert answers.stored_answer(key, root) == ("{}\n", "")
    (tmp_path / "opencode.db-wal").write_bytes(b"a page")
    assert answers.stored_answer(key, root) is None
