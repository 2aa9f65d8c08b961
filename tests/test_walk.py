"""The compiled folder walk (``_walk.c``) and its Python twin give identical answers, and
``walk_jsonl`` gives discovery the files, order and errors it always had."""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachediag.ingest import walk
from cachediag.ingest.walk import py_list_tree, walk_jsonl
from cachediag.model import LineIssue
from tests.conftest import CORPUS, REAL

_walk = pytest.importorskip(
    "cachediag.ingest._walk", reason="the C folder walk was not built (no compiler, or not POSIX)"
)

FIXTURES = Path(__file__).parent.parent / "fixtures"


def both(root: Path | str) -> walk.Tree:
    compiled = _walk.list_tree(str(root))
    assert compiled == py_list_tree(str(root))
    return compiled  # type: ignore[no-any-return]


@pytest.mark.parametrize("root", [FIXTURES, REAL, CORPUS], ids=["fixtures", "real", "corpus"])
def test_twins_agree_on_real_trees(root: Path) -> None:
    if not root.is_dir():
        pytest.skip(f"{root} is not here")
    _, files, errors = both(root)
    assert files and not errors
    assert all(st is not None for _, _, st in files)


def odd_tree(tmp_path: Path) -> Path:
    """Links of every kind, a folder and a fifo named like files, names not UTF-8."""
    root = tmp_path / "projects"
    project = root / "p"
    (project / "s" / "subagents").mkdir(parents=True)
    (project / "a.jsonl").write_text("{}\n")
    (project / "b.txt").write_text("x")
    (project / ".hidden.jsonl").write_text("{}\n")
    (project / "s" / "subagents" / "agent-1.jsonl").write_text("{}\n")
    (project / "dir.jsonl").mkdir()
    (project / "dir.jsonl" / "inner.jsonl").write_text("{}\n")
    (project / "link.jsonl").symlink_to(project / "a.jsonl")
    (project / "broken.jsonl").symlink_to(project / "gone.jsonl")
    (project / "linkdir.jsonl").symlink_to(project / "dir.jsonl")
    (project / "loop").symlink_to(root)
    os.mkfifo(project / "fifo.jsonl")
    os.close(os.open(os.fsencode(str(project)) + b"/caf\xe9.jsonl", os.O_CREAT | os.O_WRONLY))
    os.mkdir(os.fsencode(str(root)) + b"/\xff")
    os.close(os.open(os.fsencode(str(root)) + b"/\xff/x.jsonl", os.O_CREAT | os.O_WRONLY))
    return root


def test_twins_agree_on_links_fifos_and_odd_names(tmp_path: Path) -> None:
    root = odd_tree(tmp_path)
    dirs, files, errors = both(root)
    folder = {i: name for i, (_, name) in enumerate(dirs)}
    listed = sorted((folder[i], name) for i, name, _ in files)
    assert listed == sorted(
        [
            ("p", "a.jsonl"),
            ("p", ".hidden.jsonl"),
            ("p", "link.jsonl"),
            ("p", "caf\udce9.jsonl"),
            ("subagents", "agent-1.jsonl"),
            ("dir.jsonl", "inner.jsonl"),
            ("\udcff", "x.jsonl"),
        ]
    )
    assert not errors
    assert "loop" not in folder.values() and "linkdir.jsonl" not in folder.values()


def test_a_socket_named_like_a_file_is_not_listed(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "s.jsonl"))
        (tmp_path / "t.jsonl").write_text("")
        assert [name for _, name, _ in both(tmp_path)[1]] == ["t.jsonl"]


def test_stats_are_what_os_stat_says(tmp_path: Path) -> None:
    root = odd_tree(tmp_path)
    dirs, files, _ = both(root)
    paths = [str(root)]
    for parent, name in dirs[1:]:
        paths.append(f"{paths[parent]}/{name}")
    for index, name, stat in files:
        st = os.stat(f"{paths[index]}/{name}")
        assert stat == (st.st_size, st.st_mtime)  # the same float, bit for bit


@pytest.mark.parametrize(
    ("make", "number"),
    [(lambda p: p / "missing", errno.ENOENT), (lambda p: p / "f.jsonl", errno.ENOTDIR)],
    ids=["missing", "a file"],
)
def test_a_root_that_cannot_be_listed_is_an_error(
    tmp_path: Path, make: Callable[[Path], Path], number: int
) -> None:
    (tmp_path / "f.jsonl").write_text("")
    assert both(make(tmp_path)) == ([(-1, "")], [], [(0, number)])


