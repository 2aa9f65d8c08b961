"""The usage reports' rows (``daily``, ``weekly``, ``monthly``, ``session``, ``blocks``)
through the history index: ``commands.usage.rows_for`` with the same rows, read once.

A report's rows come from each session's ledger, and the sessions of one project folder
share what they read (a continued session's file starts with copies of the earlier
one's responses, counted once, in the session that made them). So the unit kept is the
project group ``pipeline.project_groups`` makes: its rows, its skipped lines and its
unreadable files, answered from the index while every file of the group is as it was
(identity, size, mtime, ctime: ``history.sessions``); a group any of whose files changed
is read again, alone, the groups that changed in parallel as ``analyze`` reads them. A
group that ended in an error is never kept. The rows are the ``RequestRow`` type of
``cachediag.usage.rows`` and are priced with the project's price data: the index is
salted with cachediag's version and the price source, and rebuilt when either changes.

Wiring: ``commands.usage.rows_for`` calls ``indexed_rows_for(paths, options)`` unless
``--no-index``; both give the same rows (tests/test_history_reports.py) and so every
report the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachediag.follow.files import file_signature
from cachediag.history import store
from cachediag.history.index import Stats
from cachediag.history.sessions import all_gone, dataclass_codec, unchanged_group

if TYPE_CHECKING:
    from cachediag.commands.usage import UsageOptions
    from cachediag.ingest.discover import SessionSource
    from cachediag.model import LineIssue
    from cachediag.usage.rows import RequestRow

KIND = "report-rows"


def _salt(pricing_file: Path | None) -> str:
    import cachediag
    from cachediag.pricing import pricing_source

    return f"{cachediag.__version__}|{pricing_source(pricing_file)}|{pricing_file}"


def group_files(group: Sequence[SessionSource]) -> list[str]:
    files: list[str] = []
    for src in group:
        files.extend(str(p) for p in src.paths)
    return sorted(dict.fromkeys(files))


def indexed_rows_for(
    paths: Iterable[Path],
    options: UsageOptions,
    *,
    root: str | None = None,
    stats: Stats | None = None,
) -> list[RequestRow]:
    """``rows_for``'s rows, answered from the index where the files did not change."""
    from cachediag.commands.usage import _session_rows
    from cachediag.console import finish_reading
    from cachediag.ingest.discover import discover
    from cachediag.model import LineIssue
    from cachediag.pipeline import default_paths, project_groups
    from cachediag.usage.rows import RequestRow

    stats = stats if stats is not None else Stats()
    from cachediag.commands.agents import agents_for

    inputs = list(paths) or default_paths(agents_for(options.agent))
    unreadable: list[LineIssue] = []
    groups = project_groups(discover(inputs, unreadable.append))
    keyed = [(group_files(g), g) for g in groups]
    codec = dataclass_codec(RequestRow, _salt(options.pricing_file))
    where = store.index_path(KIND, root)
    issues: list[LineIssue] = []
    errors: list[str] = []
    rows: list[RequestRow] = []
    read_any = False
    with store.locked(where):
        try:
            index = store.load(where, codec.schema)
        except store.BadIndex:
            index = {"schema": codec.schema, "files": {}}
        kept = index["files"]
        stale = [
            i
            for i, (files, _) in enumerate(keyed)
            if not unchanged_group(kept.get(_key(files)), files)
        ]
        fresh = _read_groups([keyed[i] for i in stale], options, _session_rows)
        answers: dict[int, dict[str, Any] | None] = dict(zip(stale, fresh, strict=True))
        asked = {_key(files) for files, _ in keyed}
        for i, (files, _) in enumerate(keyed):
            entry = answers[i] if i in answers else kept[_key(files)]
            if i in answers:
                stats.read += 1
            else:
                stats.unchanged += 1
            if entry is None:
                continue
            if entry.get("error"):
                errors.append(entry["error"])
                continue
            kept[_key(files)] = entry
            read_any = read_any or entry["sessions"] > 0
            rows.extend(codec.decode(r) for r in entry["rows"])
            issues.extend(LineIssue(*x) for x in entry["issues"])
            unreadable.extend(LineIssue(*x) for x in entry["unreadable"])
        gone = [k for k, e in kept.items() if k not in asked and all_gone(e)]
        for key in gone:
            del kept[key]
        for i, entry in answers.items():
            if entry is not None and entry.get("error"):
                kept.pop(_key(keyed[i][0]), None)  # never kept: read again next time
        if answers or gone:
            store.save(where, index)
    finish_reading(issues, unreadable, errors, bool(unreadable) and not read_any)
    return rows


def _key(files: Sequence[str]) -> str:
    return "\n".join(files)


def _read_groups(
    todo: list[tuple[list[str], list[SessionSource]]],
    options: UsageOptions,
    session_rows: Any,
) -> list[dict[str, Any] | None]:
    """Each group read and analysed (in parallel, as ``analyze`` does), as the entry the
    index keeps: rows, skipped lines, unreadable files, signatures taken before."""
    if not todo:
        return []
    from cachediag.parallel import map_ordered, total_bytes, workers_for
    from cachediag.pipeline import analyze_group

    signatures = [{p: file_signature(p) for p in files} for files, _ in todo]
    render = partial(session_rows, pricing_file=options.pricing_file)
    groups = [group for _, group in todo]
    weights = [total_bytes(group) for group in groups]
    work = partial(analyze_group, now=options.clock(), render=render)
    out: list[dict[str, Any] | None] = []
    for sigs, results in zip(
        signatures,
        map_ordered(work, groups, workers_for(weights, options.jobs), weights),
        strict=True,
    ):
        entry: dict[str, Any] = {
            "sigs": sigs,
            "rows": [],
            "issues": [],
            "unreadable": [],
            "sessions": 0,
        }
        for result in results:
            if result.error is not None:
                entry["error"] = result.error
            entry["issues"] += [[i.source, i.line, i.reason] for i in result.issues]
            entry["unreadable"] += [[i.source, i.line, i.reason] for i in result.unreadable]
            if result.value is not None:
                entry["sessions"] += 1
                entry["rows"] += [_encode(r) for r in result.value]
        out.append(entry)
    return out


def _encode(row: RequestRow) -> list[Any]:
    import dataclasses

    return [getattr(row, f.name) for f in dataclasses.fields(row)]
