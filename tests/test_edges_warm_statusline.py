"""Issue 28's inconsistent edges of ``warm`` and ``statusline``: a path that is not a log
fails as in every other command; ``--check`` names a transcript_path that is not a
transcript; a bad ``--format`` at a terminal is one plain line, never a blank status."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.statusline import fast
from cachediag.statusline.render import FIELDS
from tests.conftest import ROOT
from tests.statusline_support import THREE, cache_home, write
from tests.test_warm import T0
from tests.test_warm import write as write_session


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _not_logs(tmp_path: Path) -> list[Path]:
    text = tmp_path / "notes.md"
    text.write_text("# notes\n\nnot a log\n")
    binary = tmp_path / "tool"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" * 64)
    return [text, binary]


@pytest.mark.parametrize("old", [False, True], ids=["fresh", "last-written-long-ago"])
@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_warm_on_a_path_that_is_not_a_log_is_only_the_error(
    tmp_path: Path, old: bool, as_json: bool
) -> None:
    for path in _not_logs(tmp_path):
        if old:  # as /bin/ls: older than any TTL, which warm otherwise never opens
            os.utime(path, (T0 - 86_400 * 30, T0 - 86_400 * 30))
        args = ["warm", "--now", str(T0), *(["--json"] if as_json else []), str(path)]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, result.output
        assert result.stdout == ""
        assert result.stderr.startswith(f"Error: {path}: ")
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_warm_still_shows_the_logs_it_read_beside_a_bad_path(tmp_path: Path) -> None:
    good = write_session(tmp_path / "s1.jsonl", "s1", T0 - 60, "5m")
    bad = _not_logs(tmp_path)[0]
    result = CliRunner().invoke(main, ["warm", "--json", "--now", str(T0), str(good), str(bad)])
    assert result.exit_code == 1
    assert [s["session_id"] for s in json.loads(result.stdout)["sessions"]] == ["s1"]
    assert result.stderr.startswith(f"Error: {bad}: ")


def test_warm_on_an_old_log_named_is_no_error(tmp_path: Path) -> None:
    old = write_session(tmp_path / "s1.jsonl", "s1", T0 - 86_400 * 30, "1h")
    result = CliRunner().invoke(main, ["warm", "--now", str(T0), str(old)])
    assert result.exit_code == 0, result.output
    assert "No session has a warm prompt cache." in result.output


@pytest.mark.usefixtures(cache_home.__name__)
def test_check_names_a_transcript_path_that_is_not_a_transcript(tmp_path: Path) -> None:
    for path in [*_not_logs(tmp_path), ROOT / "pyproject.toml"]:
        out = io.StringIO()
        payload = json.dumps({"transcript_path": str(path)}).encode()
        code = fast.run(["--check", "--no-color"], io.BytesIO(payload), out, io.StringIO())
        assert code == 1, out.getvalue()
        assert "result      1 problem:" in out.getvalue()
        assert "  - transcript_path is not a Claude Code transcript: " in out.getvalue()


@pytest.mark.usefixtures(cache_home.__name__)
def test_check_of_a_real_transcript_stays_ok(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    out = io.StringIO()
    payload = json.dumps({"transcript_path": str(t)}).encode()
    assert fast.run(["--check"], io.BytesIO(payload), out, io.StringIO()) == 0
    assert out.getvalue().endswith("result      ok\n")


@pytest.mark.usefixtures(cache_home.__name__)
@pytest.mark.parametrize("where", ["stdin", "stderr"])
def test_a_bad_format_at_a_terminal_is_one_plain_line(where: str) -> None:
    class TerminalIn(io.BytesIO):
        def isatty(self) -> bool:
            return True

    out, err = io.StringIO(), Terminal() if where == "stderr" else io.StringIO()
    stdin = TerminalIn(b"{}") if where == "stdin" else io.BytesIO(b"{}")
    code = fast.run(["--format", "{hit} {bogus}"], stdin, out, err)
    known = " ".join(f"{{{name}}}" for name in FIELDS)
    assert (code, out.getvalue()) == (2, "")
    assert err.getvalue() == f"Error: --format: unknown field {{bogus}} (fields: {known})\n"


@pytest.mark.usefixtures(cache_home.__name__)
@pytest.mark.parametrize("template", ["{hit} {bogus}", "{hit"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_bad_format_piped_as_claude_code_runs_it_still_prints_a_line(
    template: str, as_json: bool
) -> None:
    out, err = io.StringIO(), io.StringIO()
    args = ["--format", template, *(["--json"] if as_json else [])]
    assert fast.run(args, io.BytesIO(b"{}"), out, err) == 0
    assert err.getvalue() == ""
    line = out.getvalue()
    assert line.endswith("\n") and line.strip()
    if as_json:
        assert json.loads(line)["prompt_cache"] is None
    else:
        assert line == "cache ?\n"
