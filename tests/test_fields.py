"""The compiled line picker (``_fields.c``) answers as ``fields_of(orjson.loads(line))``.

The picker may decline any line (``None``: the line is then parsed whole, as before);
what it must never do is take a line orjson would not read, or answer differently for
one it takes. Held here on every real transcript line, on random objects and on random
damage to real lines.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import random
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachediag.ingest import fields
from cachediag.ingest.anthropic import parse_timestamp
from cachediag.ingest.discover import discover
from cachediag.ingest.fields import fields_of, pick_fields, py_pick
from cachediag.ingest.jsonl import OVERLONG, BadLine, parse_numbered
from cachediag.ingest.native import FIELDS_API, load_picker
from cachediag.ingest.reader import read_sessions, read_stdin
from cachediag.ingest.stages import AT, TIMESTAMP
from cachediag.model import LineIssue, SessionLog
from tests.conftest import REAL, corpus_if_present

_fields = pytest.importorskip(
    "cachediag.ingest._fields", reason="the C picker was not built (no compiler?)"
)
pick = _fields.pick


def real_lines() -> list[bytes]:
    # The bundled real logs always; the shared corpus too where it is (always under CI).
    corpus = corpus_if_present()
    roots = [REAL] if corpus is None else [REAL, corpus]
    paths = sorted(p for root in roots for p in root.rglob("*.jsonl"))
    return [raw for path in paths for raw in path.read_bytes().splitlines(keepends=True)]


def check(raw: bytes) -> bool:
    """The picker's answer for ``raw`` is the whole parse's; True when it took the line."""
    got = pick(raw)
    if got is None:
        return False
    obj = orjson.loads(raw)  # a line the picker takes is one orjson reads...
    assert isinstance(obj, dict)
    want = fields_of(obj)  # ...with the same fields
    assert got[:AT] + got[AT + 1 :] == want[:AT] + want[AT + 1 :]
    if got[AT] is not None:
        assert got[AT] == parse_timestamp(got[TIMESTAMP])
    return True


def test_every_real_line() -> None:
    lines = real_lines()
    assert len(lines) > 1000
    taken = sum(check(raw) for raw in lines)
    # Claude Code's own lines are plain: the picker takes (nearly) all of them.
    assert taken > 0.95 * len(lines)


def test_real_lines_reserialised() -> None:
    """The same objects written other ways: spaces, escaped non-ASCII, keys reordered."""
    rng = random.Random(14)
    for raw in real_lines()[::7]:
        obj = orjson.loads(raw)
        items = list(obj.items())
        rng.shuffle(items)
        for text in (
            json.dumps(dict(items)),
            json.dumps(obj, ensure_ascii=False, separators=(",", ":")),
            json.dumps(obj, indent=1),
        ):
            check(text.encode())


def damaged(raw: bytes, rng: random.Random) -> bytes:
    pieces = [b'"', b"\\", b"\x00", b"\xff", b"\xed\xa0\x80", b"\xc3", b"}", b"{", b",", b":"]
    pieces += [b"]", b"[", b"1", b"-", b".", b"e", b"e999", b"\\u", b"\\ud800", b" ", b"\r"]
    pieces += [b"null", b"true", b'"type":', b'"message":{}', b"0" * 30, b"\\n"]
    data = bytearray(raw)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        what = rng.random()
        if what < 0.4:
            data[at:at] = rng.choice(pieces)
        elif what < 0.7:
            del data[at : at + rng.randint(1, 4)]
        else:
            data[at : at + 1] = bytes([rng.randrange(256)])
    return bytes(data)


def test_damaged_real_lines() -> None:
    rng = random.Random(1214)
    lines = [raw for raw in real_lines() if len(raw) < 4000]
    for _ in range(4000):
        raw = damaged(rng.choice(lines), rng)
        if pick(raw) is not None:
            check(raw)
        else:
            # Declined: the whole parse decides, as it did before the picker.
            with contextlib.suppress(BadLine):
                py_pick(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"type":"assistant","x":"\xff"}',  # not UTF-8
        b'{"type":"assistant","x":"\xed\xa0\x80"}',  # a surrogate in UTF-8
        b'{"type":"assistant","x":"\xc0\xaf"}',  # overlong
        b'{"type":"assistant","x":"\\ud800"}',  # a lone high surrogate
        b'{"type":"assistant","x":"\\udc00x"}',  # a lone low surrogate
        b'{"type":"assistant","x":1e400}',  # infinite for orjson
        b'{"type":"assistant","x":' + b"9" * 400 + b"}",
        b'{"type":"assistant","x":01}',
        b'{"type":"assistant","x":1.}',
        b'{"type":"assistant","x":[1,]}',
        b'{"type":"assistant",}',
        b'{"type":"assistant"} x',
        b'{"type":"assistant"}\x0c',
        b'{"type":"assistant","x":NaN}',
        b'{"type":"assistant","x":"\x01"}',
        b'{"type":"assistant","x":"\\x"}',
        b'{"type":"assistant","x":' + b"[" * 2000 + b"]" * 2000 + b"}",
        b'{"type":"assistant"',
        b'{"type" "assistant"}',
        b"[1,2]",
        b'"text"',
        b"",
    ],
)
def test_lines_orjson_refuses_are_declined(raw: bytes) -> None:
    assert pick(raw) is None
    with pytest.raises(BadLine):
        py_pick(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'\xef\xbb\xbf{"type":"user"}',  # a byte order mark: parse_line strips it
        b'{"type":"user","type":"assistant"}',  # a repeated key: orjson keeps the last
        b'{"message":{"usage":{}},"message":{}}',
        b'{"typ\\u0065":"assistant"}',  # a key spelled with an escape
        b'{"message":{"\\u0069d":"msg_1"}}',
        b'{"message":{"usage":{"input_tokens":1.0}}}',  # a count that is not an int
        b'{"message":{"usage":{"input_tokens":"3"}}}',
        b'{"message":{"usage":{"output_tokens":' + b"1" * 19 + b"}}}",
        b'{"timestamp":1760000000}',  # epoch numbers: parse_timestamp's
        b'{"timestamp":{}}',
        b'{"message":{"diagnostics":{"cache_miss_reason":'
        b'{"type":"x","cache_missed_input_tokens":2.5}}}}',
    ],
)
def test_lines_the_picker_leaves_to_orjson(raw: bytes) -> None:
    assert pick(raw) is None
    assert fields.read_fields(raw) == py_pick(raw)  # the whole parse answers


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.sampled_from(["assistant", "user", "system", "compact_boundary", "<synthetic>", ""]),
    st.sampled_from(["2025-06-01T12:00:00.123Z", "2025-02-29T00:00:00.000Z", "nope"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _obj(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(keys), VALUES, max_size=len(keys))


REASON = _obj(["type", "cache_missed_input_tokens", "other"])
DIAGNOSTICS = st.one_of(
    VALUES, st.fixed_dictionaries({}, optional={"cache_miss_reason": st.one_of(VALUES, REASON)})
)
SPLIT = _obj(["ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens", "x"])
USAGE = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": VALUES,
        "cache_read_input_tokens": VALUES,
        "cache_creation_input_tokens": VALUES,
        "output_tokens": VALUES,
        "cache_creation": st.one_of(VALUES, SPLIT),
        "service_tier": VALUES,
    },
)
MESSAGE = st.fixed_dictionaries(
    {},
    optional={
        "model": VALUES,
        "id": VALUES,
        "usage": st.one_of(VALUES, USAGE),
        "diagnostics": DIAGNOSTICS,
        "context_management": st.one_of(
            VALUES, st.fixed_dictionaries({}, optional={"applied_edits": VALUES})
        ),
        "content": VALUES,
    },
)
TOP_KEYS = [
    "type", "uuid", "parentUuid", "isSidechain", "agentId", "timestamp", "requestId",
    "isApiErrorMessage", "subtype", "isCompactSummary", "cwd", "sessionId", "userType",
]  # fmt: skip
LINES = st.fixed_dictionaries(
    {},
    optional={**{k: VALUES for k in TOP_KEYS}, "message": st.one_of(VALUES, MESSAGE)},
)


@settings(max_examples=600, deadline=None)
@given(obj=LINES, ascii_only=st.booleans(), spaced=st.booleans())
def test_random_lines(obj: dict[str, Any], ascii_only: bool, spaced: bool) -> None:
    separators = (", ", ": ") if spaced else (",", ":")
    raw = json.dumps(obj, ensure_ascii=ascii_only, separators=separators).encode() + b"\n"
    check(raw)


@settings(max_examples=300, deadline=None)
@given(text=st.text(), ascii_only=st.booleans())
def test_strings_are_decoded_as_orjson_does(text: str, ascii_only: bool) -> None:
    raw = json.dumps({"uuid": text, "cwd": text}, ensure_ascii=ascii_only).encode()
    assert check(raw)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@settings(max_examples=500, deadline=None)
@given(ms=st.integers(min_value=0, max_value=7_258_118_399_999))  # to the end of 2199
def test_epoch_seconds_are_parse_timestamps(ms: int) -> None:
    when = EPOCH + timedelta(milliseconds=ms)
    text = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    got = pick(json.dumps({"timestamp": text}).encode())
    assert got is not None and got[AT] == parse_timestamp(text)


@pytest.mark.parametrize(
    "text",
    [
        "2025-02-29T00:00:00.000Z",  # not a leap year
        "2024-13-01T00:00:00.000Z",
        "2024-04-31T00:00:00.000Z",
        "2024-01-01T24:00:00.000Z",
        "2024-01-01T00:60:00.000Z",
        "2024-01-01T00:00:60.000Z",
        "1969-12-31T23:59:59.999Z",
        "2200-01-01T00:00:00.000Z",
        "2024-01-01T00:00:00Z",
        "2024-01-01T00:00:00.000000Z",
        "2024-01-01T00:00:00.000+00:00",
        "2024-01-01 00:00:00.000Z",
        "2024-01-01T00:00:0x.000Z",
    ],
)
def test_other_timestamps_are_left_to_parse_timestamp(text: str) -> None:
    got = pick(json.dumps({"timestamp": text}).encode())
    assert got is not None and got[AT] is None and got[TIMESTAMP] == text


def test_leap_days_and_ends_of_years() -> None:
    for text in (
        "2024-02-29T23:59:59.999Z",
        "2000-02-29T00:00:00.000Z",
        "2199-12-31T23:59:59.999Z",
    ):
        got = pick(json.dumps({"timestamp": text}).encode())
        assert got is not None and got[AT] == parse_timestamp(text)


def test_pick_fields_reports_bad_lines_as_parse_numbered() -> None:
    numbered = list(
        enumerate(
            [b'{"type":"user"}\n', b"  \n", b"{oops}\n", b"[1]\n", OVERLONG, b'{"a":"\xff"}\n'],
            start=1,
        )
    )
    numbered.append((7, b'{"type":"assistant"'))
    issues_a: list[LineIssue] = []
    issues_b: list[LineIssue] = []
    got = list(pick_fields(numbered, "f", issues_a))
    want = list(parse_numbered(numbered, "f", issues_b))
    assert [n for n, _ in got] == [n for n, _ in want] == [1]
    assert got[0][1] == fields_of(want[0][1])
    assert issues_a == issues_b and len(issues_a) == 5


def test_the_built_picker_is_the_one_this_code_expects() -> None:
    # After editing _fields.c: `python setup.py build_ext --inplace`.
    assert _fields.API == FIELDS_API


@pytest.mark.parametrize(("value", "compiled"), [("", True), ("0", True), ("1", False)])
def test_picker_can_be_switched_off(
    monkeypatch: pytest.MonkeyPatch, value: str, compiled: bool
) -> None:
    monkeypatch.setenv("CACHEDIAG_PURE_PYTHON", value)
    assert (load_picker() is not None) == compiled


def test_a_stale_picker_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CACHEDIAG_PURE_PYTHON", raising=False)
    monkeypatch.setattr(_fields, "API", FIELDS_API + 1)
    assert load_picker() is None


class _Bytes(bytes):
    pass


@pytest.mark.parametrize(
    "line",
    [
        '{"type":"user"}',
        bytearray(b'{"type":"user"}'),
        memoryview(b'{"type":"user"}'),
        _Bytes(b'{"type":"user"}'),  # orjson refuses a bytes subclass: so must the picker
    ],
)
def test_anything_but_bytes_is_left_to_orjson(line: object) -> None:
    assert pick(line) is None  # type: ignore[arg-type]
    assert pick(b'{"type":"user"}') is not None


def _read_all(root: Path) -> list[SessionLog]:
    return [log for src in discover([root]) for log in read_sessions(src, {})]


def test_sessions_read_the_same_with_and_without_the_picker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole sessions, real ones and real ones with damaged lines (bad lines counted)."""
    rng = random.Random(20261201)
    sources = sorted(REAL.rglob("*.jsonl"))
    for number, path in enumerate(sources):
        target = tmp_path / "projects" / f"p{number}" / path.name
        target.parent.mkdir(parents=True)
        lines = path.read_bytes().splitlines(keepends=True)
        if number % 2:  # every other file with some lines damaged
            lines = [damaged(raw, rng) if rng.random() < 0.1 else raw for raw in lines]
        target.write_bytes(b"".join(lines))
    picked = _read_all(tmp_path / "projects")
    monkeypatch.setattr(fields, "read_fields", py_pick)
    parsed = _read_all(tmp_path / "projects")
    assert picked == parsed
    assert sum(len(log.issues) for log in parsed) > 0
    assert sum(len(s.items) for log in parsed for s in log.streams.values()) > 100


