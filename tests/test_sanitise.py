"""One sanitiser for every string a log wrote, in every command's output (issue 24).

``tests/test_canary.py`` holds ``ESC`` sequences off stdout. Here the canary is what it
missed: a C1 control (U+009B is CSI, an escape sequence's start on its own), C1's NEL,
the line separator U+2028 and a bidi override (U+202E shows what follows backwards),
put in every place a log or a file name can put text: session ids (file names, OTel
``session.id``), model names, agent ids, project folders, the server's miss reason.

What each output may hold:
- text for a terminal (tables, lines, notes, errors): none of them, ``?`` instead;
- JSON: no raw control character, C1 included (``\\u009b``), nor U+2028/U+2029.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cachediag.cli import main
from cachediag.text import sanitize
from tests.statusline_support import T0, cache_home

__all__ = ["cache_home"]

CANARY = "\x9b31mEVIL\x85\u2028\u202eLIVE\x1b[0m"
TERMINAL_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\u061c]"
)
"""What may never reach a terminal: every character ``sanitize`` replaces (newlines and
tabs aside), written out here independently of it."""
JSON_UNSAFE = re.compile("[\x00-\x1f\x80-\x9f\u2028\u2029]")


def _line(n: int, at: float, *, read: int, write: int, **extra: Any) -> str:
    message = {
        "id": f"msg_{n}",
        "model": f"m-{CANARY}",
        "content": [{"type": "text", "text": "x"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_5m_input_tokens": write},
            "output_tokens": 5,
        },
    }
    if n == 3:
        message["diagnostics"] = {"cache_miss_reason": {"type": CANARY}}
    obj = {
        "type": "assistant",
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n > 1 else None,
        "sessionId": f"s{CANARY}",
        "version": "2.1.0",
        "cwd": f"/home/{CANARY}",
        "timestamp": datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z"),
        "requestId": f"req_{n}",
        "message": message,
        **extra,
    }
    return json.dumps(obj) + "\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return build_tree(tmp_path)


def build_tree(root: Path) -> Path:
    """A session with the canary everywhere, and a subagent of it, under ``root``."""
    project = root / "projects" / f"-home-{CANARY}"
    project.mkdir(parents=True)
    lines = [
        _line(1, T0, read=0, write=20000),
        _line(2, T0 + 60, read=20000, write=500),
        _line(3, T0 + 1000, read=0, write=21000),
        _line(4, T0 + 1010, read=21000, write=300),
        _line(5, T0 + 1020, read=20000, write=400),
    ]
    # The session id of a file is its name: the canary again.
    (project / f"s{CANARY}.jsonl").write_text("".join(lines))
    agents = project / f"s{CANARY}" / "subagents"
    agents.mkdir(parents=True)
    agent = [_line(10 + i, T0 + 100 * i, read=0, write=9000) for i in range(3)]
    (agents / f"agent-a{CANARY}.jsonl").write_text("".join(agent))
    return root


def _session(tree: Path) -> str:
    return str(next((tree / "projects").glob("*/s*.jsonl")))


def _run(args: list[str]) -> Result:
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def assert_terminal_safe(text: str, what: str) -> None:
    found = TERMINAL_UNSAFE.findall(text.replace("\r\n", "\n"))
    assert not found, f"{what}: {found!r} in {text[:2000]!r}"


NOW = ["--now", str(T0 + 1100)]
TEXT_COMMANDS = [
    ["analyze"],
    ["audit"],
    ["audit", "--by", "session"],
    ["audit", "--by", "project"],
    ["audit", "--by", "model"],
    ["audit", "--by", "cause"],
    ["audit", "--csv"],
    ["explain"],
    ["watch", "--once"],
    ["warm", *NOW],
    ["analyze", "--jq", ".session_id"],
    ["warm", *NOW, "--jq", ".sessions[].session_id"],
]
JSON_COMMANDS = [
    ["analyze", "--json"],
    ["analyze", "--requests"],
    ["analyze", "--jq", "."],
    ["audit", "--json"],
    ["audit", "--by", "session", "--json"],
    ["audit", "--jq", "."],
    ["explain", "--json"],
    ["watch", "--once", "--json"],
    ["warm", *NOW, "--json"],
]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _paths(tree: Path, args: list[str]) -> list[str]:
    return [str(tree / "projects")] if args[0] in ("audit", "warm") else [_session(tree)]


@pytest.mark.parametrize("args", TEXT_COMMANDS, ids=" ".join)
def test_terminal_output_holds_no_control_or_reordering_character(
    tree: Path, cache_home: Path, args: list[str]
) -> None:
    result = _run([*args, *_paths(tree, args)])
    assert result.stdout.strip(), result.output
    assert_terminal_safe(result.stdout, f"stdout of {args}")
    assert_terminal_safe(result.stderr, f"stderr of {args}")


@pytest.mark.parametrize("args", JSON_COMMANDS, ids=" ".join)
def test_json_output_escapes_c1_controls_and_separators(
    tree: Path, cache_home: Path, args: list[str]
) -> None:
    result = _run([*args, *_paths(tree, args)])
    lines = result.stdout.splitlines()
    assert lines, result.output
    found = JSON_UNSAFE.findall(result.stdout.replace("\n", ""))
    assert not found, f"{args}: {found!r}"
    # Escaped, not lost: the log's own text reads back whole.
    assert any(CANARY in text for line in lines for text in _strings(json.loads(line)))
    assert_terminal_safe(result.stderr, f"stderr of {args}")


def test_warm_shows_the_session_id_sanitised(tree: Path, cache_home: Path) -> None:
    """``warm`` printed a session id's escape sequences (issue 24): now a ``?`` each."""
    result = _run(["warm", *NOW, str(tree / "projects")])
    assert result.exit_code == 0, result.output
    assert "1 session with a warm prompt cache" in result.stdout
    assert sanitize(f"s{CANARY}")[:8] in result.stdout