def test_an_unlistable_folder_is_reported_and_the_rest_listed(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root lists a folder whatever its mode")
    (tmp_path / "locked").mkdir()
    (tmp_path / "ok.jsonl").write_text("")
    (tmp_path / "locked").chmod(0)
    try:
        dirs, files, errors = both(tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o700)
    assert [name for _, name, _ in files] == ["ok.jsonl"]
    assert errors == [(dirs.index((0, "locked")), errno.EACCES)]


names = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=3),
        st.sampled_from(["a", "b.jsonl", "c.jsonl", "sub", "Z.jsonl", "é.jsonl", "x y.jsonl"]),
        st.sampled_from(["file", "dir", "link"]),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(layout=names)
def test_twins_agree_on_random_trees(
    tmp_path_factory: pytest.TempPathFactory, layout: list[tuple[int, str, str]]
) -> None:
    root = tmp_path_factory.mktemp("tree")
    folders = [root]
    for parent, name, kind in layout:
        at = folders[parent % len(folders)] / name
        if at.exists() or at.is_symlink():
            continue
        if kind == "dir":
            at.mkdir()
            folders.append(at)
        elif kind == "link":
            at.symlink_to(folders[0] / "b.jsonl")
        else:
            at.write_text("{}\n")
    both(root)
    rows = walk_jsonl(root, None)
    # Links here point at files only, so rglob's walk is the same one (it follows none
    # to a folder either); a broken link is no file.
    assert [path for path, _, _ in rows] == sorted(p for p in root.rglob("*.jsonl") if p.is_file())


def test_walk_jsonl_is_the_same_on_either_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = odd_tree(tmp_path)
    (tmp_path / "unlisted").write_text("")
    compiled = walk_jsonl(root, None)
    monkeypatch.setattr(walk, "list_tree", py_list_tree)
    assert walk_jsonl(root, None) == compiled
    assert [rel for _, rel, _ in compiled] == sorted(
        (rel for _, rel, _ in compiled), key=lambda rel: Path(rel).parts
    )
    for path, rel, _ in compiled:
        assert path == root / rel and str(path) == f"{root}/{rel}"


def test_walk_jsonl_reports_what_it_cannot_list(tmp_path: Path) -> None:
    seen: list[LineIssue] = []
    assert walk_jsonl(tmp_path / "missing", seen.append) == []
    reason = "cannot read folder (No such file or directory)"
    assert seen == [LineIssue(str(tmp_path / "missing"), 0, reason)]


def test_a_link_loop_is_passed_over_and_its_folder_listed(tmp_path: Path) -> None:
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    (tmp_path / "ok.jsonl").write_text("")
    assert [name for _, name, _ in both(tmp_path)[1]] == ["ok.jsonl"]


def test_an_entry_that_cannot_be_checked_is_reported_and_the_rest_listed(tmp_path: Path) -> None:
    """A link whose target cannot be looked up for a reason other than its absence (here
    a name longer than any file system takes) leaves its folder incomplete: the folder is
    reported and its other files are listed. The old walk lost the whole folder."""
    for folder in ("b", "a", "a/c"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "ok.jsonl").write_text("")
        (tmp_path / folder / "odd.jsonl").symlink_to("x" * 300)
    (tmp_path / "broken.jsonl").symlink_to(tmp_path / "nothing")
    dirs, files, errors = both(tmp_path)
    assert sorted(name for _, name, _ in files) == ["ok.jsonl"] * 3
    assert sorted(dirs[index][1] for index, _ in errors) == ["a", "b", "c"]
    assert {number for _, number in errors} == {errno.ENAMETOOLONG}
    seen: list[LineIssue] = []
    rows = walk_jsonl(tmp_path, seen.append)
    assert [rel for _, rel, _ in rows] == ["a/c/ok.jsonl", "a/ok.jsonl", "b/ok.jsonl"]
    # In the order the files come, whatever order the folders were listed in.
    reason = f"cannot read folder ({os.strerror(errno.ENAMETOOLONG)})"
    folders = [tmp_path / "a", tmp_path / "a" / "c", tmp_path / "b"]
    assert seen == [LineIssue(str(folder), 0, reason) for folder in folders]


def test_a_path_longer_than_path_max_is_listed_with_its_stat(tmp_path: Path) -> None:
    """Each entry is looked up from its open folder, by both walks: a file whose whole
    path is longer than the system takes (4,096 bytes on Linux) still gets its stat."""
    folder = tmp_path
    while len(str(folder)) < 3800:
        folder = folder / ("d" * 200)
    folder.mkdir(parents=True)
    name = "f" * 240 + ".jsonl"
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.close(os.open(name, os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        os.symlink(name, "g.jsonl", dir_fd=fd)
    finally:
        os.close(fd)
    assert len(str(folder / name)) > 4096
    _, files, errors = both(tmp_path)
    assert sorted(n for _, n, _ in files) == sorted(["g.jsonl", name]) and not errors
    assert all(st is not None and st[0] == 0 for _, _, st in files)
