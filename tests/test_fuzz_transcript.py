"""Mangled transcripts never crash ``analyze``: a bad line is counted, a non-log is an error."""

from __future__ import annotations

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cachediag.cli import main
from tests.conftest import SPOTTER_SESSION

LINES = SPOTTER_SESSION.read_bytes().splitlines(keepends=True)[:300]

edits = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=len(LINES) - 1),
        st.sampled_from(["cut", "flip", "dup", "drop", "text", "negative", "junk"]),
        st.integers(min_value=0, max_value=10_000),
    ),
    max_size=25,
)


def mangle(plan: list[tuple[int, str, int]]) -> bytes:
    lines = list(LINES)
    for index, op, n in plan:
        i = index % len(lines) if lines else 0
        if not lines:
            break
        line = lines[i]
        if op == "cut":
            lines[i] = line[: n % (len(line) + 1)]
        elif op == "flip" and line:
            b = bytearray(line)
            b[n % len(b)] = n % 256
            lines[i] = bytes(b)
        elif op == "dup":
            lines.insert(i, line)
        elif op == "drop":
            del lines[i]
        elif op == "text":
            lines[i] = line.replace(b'"input_tokens":', b'"input_tokens":"x",', 1)
        elif op == "negative":
            lines[i] = line.replace(
                b'"cache_read_input_tokens":', b'"cache_read_input_tokens":-', 1
            )
        else:
            lines[i] = bytes((n * k) % 256 for k in range(40)) + b"\n"
    return b"".join(lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=edits)
def test_mangled_transcripts_never_crash(plan: list[tuple[int, str, int]]) -> None:
    data = mangle(plan)
    for args in (["analyze", "--json", "--requests", "--now", "0", "-"], ["analyze", "-"]):
        result = CliRunner().invoke(main, args, input=data)
        assert result.exit_code in (0, 1), result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        if result.exit_code == 1:
            assert result.stderr.startswith("Error: ")