def test_warm_errors_are_sanitised(tmp_path: Path, cache_home: Path) -> None:
    """Files whose bytes are not a log at all: each error names its file, sanitised (the
    last one is the command's error exit, the others lines before it)."""
    for name in ("a", "b"):
        (tmp_path / f"{name}{CANARY}.jsonl").write_bytes(b"\x00\xff not json\n" * 3)
    result = _run(["warm", *NOW, *sorted(map(str, tmp_path.glob("*.jsonl")))])
    assert result.exit_code == 1
    assert result.stderr.count("Error: ") == 2, result.stderr
    assert_terminal_safe(result.stdout, "stdout")
    assert_terminal_safe(result.stderr, "stderr")


def test_table_cells_are_sanitised_whoever_builds_them() -> None:
    """The table helper sanitises every cell and header it is given (plain or styled),
    so a table that forgets to cannot print a log's control characters."""
    import io

    from rich.console import Console
    from rich.text import Text

    from cachediag.report.layout import Column, fitted_table, text_lines

    columns = [
        Column(f"h{CANARY}", [[CANARY, "ok"]]),
        Column("styled", [[Text(CANARY, style="red"), Text("fine")]], wraps=True),
    ]
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    console.print(fitted_table(columns, 200))
    console.print(text_lines([CANARY, "two"], 200), soft_wrap=True)
    assert_terminal_safe(out.getvalue(), "table")
    assert "EVIL" in out.getvalue() and "LIVE" in out.getvalue()


CONSOLE = re.compile(r"(?<![A-Za-z_])Console\((?!\)\.width|stderr=True\))")
"""A plain rich Console made for anything but its width or a progress bar on stderr."""
PENDING_CONSOLES: set[str] = set()
"""Modules that still print through a plain rich Console: none, and it must stay so."""


def test_every_console_that_prints_sanitises() -> None:
    """Whatever prints to a terminal with rich does it through ``SafeConsole``; a plain
    ``Console`` is only asked its width, or draws a progress bar on stderr (fixed text)."""
    from tests.conftest import ROOT

    printing = set()
    for path in sorted((ROOT / "cachediag").rglob("*.py")):
        if CONSOLE.search(path.read_text(encoding="utf-8")):
            printing.add(str(path.relative_to(ROOT)))
    assert printing == PENDING_CONSOLES


