"""Bad input: a clear message and exit 1 for a file that is not a log; a bad line inside
a log is counted and skipped with its file and line number, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import RULES

GOOD = (RULES / "hit.jsonl").read_bytes()


def run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    assert "Traceback" not in result.stdout + result.stderr
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b"\n\n", "empty"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00", "binary data"),
        (b'{"hello": "world"}\n{"a": 1}\n', "not a log cachediag reads"),
        (b"[1, 2, 3]\n", "not a JSON object"),
        (b"just some text\n", "not a JSON object"),
    ],
)
def test_not_a_log_is_an_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    code, out, err = run("analyze", "--json", str(path))
    assert code == 1
    assert out == ""
    assert f"Error: {path}" in err and message in err


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    code, _, err = run("analyze", str(tmp_path / "nope.jsonl"))
    assert code == 1 and "no such file" in err


def _lines() -> list[bytes]:
    return GOOD.splitlines(keepends=True)


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda ls: [*ls[:-1], ls[-1][: len(ls[-1]) // 2]], "incomplete last line"),
        (lambda ls: [*ls[:3], b'{"type": "assistant", "mess\n', *ls[3:]], "not valid JSON"),
        (lambda ls: [*ls[:3], b'{"type": "assistant", "x": "\xff\xfe"}\n', *ls[3:]], "UTF-8"),
    ],
    ids=["half-written last line", "line cut in half", "non-UTF-8 byte"],
)
def test_bad_line_is_counted_and_skipped(tmp_path: Path, mangle, reason: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(mangle(_lines())))
    code, out, err = run("analyze", "--json", "--now", "0", str(path))
    assert code == 0
    obj = json.loads(out)
    assert obj["skipped_lines"] == 1
    assert f"skipped 1 line(s): {path}:" in err and reason in err


@pytest.mark.parametrize(
    ("usage_patch", "reason"),
    [
        ({"input_tokens": "12"}, "usage.input_tokens is not a number"),
        ({"cache_read_input_tokens": -5}, "is not a non-negative integer"),
        ({"output_tokens": 1.5}, "is not a non-negative integer"),
    ],
)
def test_bad_usage_is_counted_and_skipped(tmp_path: Path, usage_patch: dict, reason: str) -> None:  # type: ignore[type-arg]
    lines = [json.loads(x) for x in _lines()]
    # The first line of a response: later copies only contribute their output count.
    firsts: dict[str, int] = {}
    for i, x in enumerate(lines):
        if x["type"] == "assistant":
            firsts.setdefault(x["message"]["id"], i)
    target = sorted(firsts.values())[1]
    lines[target]["message"]["usage"].update(usage_patch)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, out, err = run("analyze", "--json", "--now", "0", str(path))
    assert code == 0
    assert json.loads(out)["skipped_lines"] == 1
    assert f"{path}:{target + 1}: {reason}" in err or reason in err


def test_bad_stdin_is_an_error() -> None:
    code, out, err = run("analyze", "-", stdin=b"\x00\x01\x02")
    assert code == 1 and out == "" and "Error: -: binary data" in err


def test_good_and_bad_files_together_report_both(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"nonsense\n")
    code, out, err = run("analyze", "--json", str(RULES / "hit.jsonl"), str(bad))
    assert code == 1
    assert json.loads(out)["prompt_cache"]["requests"] == 3
    assert "Error:" in err and "bad.jsonl" in err


def test_stray_files_in_a_scanned_folder_are_skipped_with_a_note(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "s1.jsonl").write_bytes(GOOD)
    (project / "empty.jsonl").write_bytes(b"")
    (project / "history.jsonl").write_text('{"display": "hi", "pastedContents": {}}\n')
    code, out, err = run("analyze", "--json", "--now", "0", str(project))
    assert code == 0
    assert [json.loads(x)["session_id"] for x in out.splitlines()] == ["s1"]
    assert "skipped 2 file(s)" in err and "empty.jsonl: empty" in err


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (b'"timestamp": "2026', b'"timestamp": 1e17, "x": "2026', "timestamp out of range"),
        (b'"input_tokens": 3,', b'"input_tokens": 1e300,', "implausibly large"),
    ],
)
def test_absurd_values_are_bad_lines(tmp_path: Path, old: bytes, new: bytes, reason: str) -> None:
    lines = _lines()
    target = next(i for i, raw in enumerate(lines) if b'"assistant"' in raw and old in raw)
    lines[target] = lines[target].replace(old, new, 1)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines))
    for args in (["analyze", "--json", "--now", "0"], ["analyze"], ["audit"]):
        code, _, err = run(*args, str(path))
        assert code == 0 and reason in err
