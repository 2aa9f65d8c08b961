"""Whatever arrives on stdin, the status line prints one non-empty line and exits 0."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cachediag.statusline import fast
from tests.conftest import ROOT, SPOTTER_SESSION

CACHE = tempfile.mkdtemp(prefix="cachediag-fuzz-")
PATHS = [
    str(SPOTTER_SESSION),
    str(ROOT / "fixtures" / "real" / "claude-trace" / "test-traffic.jsonl"),  # not a transcript
    "/dev/null",
    str(ROOT),  # a folder
    "",
    "relative/none.jsonl",
    "/nonexistent/x.jsonl",
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)
PC_KEYS = [
    "warm", "caching_observed", "ttl", "expires_at", "requests", "misses", "expected_rebuilds",
    "hit_ratio", "last_miss_at", "last_miss_cause", "miss_causes", "recache_tokens_if_cold",
]  # fmt: skip
prompt_caches = st.dictionaries(st.sampled_from(PC_KEYS), json_values) | json_values
payloads = st.fixed_dictionaries(
    {},
    optional={
        "transcript_path": st.sampled_from(PATHS) | json_values,
        "prompt_cache": prompt_caches,
        "session_id": json_values,
        "model": json_values,
        "cachediag": json_values,
    },
)


def encoded(obj: Any) -> bytes:
    return json.dumps(obj).encode()


stdins = (
    st.binary(max_size=300)
    | payloads.map(encoded)
    | st.tuples(payloads.map(encoded), st.floats(0, 1)).map(lambda t: t[0][: int(len(t[0]) * t[1])])
    | json_values.map(encoded)
    # Deep nesting and huge objects.
    | st.integers(1, 100_000).map(lambda n: b"[" * n + b"]" * n)
    | st.integers(1, 200_000).map(lambda n: encoded({"prompt_cache": {"x": "y" * n}, "k": [1] * n}))
)  # fmt: skip
argsets = st.sampled_from([[], ["--json"], ["--no-color"], ["--format", "{last}{agents}"]])


def check(args: list[str], stdin: bytes) -> None:
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = CACHE  # hypothesis does not mix with monkeypatch
    try:
        out = io.StringIO()
        assert fast.run(args, io.BytesIO(stdin), out) == 0
    finally:
        if before is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = before
    text = out.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1 and text.strip()
    assert "Traceback" not in text
    if "--json" in args:
        assert isinstance(json.loads(text), dict)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argsets, stdins)
def test_fuzzed_stdin_never_blank_never_fails(args: list[str], stdin: bytes) -> None:
    check(args, stdin)


def test_garbage_in_a_real_process_prints_no_traceback() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": CACHE}
    for stdin in (b"\xff\x00garbage", b"[" * 200_000, b'{"transcript_path": "/dev/null"}'):
        result = subprocess.run(
            [sys.executable, "-m", "cachediag", "statusline"],
            input=stdin,
            capture_output=True,
            env=env,
        )
        assert result.returncode == 0
        assert result.stdout.strip() and result.stdout.count(b"\n") == 1
        assert b"Traceback" not in result.stdout + result.stderr


def _outcome(loads: Any, raw: bytes) -> tuple[str, Any]:
    try:
        return "ok", loads(raw)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc).__name__


@settings(max_examples=500, deadline=None)
@given(
    st.binary(max_size=60)
    | json_values.map(encoded)
    | json_values.map(lambda v: (" \n" + json.dumps(v, indent=1) + "\t").encode())
    | json_values.map(lambda v: json.dumps(v).encode("utf-16"))
    | json_values.map(lambda v: b"\xef\xbb\xbf" + encoded(v))
    | st.sampled_from([b"NaN", b"[Infinity, -Infinity]", b'"\\ud800"', b"1 2", b'{"a":1}x'])
)
def test_jsonlite_parses_exactly_as_json(raw: bytes) -> None:
    from cachediag.statusline import jsonlite

    expected, got = _outcome(json.loads, raw), _outcome(jsonlite.loads, raw)
    if expected[0] == "ok" and expected[1] != expected[1]:  # NaN is not equal to itself
        assert got[0] == "ok" and got[1] != got[1]
    else:
        assert repr(got) == repr(expected)