MARKUP = "[link=https://evil.example/]m[/link][blink]B[/blink]"


def test_log_text_is_never_read_as_rich_markup(tmp_path: Path, cache_home: Path) -> None:
    """A model name holding rich markup: shown as written, in a colour terminal too, and
    never a hyperlink (rich writes OSC 8 escape sequences for ``[link=...]``)."""
    project = tmp_path / "projects" / "p"
    project.mkdir(parents=True)
    lines = [
        _line(1, T0, read=0, write=20000),
        _line(2, T0 + 60, read=20000, write=500),
        _line(3, T0 + 1000, read=0, write=21000),
    ]
    text = "".join(lines).replace(json.dumps(f"m-{CANARY}"), json.dumps(MARKUP))
    (project / "s1.jsonl").write_text(text)
    for args in (["audit", "--by", "model"], ["audit", "--by", "session"]):
        result = CliRunner(env={"FORCE_COLOR": "1", "COLUMNS": "200"}).invoke(
            main, [*args, "--no-progress", str(tmp_path / "projects")]
        )
        assert result.exit_code == 0, result.output
        assert "\x1b]8" not in result.stdout and "\x1b[5m" not in result.stdout, args
        assert "\x1b[" in result.stdout, "not a colour terminal: the test would prove nothing"
        if "model" in args:
            assert MARKUP in re.sub("\x1b\\[[0-9;]*m", "", result.stdout), result.stdout


def test_report_to_stdout_holds_no_raw_control_character(tree: Path, cache_home: Path) -> None:
    """``report --output -`` may be printed: its data is JSON, C1 escaped, bidi replaced."""
    result = _run(["report", "--no-progress", "--output", "-", str(tree / "projects")])
    assert result.exit_code == 0, result.output
    found = re.findall(
        "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069]", result.stdout
    )
    assert not found, found
    assert "EVIL" in result.stdout


@pytest.fixture(scope="module")
def undecodable_names(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A project folder and a session file whose names hold bytes that are not UTF-8, 0x9B
    (8-bit CSI) first: Python reads them as lone surrogates (U+DC9B)."""
    import shutil

    from tests.conftest import REAL

    root = os.fsencode(tmp_path_factory.mktemp("names"))
    project = os.path.join(root, b"-proj\x9b[31mRED\xff")
    os.mkdir(project)
    shutil.copy(REAL / "spotter" / "tool_heavy.jsonl", os.path.join(project, b"sess\x9b[2Jx.jsonl"))
    return root


@pytest.mark.parametrize(
    "args",
    [["analyze"], ["analyze", "--json"], ["analyze", "--requests"], ["audit"], ["audit", "--json"]],
    ids=" ".join,
)
@pytest.mark.parametrize("utf8_mode", ["1", "0"])
@pytest.mark.parametrize("pure", ["1", ""], ids=["python", "compiled"])
def test_file_names_that_are_not_utf8_never_reach_the_output_raw(
    undecodable_names: bytes, args: list[str], utf8_mode: str, pure: str
) -> None:
    """Under a UTF-8 locale a ``surrogateescape`` stdout wrote U+DC9B back as the raw byte
    0x9B (a terminal's CSI; ``analyze --json`` was no longer UTF-8): text shows ``?``,
    JSON the escape ``\\udc9b``, the same from both encoders."""
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONUTF8": utf8_mode}
    env["CACHEDIAG_PURE_PYTHON"] = pure
    run = subprocess.run(
        [sys.executable, "-m", "cachediag", *args, "--no-captures", os.fsdecode(undecodable_names)],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    for out in (run.stdout, run.stderr):
        assert b"\x9b" not in out and b"\xff" not in out
        out.decode("utf-8")
    assert run.stdout.strip()
    if args[0] == "analyze" and len(args) > 1:  # escaped, not lost: the name reads back
        assert json.loads(run.stdout)["session_id"] == "sess\udc9b[2Jx"
