"""The transcript reader is a pipeline (ingest/stages.py is its map): every input, a file
or stdin, enters sniff, detect, scan, pick and parse once each, in that order, each stage
handed what the one before it returned; and no stage module imports another, so none
can walk back into one before it."""

from __future__ import annotations

import ast
import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cachediag.ingest import reader, sniff, stages
from cachediag.ingest.discover import discover
from cachediag.ingest.transcript import TranscriptReader
from cachediag.model import SessionLog
from tests.conftest import REAL, ROOT

SPOTTER = REAL / "spotter"
BIG = SPOTTER / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
"""3 MB: streamed. Its session also has two agent files, each an input of its own."""
SMALL = SPOTTER / "tool_heavy.jsonl"
"""39 kB: read whole."""
CAPTURE = REAL / "claude-trace" / "test-traffic.jsonl"


def _table() -> list[tuple[str, str, list[str]]]:
    """(stage, module, entry functions) of each row of the map in stages' docstring."""
    row = re.compile(r"^    (\w+)\s+ingest/(\w+)\.py\s+([\w, ]+?)\s{2,}", re.M)
    return [
        (stage, module, [entry.strip() for entry in entries.split(",")])
        for stage, module, entries in row.findall(stages.__doc__ or "")
    ]


STAGES = _table()
ORDER = [stage for stage, _, _ in STAGES]


def test_the_map_names_five_stages_and_each_entry_exists() -> None:
    assert ORDER == ["sniff", "detect", "scan", "pick", "parse"]
    for _, module, entries in STAGES:
        mod = __import__(f"cachediag.ingest.{module}", fromlist=["_"])
        for entry in entries:
            assert callable(getattr(mod, entry)), (module, entry)


def _source_of(stage: str, args: tuple[Any, ...]) -> str:
    """Which input a stage call is for, from what the stage is handed."""
    if stage == "sniff":
        return str(args[0]) if isinstance(args[0], Path) else str(args[1])
    if stage in ("detect", "scan"):
        found = args[0]
        return str((found if stage == "detect" else found.sniffed).source)
    return str(args[1])  # pick_fields(numbered, source, ...), parse(picked, source, ...)


