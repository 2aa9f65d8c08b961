"""What a run costs before and around the reading: modules loaded, stats, output writes.

No timings here (the benchmarks time the installed command); these hold the shape that
makes start-up cheap: the JSON paths load no table, pricing-data or other-command
modules, each file found in a folder is stat-ed once, and the output helpers give the
same bytes as the straightforward code they replace.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cachediag import console, quick_audit
from cachediag import quick as quick_run
from cachediag.commands import analyze as analyze_run
from cachediag.ingest.discover import discover
from cachediag.parallel import total_bytes
from cachediag.pipeline import _mtime, _parent, project_groups
from tests.conftest import REAL, ROOT, RULES
from tests.test_output_stable import FOLDER_RUNS, NOW, _check, trees  # noqa: F401 (a fixture)

NEVER_ON_JSON = (
    "rich",
    "pydantic",
    "genai_prices",
    "jsonschema",
    "jq",
    "cachediag.report.tables",
    "cachediag.report.audit_tables",
    "cachediag.proxy.index",
    "cachediag.dataset.query",
)
"""Modules no ``--json`` run needs (once the price cache is warm)."""
OTHER_COMMANDS = ("explain", "export", "proxy", "report", "prompt", "schema", "warm", "watch")


def loaded_modules(args: list[str], cache: Path) -> set[str]:
    """The modules a whole ``cachediag`` run (through the console entry) has loaded, less
    those the interpreter had before it began (a machine's ``.pth`` hooks may import
    e.g. tempfile at start-up: CI's interpreter has one)."""
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "sys.argv = ['cachediag', *sys.argv[1:]]\n"
        "from cachediag.entry import main\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    print(' '.join(sorted(set(sys.modules) - before)), file=sys.stderr)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "XDG_STATE_HOME": str(cache / "state")}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    return set(done.stderr.splitlines()[-1].split())


def _unwanted(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize("command", ["analyze", "audit"])
def test_json_runs_load_no_tables_prices_or_other_commands(command: str, tmp_path: Path) -> None:
    args = [command, "--json", "--jobs", "1", str(REAL)]
    loaded_modules(args, tmp_path)  # the first run fills the price cache
    modules = loaded_modules(args, tmp_path)
    others = tuple(f"cachediag.cli.{c}" for c in (*OTHER_COMMANDS, "analyze", "audit"))
    assert _unwanted(modules, NEVER_ON_JSON) == []
    assert _unwanted(modules, ("click", "cachediag.cli")) == []  # the quick path
    # Through click, only the command's own module of all the commands.
    via_click = loaded_modules([*args, "--timezone", "UTC"], tmp_path)
    assert _unwanted(via_click, others) == [f"cachediag.cli.{command}"]


def test_analyze_json_without_a_window_needs_no_zone_or_temporary_file(tmp_path: Path) -> None:
    args = ["analyze", "--json", "--jobs", "1", str(REAL)]
    loaded_modules(args, tmp_path)
    modules = loaded_modules(args, tmp_path)
    assert _unwanted(modules, ("zoneinfo", "tempfile", "cachediag.workers")) == []
    # A window needs the zone (a date starts at midnight there).
    windowed = loaded_modules([*args[:-1], "--since", "2026-01-01", str(REAL)], tmp_path)
    assert "zoneinfo" in windowed


def test_folder_files_are_stat_ed_once_by_discovery(monkeypatch: pytest.MonkeyPatch) -> None:
    sources = discover([REAL])
    expected = {}
    for src in sources:
        for path in src.paths:
            st = path.stat()
            expected[str(path)] = (st.st_size, st.st_mtime)
    assert {k: v for src in sources for k, v in src.stats.items()} == expected

    def no_stat(self: Path, **_: object) -> os.stat_result:
        raise AssertionError(f"stat of {self} again")

    monkeypatch.setattr(Path, "stat", no_stat)
    groups = project_groups(sources)
    assert sum(total_bytes(g) for g in groups) == sum(size for size, _ in expected.values())
    for src in sources:
        times = [expected[str(p)][1] for p in src.mains or [a.path for a in src.agents[:1]]]
        assert _mtime(src) == min(times)


def test_a_file_without_a_recorded_stat_is_stat_ed_then(tmp_path: Path) -> None:
    log = tmp_path / "one.jsonl"
    log.write_text('{"type":"user"}\n')
    [src] = discover([log])  # named on its own: no walk, no recorded stat
    assert src.stats == {}
    assert total_bytes([src]) == log.stat().st_size
    log.unlink()
    assert total_bytes([src]) == 0
    assert _mtime(src) == 0.0


@pytest.mark.parametrize(
    "text",
    ["a.jsonl", "./a.jsonl", "/a.jsonl", "//a/b.jsonl", "///a/b.jsonl", "a//b/./c.jsonl",
     "a/b/", "/", "..", "../x/y.jsonl", ".", "a/b/.jsonl", "~/x.jsonl", " a/ b.jsonl"],
)  # fmt: skip
def test_parent_text_is_that_of_the_parent_path(text: str) -> None:
    assert _parent(Path(text)) == str(Path(text).parent)


def test_time_order_spills_to_a_file_in_the_same_order(monkeypatch: pytest.MonkeyPatch) -> None:
    items = [(float(i % 7), f'{{"n": {i}, "text": "{"é" * (i % 5)}"}}') for i in range(200)]
    items += [(float("inf"), "last"), (3.0, "")]

    def ordered(limit: int) -> tuple[list[str], bool]:
        monkeypatch.setattr(analyze_run.TimeOrder, "MEMORY_CHARS", limit)
        with analyze_run.TimeOrder() as spool:
            for at, line in items:
                spool.add(at, line)
            return list(spool.lines()), spool._file is not None

    in_memory, spilled = ordered(1 << 20)
    assert not spilled
    on_disk, spilled = ordered(500)
    assert spilled
    expected = [line for _, _, line in sorted((at, n, s) for n, (at, s) in enumerate(items) if s)]
    assert in_memory == on_disk == expected


def test_echo_lines_writes_what_a_line_at_a_time_would(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import click

    lines = [f'{{"i": {i}, "s": "\\u001b[31m ü"}}' for i in range(50)]
    monkeypatch.setattr(console, "ECHO_BLOCK_CHARS", 100)
    console.echo_lines(iter(lines))
    blocked = capsys.readouterr().out
    for line in lines:
        click.echo(line)
    assert blocked == capsys.readouterr().out == "".join(f"{line}\n" for line in lines)
    console.echo_lines([])
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("args", "taken"),
    [
        (["--json", "a"], quick_run.QuickArgs([Path("a")])),
        (["a", "--json", "b", "--json"], quick_run.QuickArgs([Path("a"), Path("b")])),
        (["--requests", "a"], quick_run.QuickArgs([Path("a")], requests=True)),
        (
            ["--json", "--no-captures", "--jobs", "3", "--now", "1.5e9", "a", "--jobs", "2"],
            quick_run.QuickArgs([Path("a")], jobs=2, now=1.5e9, no_captures=True),
        ),
        (["--json", "a", "--now", "1_000"], quick_run.QuickArgs([Path("a")], now=1000.0)),
    ],
)
def test_quick_arguments(args: list[str], taken: quick_run.QuickArgs) -> None:
    assert quick_run.analyze_args(args) == taken


@pytest.mark.parametrize(
    "args",
    [
        ["a"],  # tables
        ["--json"],  # stdin or the history
        ["--json", "-"],
        ["--json", ""],
        ["--json", "--", "a"],
        ["--json", "a", "--help"],
        ["--json", "a", "-h"],
        ["--json", "a", "--jq", "."],
        ["--json", "a", "--since", "7d"],
        ["--json", "a", "--jobs"],
        ["--json", "a", "--jobs", "0"],
        ["--json", "a", "--jobs", "02"],
        ["--json", "a", "--jobs", "+2"],
        ["--json", "a", "--jobs", "--json"],
        ["--json", "a", "--jobs=2"],
        ["--json", "a", "--now", "nan"],
        ["--json", "a", "--now", "-1"],
        ["--json", "a", "--now", "1e12"],
        ["--json", "a", "--now"],
        ["--json", "a", "--pricing", "p.json"],
        ["--json", "a", "--captures", "c"],
        ["--json", "a", "--requets"],
    ],
)
def test_quick_path_leaves_everything_else_to_click(args: list[str]) -> None:
    assert quick_run.analyze_args(args) is None


def test_quick_path_leaves_an_unreadable_path_to_click(tmp_path: Path) -> None:
    locked = tmp_path / "locked.jsonl"
    locked.write_text("{}\n")
    locked.chmod(0)
    if os.access(locked, os.R_OK):
        pytest.skip("running as root: every file is readable")
    assert quick_run.analyze_args(["--json", str(locked)]) is None
    assert quick_run.analyze_args(["--json", str(tmp_path / "absent.jsonl")]) is not None


def _run(how: str, args: list[str], cwd: Path) -> tuple[int, bytes, bytes]:
    """``cachediag ARGS`` through the console entry (``quick``), or through click."""
    code = {
        "quick": "from cachediag.entry import main; import sys; "
        "sys.argv = ['cachediag', *sys.argv[1:]]; main()",
        "click": "from cachediag.cli import main; main(prog_name='cachediag')",
    }[how]
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return done.returncode, done.stdout, done.stderr


def test_quick_path_writes_what_click_does(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = (RULES / "below_threshold.jsonl").read_text().splitlines()
    bad.write_text("\n".join([lines[0], "{not json", *lines[1:], "[1]"]) + "\n")
    (tmp_path / "not-a-log.jsonl").write_text("hello\n")
    (tmp_path / "empty").mkdir()
    runs = [
        ["--json", str(REAL)],
        ["--json", "--requests", "--now", NOW, "--jobs", "2", str(RULES)],
        ["--json", str(bad)],
        ["--json", str(tmp_path / "not-a-log.jsonl")],
        ["--json", str(tmp_path / "not-a-log.jsonl"), str(bad)],
        ["--json", str(tmp_path / "absent.jsonl")],
        ["--json", str(tmp_path / "absent.jsonl"), str(bad)],
        ["--json", str(tmp_path / "empty")],
    ]
    audits = [
        ["--json", str(REAL)],
        ["--json", "--by", "day", "--top", "0", "--jobs", "2", str(REAL), str(RULES)],
        ["--json", "--by", "session", "--now", "1.8e9", "--no-progress", str(RULES)],
        *runs[2:],
    ]
    for command, cases in (("analyze", runs), ("audit", audits)):
        for args in cases:
            quick, by_click = (_run(how, [command, *args], tmp_path) for how in ("quick", "click"))
            assert quick == by_click, (command, args)
    assert _run("quick", ["analyze", "--json", str(bad)], tmp_path)[2]  # the skipped lines
    assert _run("quick", ["audit", "--json", str(tmp_path / "absent.jsonl")], tmp_path)[0] == 1


@pytest.mark.parametrize("name", sorted(FOLDER_RUNS))
@pytest.mark.usefixtures("checkout_order_mtimes")
def test_quick_path_output_is_the_recorded_one(name: str) -> None:
    status, out, err = _run("quick", ["analyze", "--json", "--requests", "--now", NOW,
                                      *FOLDER_RUNS[name]], ROOT)  # fmt: skip
    # Every file of these runs is a log: a 1 would mean one was refused.
    assert status == 0, err
    _check(f"folder-{name}", out)


@pytest.mark.parametrize("tree", ["copies", "small"])
def test_quick_path_tree_output_is_the_recorded_one(trees: Path, tree: str) -> None:  # noqa: F811
    for jobs in ("1", "2"):
        args = ["analyze", "--json", "--now", NOW, "--jobs", jobs, "projects"]
        status, out, err = _run("quick", args, trees / tree)
        assert (status, err) == (0, b"")
        _check(f"tree-{tree}", out)


@pytest.mark.parametrize(
    ("args", "taken"),
    [
        (["--json", "a"], quick_audit.QuickAudit([Path("a")])),
        (
            ["a", "--by", "day", "--json", "--top", "0", "--no-progress", "--jobs", "2", "b"],
            quick_audit.QuickAudit([Path("a"), Path("b")], by="day", top=0, jobs=2, progress=False),
        ),
        (
            ["--json", "a", "--now", "nan", "--progress", "--top", "3", "--by", "stream-kind"],
            quick_audit.QuickAudit([Path("a")], by="stream-kind", top=3, progress=True),
        ),
    ],
)
def test_quick_audit_arguments(args: list[str], taken: quick_audit.QuickAudit) -> None:
    got = quick_audit.audit_args(args)
    assert got is not None
    now = got.now
    got.now = None
    assert got == taken
    assert (now is None) == ("--now" not in args)


@pytest.mark.parametrize(
    "args",
    [
        ["a"],
        ["--json"],
        ["--json", "-"],
        ["--json", "a", "--csv"],
        ["--json", "a", "--jq", "."],
        ["--json", "a", "--schema"],
        ["--json", "a", "--sql"],
        ["--json", "a", "--by", "host"],
        ["--json", "a", "--by", "user"],
        ["--json", "a", "--by", "Day"],
        ["--json", "a", "--by"],
        ["--json", "a", "--by", "gap", "--by", "stream-kind"],  # click's usage error
        ["--json", "a", "--top", "-1"],
        ["--json", "a", "--top", "01"],
        ["--json", "a", "--jobs", "0"],
        ["--json", "a", "--now", "soon"],
        ["--json", "a", "--since", "7d"],
        ["--json", "a", "--timezone", "UTC"],
        ["--json", "a", "--pricing", "p.json"],
        ["--json", "a", "--tokens"],
        ["--json", "a", "--help"],
    ],
)
def test_quick_audit_leaves_everything_else_to_click(args: list[str]) -> None:
    assert quick_audit.audit_args(args) is None


def test_quick_audit_leaves_datasets_to_click(tmp_path: Path) -> None:
    (tmp_path / "_schema.json").write_text("{}")
    assert quick_audit.audit_args(["--json", str(tmp_path)]) is None
    assert quick_audit.audit_args(["--json", str(tmp_path), str(REAL)]) is not None


def test_forks_only_when_the_other_folders_hold_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    from cachediag import parallel

    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    mib = 1 << 20
    assert parallel.workers_for([9 * mib, 1 * mib]) == 1  # one folder holds nearly all
    assert parallel.workers_for([100 * mib]) == 1
    assert parallel.workers_for([]) == 1
    assert parallel.workers_for([3 * mib, 2 * mib, 2 * mib]) == 2
    assert parallel.workers_for([16 * mib] * 6) == 2
    assert parallel.workers_for([mib // 2] * 9) == 2  # 4 MiB beside the largest
    assert parallel.workers_for([mib // 2] * 8) == 1
    assert parallel.workers_for([9 * mib, 1 * mib], requested=3) == 3