def test_stdin_reads_the_same_with_and_without_the_picker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = sorted(REAL.rglob("*.jsonl"))[0].read_bytes()
    data += b'{"type":"assistant","sessionId":"other"\n{"sessionId":"x","type":"user"}\n'
    picked = read_stdin(io.BytesIO(data))
    monkeypatch.setattr(fields, "read_fields", py_pick)
    assert picked == read_stdin(io.BytesIO(data))


def test_the_portable_build_answers_the_same(tmp_path: Path) -> None:
    """Built without SSE2 (-DFIELDS_PORTABLE), as on machines that have none."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    source = Path(fields.__file__).with_name("_fields.c")
    script = (
        "from setuptools import Extension, setup\n"
        f"setup(name='portable', script_args=['build_ext', '--build-lib', {str(tmp_path)!r},"
        f" '--build-temp', {str(tmp_path / 'tmp')!r}], ext_modules=[Extension('_fields',"
        f" sources=[{str(source)!r}], define_macros=[('FIELDS_PORTABLE', '1')])])\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, cwd=tmp_path)
    built = next(tmp_path.glob("_fields*.so"), None) or next(tmp_path.glob("_fields*.pyd"))
    spec = importlib.util.spec_from_file_location("_fields", built)
    assert spec is not None and spec.loader is not None
    portable = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(portable)
    rng = random.Random(5)
    lines = real_lines()
    lines += [damaged(rng.choice(lines), rng) for _ in range(3000)]
    assert [portable.pick(raw) for raw in lines] == [pick(raw) for raw in lines]
