"""The compiled scanner (``_scan.c``) and its Python twin give identical answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cachediag.ingest.lines import py_scan_chunk
from cachediag.ingest.native import API, load_scanner
from cachediag.ingest.needles import WANTED, WANTED_WITH_CHAINS, py_wanted_lines
from cachediag.ingest.sniff import py_scan_head
from tests.conftest import CORPUS, REAL

_scan = pytest.importorskip(
    "cachediag.ingest._scan", reason="the C scanner was not built (no compiler?)"
)

pieces = st.lists(
    st.sampled_from(
        [b"ab", b"xyz", b"a", b"b", b"\n", b"q", b" ", b"\r", b"\t", b"{", b"}", b"}\n{", b"\x00"]
    ),
    max_size=60,
)
needle_sets = st.sampled_from([(b"ab",), (b"ab", b"xyz"), (b"xyz", b"ab", b"b"), (b"}\r",)])


def line_starts(data: bytes) -> list[int]:
    return [0] + [i + 1 for i, c in enumerate(data) if c == ord("\n")]


@settings(max_examples=500, deadline=None)
@given(parts=pieces, needles=needle_sets, data=st.data())
@example(parts=[b"{", b"ab", b"}"], needles=(b"ab",), data=None)
def test_scan_chunk_twins_agree(
    parts: list[bytes], needles: tuple[bytes, ...], data: st.DataObject | None
) -> None:
    buf = b"".join(parts)
    starts = [s for s in line_starts(buf) if s <= len(buf)]
    first = data.draw(st.sampled_from(starts)) if data else 0
    end = data.draw(st.integers(min_value=first, max_value=len(buf))) if data else len(buf)
    assert _scan.scan_chunk(buf, first, end, needles) == py_scan_chunk(buf, first, end, needles)


@settings(max_examples=500, deadline=None)
@given(parts=pieces, needles=needle_sets, cut=st.integers(min_value=0, max_value=400))
def test_wanted_lines_twins_agree(parts: list[bytes], needles: tuple[bytes, ...], cut: int) -> None:
    buf = b"".join(parts)
    end = min(cut, len(buf))
    assert _scan.wanted_lines(buf, end, needles) == py_wanted_lines(buf, end, needles)


head_pieces = st.lists(
    st.sampled_from(
        [
            *(b"\n", b"{", b"}", b" ", b"\x00", b"\xff", b"event:", b"data:", b"even", b"dat"),
            *(b'"version":"', b'"version":', b"1", b"2", b"9", b"0", b"x", b'"'),
        ]
    ),
    max_size=80,
)


@settings(max_examples=800, deadline=None)
@given(parts=head_pieces, lines=st.integers(min_value=0, max_value=25))
@example(parts=[b'{"version":"'], lines=20)
@example(parts=[b'{"version":"', b"\n", b"2"], lines=20)
@example(parts=[b"a\n", b"\x00"], lines=1)
def test_scan_head_twins_agree(parts: list[bytes], lines: int) -> None:
    data = b"".join(parts)
    assert _scan.scan_head(data, lines) == py_scan_head(data, lines)


def real_transcripts() -> list[Path]:
    """The bundled real logs, and the shared corpus when it is there."""
    roots = [REAL, CORPUS]
    return sorted(p for root in roots if root.is_dir() for p in root.rglob("*.jsonl"))


def test_twins_agree_on_real_transcripts() -> None:
    paths = real_transcripts()
    assert len(paths) >= 10
    for path in paths:
        data = path.read_bytes()
        end = data.rfind(b"\n") + 1
        for needles in (WANTED, WANTED_WITH_CHAINS):
            assert _scan.scan_chunk(data, 0, end, needles) == py_scan_chunk(data, 0, end, needles)
            assert _scan.wanted_lines(data, end, needles) == py_wanted_lines(data, end, needles)
        assert _scan.scan_head(data, 20) == py_scan_head(data, 20)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((b"ab\n", 0, 9, (b"a",)), ValueError),
        ((b"ab\n", 2, 1, (b"a",)), ValueError),
        ((b"ab\n", -1, 2, (b"a",)), ValueError),
        ((b"ab\n", 0, 3, (b"",)), ValueError),
        ((b"ab\n", 0, 3, (b"a\nb",)), ValueError),
        ((b"ab\n", 0, 3, ("a",)), TypeError),
        ((b"ab\n", 0, 3, [b"a"]), TypeError),
        ((b"ab\n", 0, 3, (b"a",) * 9), ValueError),
        (("text", 0, 3, (b"a",)), TypeError),
    ],
)
def test_bad_arguments_raise_instead_of_reading_out_of_bounds(
    args: tuple[object, ...], error: type[Exception]
) -> None:
    with pytest.raises(error):
        _scan.scan_chunk(*args)


def test_the_built_scanner_is_the_one_this_code_expects() -> None:
    # An editable install does not rebuild: after editing _scan.c, run
    # `python setup.py build_ext --inplace` (a stale build would be skipped at run time).
    assert _scan.API == API


@pytest.mark.parametrize(("value", "compiled"), [("", True), ("0", True), ("1", False)])
def test_scanner_can_be_switched_off(
    monkeypatch: pytest.MonkeyPatch, value: str, compiled: bool
) -> None:
    monkeypatch.setenv("CACHEDIAG_PURE_PYTHON", value)
    assert (load_scanner() is not None) == compiled


def test_a_stale_build_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHEDIAG_PURE_PYTHON", raising=False)
    monkeypatch.setattr(_scan, "API", API + 1)
    assert load_scanner() is None


def test_scanner_accepts_any_buffer() -> None:
    data = b'{"ab"}\nzz\n{"q"}\n'
    want = _scan.scan_chunk(data, 0, len(data), (b"ab",))
    assert want == ([(0, 0, 7), (1, 7, 10)], 3)
    assert _scan.scan_chunk(bytearray(data), 0, len(data), (b"ab",)) == want
    assert _scan.scan_chunk(memoryview(data), 0, len(data), (b"ab",)) == want


def test_analyze_output_is_the_same_with_either_scanner() -> None:
    paths = [str(REAL)] + (
        [str(CORPUS / "claude-code")] if (CORPUS / "claude-code").is_dir() else []
    )
    argv = [sys.executable, "-m", "cachediag", "analyze", "--json", "--requests", "--now", "0"]
    outputs = []
    for pure in ("", "1"):
        env = {**os.environ, "CACHEDIAG_PURE_PYTHON": pure}
        done = subprocess.run(
            [*argv, *paths], env=env, capture_output=True, check=False, cwd=REAL.parent.parent
        )
        outputs.append((done.returncode, done.stdout, done.stderr))
    assert outputs[0] == outputs[1]
    assert outputs[0][1].count(b"\n") >= 5