class Recorder:
    """Wraps each stage's entry where the reader calls it; records (input, stage) at
    each entry and checks that a stage is handed what the stage before it returned."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str]] = []
        self.returned: dict[str, object] = {}
        self.mismatches: list[tuple[str, str]] = []
        for stage, _, entries in STAGES:
            for entry in entries:
                real = getattr(reader, entry)  # the name the reader looks up
                monkeypatch.setattr(reader, entry, self._wrap(stage, real))
        # The one-call helpers for callers outside the reader are never the reader's way.
        monkeypatch.setattr(sniff, "open_file", self._never("sniff.open_file"))
        monkeypatch.setattr(TranscriptReader, "feed_line", self._never("feed_line"))

    def _wrap(self, stage: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def entered(*args: Any, **kwargs: Any) -> Any:
            source = _source_of(stage, args)
            self.calls.append((source, stage))
            if stage != "sniff" and args[0] is not self.returned.get(source):
                self.mismatches.append((source, stage))
            result = real(*args, **kwargs)
            self.returned[source] = result
            return result

        return entered

    @staticmethod
    def _never(name: str) -> Callable[..., Any]:
        def called(*_: Any, **__: Any) -> Any:
            raise AssertionError(f"the reader called {name}")

        return called

    def stages_of(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for source, stage in self.calls:
            out.setdefault(source, []).append(stage)
        return out


def _read_folder(folder: Path) -> list[SessionLog]:
    claimed: reader.Claims = {}
    return [log for src in discover([folder]) for log in reader.read_sessions(src, claimed)]


def test_every_file_enters_each_stage_once_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _read_folder(SPOTTER)
    recorder = Recorder(monkeypatch)
    recorded = _read_folder(SPOTTER)
    assert recorded == plain  # the recorder only watched
    per_input = recorder.stages_of()
    files = sorted(str(p) for p in SPOTTER.rglob("*.jsonl"))
    assert sorted(per_input) == files
    assert {str(BIG), str(SMALL)} <= set(per_input)  # streamed and held whole
    assert len([f for f in files if "/subagents/" in f]) == 2  # agent files: inputs too
    for source, entered in per_input.items():
        assert entered == ORDER, source
    assert recorder.mismatches == []


def test_stdin_enters_each_stage_once_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    data = BIG.read_bytes()
    plain = reader.read_stdin(io.BytesIO(data))
    recorder = Recorder(monkeypatch)
    recorded = reader.read_stdin(io.BytesIO(data))
    assert recorded == plain and sum(len(s.items) for s in recorded[0].streams.values()) > 100
    assert recorder.calls == [("-", stage) for stage in ORDER]
    assert recorder.mismatches == []


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_a_log_of_another_format_leaves_after_detect(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder(monkeypatch)
    if how == "file":
        logs = _read_folder(CAPTURE)
    else:
        logs = reader.read_stdin(io.BytesIO(CAPTURE.read_bytes()))
    assert logs and all(log.format != "claude-code" for log in logs)
    source = str(CAPTURE) if how == "file" else "-"
    assert recorder.calls == [(source, "sniff"), (source, "detect")]


def test_a_file_that_is_not_a_log_stops_at_detect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.jsonl").write_bytes(b"not json\n")
    recorder = Recorder(monkeypatch)
    (log,) = _read_folder(folder)
    assert [i.line for i in log.issues] == [0]
    assert recorder.stages_of() == {str(folder / "notes.jsonl"): ["sniff", "detect"]}


# -- the imports: no stage module imports another --------------------------------------

ALLOWED = {
    ("sniff", "detect"): "open_file",  # sniffed and detected, for warm, statusline --check
    ("transcript", "fields"): "feed_line",  # one raw line picked and parsed, for follow/
}
"""The one-call helpers for callers outside the reader (which never calls them:
``Recorder`` fails a read that does): the only places a stage reaches another."""


def _scoped(node: ast.AST, scope: str = "<module>") -> Iterator[tuple[ast.AST, str]]:
    """Every node below ``node``, with the name of the function it is in."""
    for child in ast.iter_child_nodes(node):
        inner = child.name if isinstance(child, ast.FunctionDef) else scope
        yield child, inner
        yield from _scoped(child, inner)


def _stage_imported(node: ast.AST, stages_: set[str]) -> dict[str, str]:
    """Names an import binds to another stage module: {name: module}."""
    if isinstance(node, ast.ImportFrom) and node.module == "cachediag.ingest":
        return {a.asname or a.name: a.name for a in node.names if a.name in stages_}
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cachediag.ingest."):
        module = (node.module or "").split(".")[2]
        return {a.asname or a.name: module for a in node.names} if module in stages_ else {}
    if isinstance(node, ast.Import):
        dotted = [a.name.split(".") for a in node.names]
        return {
            ".".join(d): d[2]
            for d in dotted
            if d[:2] == ["cachediag", "ingest"] and len(d) > 2 and d[2] in stages_
        }
    return {}


def _reaches(text: str, stage: str, stages_: set[str]) -> set[tuple[str, str]]:
    """(other stage module, function) wherever ``stage``'s module (``text``) reaches
    another stage: an import in a function, or a use of a name a module-level import
    bound."""
    tree = ast.parse(text)
    others = stages_ - {stage}
    bound: dict[str, str] = {}
    reached: set[tuple[str, str]] = set()
    for node, scope in _scoped(tree):
        names = _stage_imported(node, others)
        if scope == "<module>":
            bound.update(names)
        reached |= {(module, scope) for module in names.values() if scope != "<module>"}
    for node, scope in _scoped(tree):
        if isinstance(node, ast.Name) and node.id in bound:
            reached.add((bound[node.id], scope))
    return reached


def _strays(text: str, stage: str) -> set[tuple[str, str]]:
    reached = _reaches(text, stage, {module for _, module, _ in STAGES})
    return {(module, scope) for module, scope in reached if ALLOWED.get((stage, module)) != scope}


@pytest.mark.parametrize("stage", [module for _, module, _ in STAGES])
def test_a_stage_reaches_no_other_stage(stage: str) -> None:
    text = (ROOT / "cachediag" / "ingest" / f"{stage}.py").read_text()
    assert "from cachediag.ingest.stages import" in text  # it speaks the map's types
    assert _strays(text, stage) == set()


def test_the_check_sees_a_stage_walking_back() -> None:
    """The check, on code of the shape the reader had before: a sniff that matches lines
    with the scan's functions, a pick that counts bad lines in the scan's module, a
    helper beside an allowed one."""
    sniff_text = (
        "from cachediag.ingest.lines import scan_chunk\n"
        "def matching(data):\n    return scan_chunk(data)\n"
        "def open_file(p):\n    from cachediag.ingest.detect import detect\n"
        "def peek(s):\n    from cachediag.ingest import detect\n"
    )
    assert _strays(sniff_text, "sniff") == {("lines", "matching"), ("detect", "peek")}
    fields_text = (
        "from cachediag.ingest import lines\ndef pick(n):\n    return lines.parsed_lines(n)\n"
    )
    assert _strays(fields_text, "fields") == {("lines", "pick")}


def test_only_the_reader_runs_the_stages() -> None:
    """Every entry is imported by the reader, from the module the map names."""
    tree = ast.parse((ROOT / "cachediag" / "ingest" / "reader.py").read_text())
    imported = {
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    for _, module, entries in STAGES:
        for entry in entries:
            assert (f"cachediag.ingest.{module}", entry) in imported


def _stage_entries_used(path: Path, entries: dict[str, set[str]]) -> list[str]:
    """The stage entries a file imports by name, or reaches as ``module.entry``."""
    tree = ast.parse(path.read_text())
    used: list[str] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "cachediag.ingest":
            aliases.update({a.asname or a.name: a.name for a in node.names if a.name in entries})
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = node.module.removeprefix("cachediag.ingest.")
            used += [f"{module}.{a.name}" for a in node.names if a.name in entries.get(module, ())]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            aliased = aliases.get(node.value.id)
            if aliased is not None and node.attr in entries[aliased]:
                used.append(f"{aliased}.{node.attr}")
    return used


def test_no_one_else_in_ingest_runs_a_stage() -> None:
    """Outside the reader and the stages themselves, nothing in ingest calls an entry."""
    entries = {module: set(names) for _, module, names in STAGES}
    own = {f"{module}.py" for module in entries} | {"reader.py", "stages.py"}
    others = [p for p in (ROOT / "cachediag" / "ingest").glob("*.py") if p.name not in own]
    assert len(others) > 10
    assert {p.name: _stage_entries_used(p, entries) for p in others} == {p.name: [] for p in others}
