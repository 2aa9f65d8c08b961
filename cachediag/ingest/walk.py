"""Every ``*.jsonl`` file below a folder, with the size and time discovery keeps of it.

The listing (``list_tree``) is ``_walk.list_tree`` in C where it was built (POSIX), with
``py_list_tree`` as its Python twin: on a history of 10,000 session files, a DirEntry and
a 19-field stat result per file were a large part of what happens before the worker
processes start. tests/test_walk.py holds the two to the same answers.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from cachediag.ingest.native import compiled_module
from cachediag.model import LineIssue

FileStat = tuple[int, float]
"""A file's ``st_size`` and ``st_mtime``."""

Tree = tuple[list[tuple[int, str]], list[tuple[int, str, FileStat | None]], list[tuple[int, int]]]
"""``list_tree``'s answer: folders (parent's index, name), files (folder's index, name,
stat), folders that could not be listed (index, errno)."""

OnError = Callable[[LineIssue], None]


def py_list_tree(root: str) -> Tree:
    """Every folder below ``root`` (links to folders are not followed, so a tree with a
    loop ends) and every ``*.jsonl`` regular file in them (a link to one counts), folder
    by folder in the order they were found. ``dirs[0]`` is ``root`` itself, ``(-1, "")``.

    A file whose stat fails (it vanished since the listing) has ``None``. ``errors``
    holds, with the first errno, each folder that could not be listed, or not wholly:
    its listing failed part-way, or an entry could not be told a folder or a file for a
    reason other than not being there (``_NOT_THERE``: a broken link, a link loop).
    Such an entry is left out and the rest of its folder is listed."""
    dirs: list[tuple[int, str]] = [(-1, "")]
    paths = [root]
    files: list[tuple[int, str, FileStat | None]] = []
    errors: list[tuple[int, int]] = []
    index = 0
    while index < len(dirs):
        failed = 0
        try:
            with _listing(paths[index]) as entries:
                for entry in entries:
                    name = entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            dirs.append((index, name))
                            paths.append(os.path.join(paths[index], name))
                            continue
                        if not (name.endswith(".jsonl") and entry.is_file()):
                            continue
                    except OSError as exc:
                        if exc.errno not in _NOT_THERE:
                            failed = failed or exc.errno or errno.EIO
                        continue
                    files.append((index, name, _stat_of(entry)))
        except OSError as exc:
            failed = failed or exc.errno or errno.EIO
        if failed:
            errors.append((index, failed))
        index += 1
    return dirs, files, errors


@contextlib.contextmanager
def _listing(path: str) -> Iterator[Iterator[os.DirEntry[str]]]:
    """``os.scandir(path)``; where it takes a folder's descriptor, through one, so that
    each entry is looked up from its folder as ``_walk.c`` does (a name past ``PATH_MAX``
    in all still gets its stat)."""
    if os.scandir not in os.supports_fd:
        with os.scandir(path) as entries:
            yield entries
        return
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0))
    try:
        with os.scandir(fd) as entries:
            yield entries
    finally:
        os.close(fd)


_NOT_THERE = frozenset((errno.ENOENT, errno.ENOTDIR, errno.ELOOP))
"""Why an entry's stat can fail that means it is no file to read: gone since the
listing, a link to nothing, a link loop (as ``_walk.c``'s ``lookup_failed``)."""


def _stat_of(entry: os.DirEntry[str]) -> FileStat | None:
    try:
        st = entry.stat()  # follows a link, as Path.stat does
    except OSError:
        return None
    return st.st_size, st.st_mtime


WALK_API = 1
"""The ``_walk.API`` this code was written for (as ``native.API`` for the scanner)."""


def _compiled() -> Callable[[str], Tree] | None:
    walk = compiled_module("ingest._walk", WALK_API)
    return None if walk is None else walk.list_tree


list_tree: Callable[[str], Tree] = _compiled() or py_list_tree


def walk_jsonl(root: Path, on_error: OnError | None) -> list[tuple[Path, str, FileStat | None]]:
    """(path, path relative to ``root`` as text, (size, mtime) or ``None``) of every
    ``*.jsonl`` file below ``root``, in ``Path`` order (part by part); a folder that
    cannot be listed goes to ``on_error`` (``Path.rglob`` passes it over without a word).

    Each path is its folder's joined with its name (on Python 3.11 cheaper than a path
    parsed from its whole text), and relative paths are compared as text."""
    dirs, files, errors = list_tree(str(root))
    folders = [root]
    rels = [""]
    for parent, name in dirs[1:]:
        folders.append(folders[parent] / name)
        rels.append(f"{rels[parent]}{name}/")
    if on_error is not None:
        for index, number in sorted(errors, key=lambda row: _part_by_part(rels[row[0]])):
            reason = os.strerror(number)
            on_error(LineIssue(str(folders[index]), 0, f"cannot read folder ({reason})"))
    found = [(folders[index] / name, rels[index] + name, st) for index, name, st in files]
    found.sort(key=lambda row: _part_by_part(row[1]))
    return found


def _part_by_part(rel: str) -> str:
    """A sort key that orders relative paths as ``Path`` does, part by part: the text
    with each "/" as a NUL (lower than any character a name can hold), without a list
    of parts per file."""
    return rel.replace("/", "\0")


def jsonl_files(root: Path, on_error: OnError | None = None) -> list[Path]:
    """Every regular ``*.jsonl`` file below ``root``, sorted (``walk_jsonl``)."""
    return [path for path, _, _ in walk_jsonl(root, on_error)]
