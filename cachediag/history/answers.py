"""Finished report output, kept so that a repeat of the same command over the same files
prints it again without reading the history, decoding rows or loading the report code.

An answer is kept under a key naming what the output depends on besides files (the
command's arguments, cachediag's version, the interpreter and its path, the environment
variables that can move a history, the zone or the prices; ``answer_key``) with a
``snapshot`` of everything the run could read, taken before it read anything: every
folder and file below each input folder (a folder's mtime moves when an entry is added,
removed or renamed in it, so no walk is needed to check it), each input file, each path
that was not there together with the nearest folder above it that is, and the files of
the code and the price data. A file's signature is its identity, size, mtime and ctime:
an append, a rewrite at the same size, a truncation, a replacement, a touch and a chmod
all change one of them.

``stored_answer`` gives the output back only while every signature is what was saved; an
answer whose inputs hold a time within ``RACY_S`` of the snapshot is not saved (a file
written again in the same clock tick keeps its mtime; git calls such entries racy), so
the next run reads. Answers hold paths, signatures and the report's own output (ids,
counts, costs, model and project names), never prompt text or variable values (only a
hash of them). Standard library only, and nothing imported besides ``history.store``:
this runs before anything else is loaded.
"""

from __future__ import annotations

import os

from cachediag.history import store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    Signature = list[int] | None
    Snapshot = dict[str, Signature]

SCHEMA = "answer-1"
RACY_S = 2.0
"""A saved time this close to the snapshot's (or after it) cannot tell a later write."""
KEEP = 32
"""Answers kept (the newest); one file each, so a lookup reads only its own."""
ENV_PREFIXES = ("HOME", "TZ", "LANG", "LC_", "XDG_", "CLAUDE_", "CODEX_", "GEMINI_")
ENV_PREFIXES_MORE = ("OPENCODE_", "CACHEDIAG_", "PYTHON")
"""Variables that may say where histories, prices, zones or the code are."""
_SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD")
"""Never hashed into a key: credentials change without moving any history."""


def _hex(text: str) -> str:
    try:
        from _blake2 import blake2b  # hashlib's own, without loading OpenSSL first
    except ImportError:  # pragma: no cover - every CPython build has it
        from hashlib import blake2b
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def answer_key(args: Sequence[str], version: str) -> str:
    """The key of a command's answer: its arguments, the working folder (relative paths),
    the interpreter, its module path and the variables that may matter (hashed)."""
    import sys

    names = sorted(
        n
        for n in os.environ
        if n.startswith(ENV_PREFIXES + ENV_PREFIXES_MORE) and not any(w in n for w in _SECRET_WORDS)
    )
    parts = [version, sys.executable, os.getcwd(), *sys.path, "\0", *args, "\0"]
    parts += [f"{n}={os.environ[n]}" for n in names]
    return _hex("\n".join(parts))


def signature(path: str) -> Signature:
    """Identity, size, mtime and ctime of ``path`` (of its target when it is a link; of
    the link itself when that is broken); ``None`` when there is nothing there."""
    try:
        st = os.stat(path)
        kind = 0
    except OSError:
        try:
            st = os.lstat(path)
            kind = 1
        except OSError:
            return None
    return [kind, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def snapshot(roots: Iterable[str], skip: frozenset[str] = frozenset()) -> Snapshot:
    """The signatures to check before answering: each of ``roots``; below a folder,
    every folder and every entry (links to folders not followed, as the folder walk
    does; folders named in ``skip`` left out); above a missing path, the nearest folder
    that exists (creating the path moves its mtime)."""
    out: Snapshot = {}
    for root in roots:
        sig = out[root] = signature(root)
        if sig is None:
            above = os.path.dirname(os.path.abspath(root))
            while signature(above) is None and os.path.dirname(above) != above:
                above = os.path.dirname(above)
            out[above] = signature(above)
            continue
        stack = [root] if os.path.isdir(root) else []
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue  # the folder's own signature holds what it was
            for entry in entries:
                if entry.name in skip:
                    continue
                out[entry.path] = signature(entry.path)
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                except OSError:
                    pass
    return out


def racy(snap: Snapshot, taken_ns: int) -> bool:
    """True when some time in ``snap`` is too close to ``taken_ns`` to tell a change."""
    limit = taken_ns - int(RACY_S * 1e9)
    return any(sig is not None and max(sig[4], sig[5]) >= limit for sig in snap.values())


def _where(key: str, root: str | None) -> str:
    return store.index_path(f"answer-{key}", root)


def stored_answer(key: str, root: str | None = None) -> tuple[str, str] | None:
    """(stdout, stderr) of the answer kept under ``key`` while every file it depends on
    is as it was; ``None`` otherwise (or when the cache folder cannot be used)."""
    try:
        kept = store.load(_where(key, root), SCHEMA)
    except (OSError, ValueError):
        return None
    out, err, snap = kept.get("out"), kept.get("err"), kept["files"]
    if not snap or not isinstance(out, str) or not isinstance(err, str):
        return None
    for path, sig in snap.items():
        if signature(path) != sig:
            return None
    return out, err


def save_answer(key: str, snap: Snapshot, out: str, err: str, root: str | None = None) -> None:
    """Keep ``out`` and ``err`` under ``key`` with ``snap`` (which the caller found not
    ``racy``); the oldest answers beyond ``KEEP`` go."""
    where = _where(key, root)
    store.save(where, {"schema": SCHEMA, "files": snap, "out": out, "err": err})
    _prune(os.path.dirname(where))


def _prune(folder: str) -> None:
    kept: list[tuple[int, str]] = []
    for entry in os.scandir(folder):
        if entry.name.startswith("answer-") and entry.name.endswith(".index"):
            try:
                kept.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
            except OSError:
                continue
    kept.sort(reverse=True)
    for _, path in kept[KEEP:]:
        try:  # noqa: SIM105 - contextlib is one more import on the replay's path
            os.unlink(path)
        except FileNotFoundError:
            pass
