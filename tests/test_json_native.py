"""The compiled JSON line encoder (``report/_json.c``) writes what ``json.dumps`` writes,
with the C1 controls and U+2028/U+2029 escaped, as its Python twin does."""

from __future__ import annotations

import json
import math
from enum import IntEnum, StrEnum
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cachediag.report.serialize import escape_json, escape_json_utf8, json_line
from tests.conftest import ROOT

_json = pytest.importorskip(
    "cachediag.report._json", reason="the C JSON encoder was not built (no compiler?)"
)


class Cause(StrEnum):
    TTL = "ttl_expired"


class Level(IntEnum):
    HIGH = 3


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.text(alphabet=st.sampled_from("a\x1b\x7f\x80\x9b\x9f\xa0\xc2\u2027\u2028\u2029\u202a"))
    | st.sampled_from(
        [Cause.TTL, Level.HIGH, 1e-05, 1e16, -0.0, 5e-324, '\x00\x1f"\\\u2028é😀', "\x9b[31m"]
    )
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=40,
)


def _nested(depth: int) -> list[Any]:
    obj: list[Any] = [1]
    for _ in range(depth):
        obj = [obj]
    return obj


ESCAPED = {c: f"\\u{c:04x}" for c in (*range(0x80, 0xA0), 0x2028, 0x2029, *range(0xD800, 0xE000))}
"""What JSON output escapes beyond json.dumps, written out here as a table (the code
under test uses a pattern)."""


def _reference(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False).translate(ESCAPED)


@settings(max_examples=1500, deadline=None)
@given(obj=values)
@example(obj={"a": [1, 2.5, None, True], "b": {}, "c": [], "d": "x\ny"})
@example(obj=[math.nan, math.inf, -math.inf])
def test_native_matches_json_dumps(obj: Any) -> None:
    assert _json.dumps(obj) == _reference(obj)
    assert json_line(obj) == _reference(obj)


@pytest.mark.parametrize(
    "obj",
    [
        [0, -1, 9, 10, -10, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**18, -(10**19)],
        [Level.HIGH, True, False, 1.0, -0.0, 0.1, 1e16, 1e22, 1.5e-7, 2.0**-1074, 1.7e308],
        ["", {"": ""}, "ascii"],
        ["ascii", {"clé": "é"}, "ascii again"],
        {"é": 1},
    ],
    ids=["int-edges", "int-subclass-and-floats", "empty-strings", "non-ascii-late", "non-ascii"],
)
def test_numbers_and_text_at_their_edges(obj: Any) -> None:
    """Whole ints and floats are written without a repr object, a line of ASCII text is
    copied without decoding: each at the edges where that could differ."""
    assert _json.dumps(obj) == _reference(obj)


@pytest.mark.parametrize(
    "obj",
    [
        {1: "int key"},
        {"set": {1, 2}},
        "\ud800 lone surrogate",
        _nested(70),
        type("D", (dict,), {})(a=1),
    ],
    ids=["int-key", "set", "surrogate", "deep", "dict-subclass"],
)
def test_what_it_does_not_take_goes_to_json_dumps(obj: Any) -> None:
    with pytest.raises(TypeError):
        _json.dumps(obj)
    try:
        expected = _reference(obj)
    except TypeError:  # json.dumps refuses it too: so must json_line
        with pytest.raises(TypeError):
            json_line(obj)
        return
    assert json_line(obj) == expected


def test_real_outputs_round_trip() -> None:
    """Every object of the recorded analyze outputs, re-encoded, gives its own line."""
    import gzip

    golden = ROOT / "tests" / "data" / "golden"
    lines = 0
    for path in sorted(golden.glob("*.jsonl.gz")):
        for line in gzip.decompress(path.read_bytes()).decode().splitlines():
            if line.startswith("{"):
                assert _json.dumps(json.loads(line)) == line
                lines += 1
    assert lines > 100


def _circular() -> list[Any]:
    obj: list[Any] = []
    obj.append(obj)
    return obj


@pytest.mark.parametrize(
    "obj",
    [{1.5: "float key"}, {True: "bool key"}, {None: "null key"}, _circular()],
    ids=["float-key", "bool-key", "none-key", "circular"],
)
def test_json_line_answers_as_json_dumps_does(obj: Any) -> None:
    """Keys json.dumps converts, and a loop it refuses: the same text, or the same error."""
    try:
        expected = _reference(obj)
    except ValueError:
        with pytest.raises(ValueError, match="Circular reference"):
            json_line(obj)
        return
    assert json_line(obj) == expected


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "python"])
@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("\x9b31m", "\\u009b31m"),
        ("a\x80b\x9fc", "a\\u0080b\\u009fc"),
        ("\u2028\u2029", "\\u2028\\u2029"),
        # A file name's bytes that are not UTF-8 (surrogateescape): as escapes, not the
        # raw 0x9B a surrogateescape stdout would write back.
        ("sess\udc9b[2J\udcff\ud800", "sess\\udc9b[2J\\udcff\\ud800"),
        ("\xa0\xc2\u2027\u202a·…é", "\xa0\xc2\u2027\u202a·…é"),  # kept as they are
    ],
    ids=["csi", "c1-edges", "separators", "lone-surrogates", "neighbours"],
)
def test_c1_controls_and_separators_are_escaped(
    text: str, written: str, pure: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log string holding U+009B (CSI) starts an escape sequence on a terminal that
    prints ``analyze --json``: it is written as ``\\u009b``, by both encoders."""
    if pure:
        monkeypatch.setattr("cachediag.report.serialize._DUMPS", None)
    assert json_line({"model": text}) == f'{{"model": "{written}"}}'
    assert json.loads(json_line([text])) == [text]


@settings(max_examples=500, deadline=None)
@given(obj=values)
def test_utf8_escaping_matches_the_text_escaping(obj: Any) -> None:
    """orjson's bytes (``audit --json``) get the escapes json_line's text gets."""
    import orjson

    try:
        raw = orjson.dumps(obj)
    except TypeError:  # what orjson does not take (a lone surrogate, a big int)
        return
    assert escape_json_utf8(raw).decode() == raw.decode().translate(ESCAPED)
    assert escape_json(raw.decode()) == raw.decode().translate(ESCAPED)
