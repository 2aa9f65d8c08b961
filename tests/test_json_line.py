"""The JSON line every JSON output prints (``report.serialize.json_line``): orjson's text
with the C1 controls, U+2028/U+2029 and lone surrogates escaped, and its Python twin
(``py_json_line``) for what orjson refuses, writing the same text for what it takes."""

from __future__ import annotations

import json
import math
import re
from enum import IntEnum, StrEnum
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cachediag.report.serialize import escape_json, escape_json_utf8, json_line, py_json_line
from tests.conftest import ROOT


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

UNSAFE = {*range(0x20), *range(0x80, 0xA0), 0x2028, 0x2029, *range(0xD800, 0xE000)}
"""What a line must never hold raw: a terminal reads C0/C1 controls as commands (U+009B
is CSI), JavaScript reads U+2028/9 as line ends, a lone surrogate is not UTF-8."""


def _finite(obj: Any) -> Any:
    """What the line must read back as: NaN and the infinities are JSON's null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    return obj


STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _spaced(line: str) -> bool:
    """Whether the line has a space outside its strings (json.dumps's ``", "``)."""
    return " " in STRING.sub('""', line)


@settings(max_examples=1500, deadline=None)
@given(obj=values)
@example(obj={"a": [1, 2.5, None, True], "b": {}, "c": [], "d": "x\ny"})
@example(obj=[math.nan, math.inf, -math.inf])
@example(obj=["\ud800 lone", 2**64, -(2**63) - 1])
def test_the_line_reads_back_is_compact_and_terminal_safe(obj: Any) -> None:
    line = json_line(obj)
    assert json.loads(line) == _finite(obj)
    assert not [c for c in line if ord(c) in UNSAFE]
    assert not _spaced(line)
    # The twin writes the same text, whichever of the two writes this line.
    assert py_json_line(obj) == line


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (1e-05, "0.00001"),  # json.dumps: 1e-05
        (2.5e-05, "0.000025"),  # json.dumps: 2.5e-05
        (0.0001, "0.0001"),
        (9.9e-06, "9.9e-6"),  # json.dumps: 9.9e-06
        (1.5e-07, "1.5e-7"),  # json.dumps: 1.5e-07
        (5e-324, "5e-324"),
        (0.1, "0.1"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e+16"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (math.nan, "null"),  # json.dumps: NaN, which is not JSON
        (2**63, "9223372036854775808"),
        (2**64, "18446744073709551616"),  # beyond orjson: the twin writes it
        (Level.HIGH, "3"),
        (Cause.TTL, '"ttl_expired"'),
    ],
)
def test_numbers_are_spelled_as_the_changelog_says(value: Any, written: str) -> None:
    """docs/CHANGELOG.md names these spellings: a changed orjson must fail here."""
    assert json_line([value]) == f"[{written}]"
    assert py_json_line([value]) == f"[{written}]"


def _nested(depth: int) -> list[Any]:
    obj: list[Any] = [1]
    for _ in range(depth):
        obj = [obj]
    return obj


@pytest.mark.parametrize(
    ("obj", "written"),
    [
        ({1: "int key"}, '{"1":"int key"}'),
        ({1.5: "f", True: "b", None: "n"}, '{"1.5":"f","true":"b","null":"n"}'),
        ("\ud800 lone surrogate", '"\\ud800 lone surrogate"'),
        ({"big": -(2**70)}, '{"big":-1180591620717411303424}'),
        (_nested(300), "[" * 301 + "1" + "]" * 301),
        (type("D", (dict,), {})(a=1), '{"a":1}'),
    ],
    ids=["int-key", "other-keys", "surrogate", "big-int", "deep", "dict-subclass"],
)
def test_what_orjson_refuses_is_written_by_the_twin(obj: Any, written: str) -> None:
    assert json_line(obj) == written


def _circular() -> list[Any]:
    obj: list[Any] = []
    obj.append(obj)
    return obj


def test_what_json_dumps_refuses_is_refused() -> None:
    with pytest.raises(ValueError, match="Circular reference"):
        json_line(_circular())
    with pytest.raises(TypeError):
        json_line({"set": {1, 2}})
    with pytest.raises(TypeError):
        json_line({(1, 2): "tuple key"})


def test_real_outputs_round_trip() -> None:
    """Every object of the recorded analyze outputs, re-encoded, gives its own line."""
    import gzip

    golden = ROOT / "tests" / "data" / "golden"
    lines = 0
    for path in sorted(golden.glob("*.jsonl.gz")):
        for line in gzip.decompress(path.read_bytes()).decode().splitlines():
            if line.startswith("{"):
                obj = json.loads(line)
                assert json_line(obj) == line
                assert py_json_line(obj) == line
                lines += 1
    assert lines > 100


@pytest.mark.parametrize("writer", [json_line, py_json_line], ids=["orjson", "python"])
@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("\x9b31m", "\\u009b31m"),
        ("a\x80b\x9fc", "a\\u0080b\\u009fc"),
        ("\u2028\u2029", "\\u2028\\u2029"),
        ("\x1b[2J\x07", "\\u001b[2J\\u0007"),
        # A file name's bytes that are not UTF-8 (surrogateescape): as escapes, not the
        # raw 0x9B a surrogateescape stdout would write back.
        ("sess\udc9b[2J\udcff\ud800", "sess\\udc9b[2J\\udcff\\ud800"),
        ("\xa0\xc2\u2027\u202a·…é\x7f", "\xa0\xc2\u2027\u202a·…é\x7f"),  # kept as they are
    ],
    ids=["csi", "c1-edges", "separators", "c0", "lone-surrogates", "neighbours"],
)
def test_c1_controls_and_separators_are_escaped(text: str, written: str, writer: Any) -> None:
    """A log string holding U+009B (CSI) starts an escape sequence on a terminal that
    prints ``analyze --json``: it is written as ``\\u009b``, by both writers."""
    assert writer({"model": text}) == f'{{"model":"{written}"}}'
    assert json.loads(writer([text])) == [text]


ESCAPED = {c: f"\\u{c:04x}" for c in (*range(0x80, 0xA0), 0x2028, 0x2029, *range(0xD800, 0xE000))}
"""What JSON output escapes beyond json.dumps, written out here as a table (the code
under test uses a pattern)."""


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
