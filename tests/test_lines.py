"""The chunked line scanner finds exactly the lines a per-line test finds, with numbers."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachediag.ingest import lines
from cachediag.ingest.lines import scan_lines

NEEDLES = (b"ab", b"xyz")


@pytest.fixture(params=["compiled", "python"], autouse=True)
def scanner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs with the compiled scanner and with its Python twin."""
    if request.param == "compiled":
        native = pytest.importorskip("cachediag.ingest._scan", reason="C scanner not built")
        monkeypatch.setattr(lines, "scan_chunk", native.scan_chunk)
    else:
        monkeypatch.setattr(lines, "scan_chunk", lines.py_scan_chunk)
    return str(request.param)


pieces = st.lists(
    st.sampled_from([b"ab", b"xyz", b"a", b"b", b"\n", b"q", b"x", b"yz", b"{", b"}", b"}\n{"])
)


def expected(data: bytes, needles: tuple[bytes, ...]) -> set[int]:
    """The line numbers to yield: lines holding a needle, and lines that are not blank
    and not ``{...}`` once stripped (so that their parse fails and they are counted)."""
    found = set()
    for number, raw in enumerate(io.BytesIO(data), start=1):
        text = raw.strip()
        needle = any(n in raw for n in needles)
        if needle or (text and not (text.startswith(b"{") and text.endswith(b"}"))):
            found.add(number)
    return found


def check(data: bytes, got: list[tuple[int, bytes]], needles: tuple[bytes, ...]) -> None:
    numbers = [n for n, _ in got]
    assert numbers == sorted(set(numbers))
    assert set(numbers) == expected(data, needles)
    raw_lines = io.BytesIO(data).readlines()
    assert all(raw_lines[n - 1] == raw for n, raw in got)


@settings(max_examples=300, deadline=None)
@given(parts=pieces, chunk=st.integers(min_value=1, max_value=12))
def test_scan_matches_per_line_filter(parts: list[bytes], chunk: int) -> None:
    data = b"".join(parts)
    original = lines.CHUNK_BYTES
    lines.CHUNK_BYTES = chunk
    try:
        got = list(scan_lines(io.BytesIO(data), NEEDLES))
    finally:
        lines.CHUNK_BYTES = original
    check(data, got, NEEDLES)


@pytest.mark.parametrize("first", [1, 21])
def test_line_numbers_continue_from_first_line(first: int) -> None:
    data = b"{q}\n{ab}\n{q}\n{q}\n{xyz}"
    assert list(scan_lines(io.BytesIO(data), NEEDLES, first)) == [
        (first + 1, b"{ab}\n"),
        (first + 4, b"{xyz}"),
    ]


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.sampled_from(
            [b'{"ab": 1}', b'{"q": 2}', b"junk", b'{"cut', b"", b" ", b"x}", b"{z}", b"x{}"]
        )
    ),
    chunk=st.integers(min_value=1, max_value=20),
    final_newline=st.booleans(),
)
def test_lines_not_ending_like_objects_are_always_yielded(
    rows: list[bytes], chunk: int, final_newline: bool
) -> None:
    data = b"\n".join(rows) + (b"\n" if final_newline and rows else b"")
    original = lines.CHUNK_BYTES
    lines.CHUNK_BYTES = chunk
    try:
        got = list(scan_lines(io.BytesIO(data), (b'"ab"',)))
    finally:
        lines.CHUNK_BYTES = original
    check(data, got, (b'"ab"',))
