"""Hostile inputs that used to hang, grow without bound or end in a traceback: FIFOs where
logs are found, endless bad lines, a jq program that never ends, odd flags for the fast
path, window bounds at the ends of the calendar."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from cachediag import quick
from cachediag.cli import main

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "fixtures" / "real"


def run(*args: str, stdin: bytes | None = None) -> Any:
    return CliRunner().invoke(main, list(args), input=stdin)


# --- window bounds at the ends of the calendar ---------------------------------------


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "Pacific/Kiritimati", "America/Adak", "UTC"])
@pytest.mark.parametrize(
    ("bounds", "everything"),
    [
        (["--since", "0001-01-01"], True),
        (["--until", "9999-12-30"], True),
        (["--since", "0001-01-01", "--until", "9999-12-30"], True),
        (["--now", "1e11", "--since", "2w"], False),
        (["--now", "1e11", "--until", "9999-12-30"], True),
    ],
)
@pytest.mark.parametrize(
    "command", [["audit", "--json"], ["audit", "--by", "day"], ["analyze"], ["analyze", "--json"]]
)
def test_window_at_the_ends_of_the_calendar(
    command: list[str], bounds: list[str], everything: bool, zone: str
) -> None:
    """Year 0 or 10000 once a bound is moved to UTC or to the zone, the largest --now:
    every request of the fixtures is inside such a window (none in the last two weeks
    before the year 5138), never a traceback."""
    whole = run(*command, "--timezone", zone, str(REAL))
    result = run(*command, *bounds, "--timezone", zone, str(REAL))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == whole.exit_code == 0, result.output
    if command == ["audit", "--json"]:
        report = json.loads(result.stdout)
        requests = json.loads(whole.stdout)["totals"]["requests"]
        assert requests > 0
        assert report["totals"]["requests"] == (requests if everything else 0)


# --- the fast path's flags --------------------------------------------------------------


def _entry(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``cachediag ARGS`` as users run it: the console entry, quick path first."""
    return subprocess.run(
        [sys.executable, "-m", "cachediag", *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )


def test_no_captures_alone_prints_tables() -> None:
    """``--no-captures`` is no flag of the JSON output: tables, as click prints them."""
    transcript = str(REAL / "spotter" / "short.jsonl")
    done = _entry("analyze", "--no-captures", transcript)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"Session "), done.stdout[:200]
    assert done.stdout == run("analyze", "--no-captures", transcript).stdout_bytes
    assert quick.analyze_args(["--no-captures", transcript]) is None
    assert quick.analyze_args(["--no-captures", "--json", transcript]) is not None


def test_quick_flags_are_the_click_commands() -> None:
    """Each option the quick path reads is declared by ``analyze`` under that name, a flag
    where it takes a flag; every other option of the command (declared or added later)
    is left to click, before or after a path."""
    from cachediag.cli.analyze import analyze

    params = {p.name: p for p in analyze.params if isinstance(p, click.Option)}
    for table, flag in ((quick.QUICK_FLAGS, True), (quick.QUICK_VALUES, False)):
        for opt, name in table.items():
            assert name in params, opt
            assert opt in params[name].opts, (opt, params[name].opts)
            assert params[name].is_flag is flag, opt
    taken = set(quick.QUICK_FLAGS) | set(quick.QUICK_VALUES)
    others = [o for p in params.values() for o in (*p.opts, *p.secondary_opts) if o not in taken]
    assert "--jq" in others and "--since" in others
    for opt in others:
        assert quick.analyze_args(["--json", opt, "x", "a"]) is None, opt
        assert quick.analyze_args(["--json", "a", opt]) is None, opt
    # What makes the output JSON is one rule for both ways in.
    for opt, name in quick.QUICK_FLAGS.items():
        as_json = quick.writes_json(name == "as_json", name == "requests", None)
        assert (quick.analyze_args([opt, "a"]) is not None) is as_json, opt


# --- only regular files are read --------------------------------------------------------


def _make_otel() -> Any:
    spec = importlib.util.spec_from_file_location("make_otel", ROOT / "scripts/make_otel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def otel_with_fifo_body(tmp_path: Path) -> tuple[Path, Path]:
    """An OpenTelemetry export with its raw-body folder, one body of which is a FIFO."""
    make_otel = _make_otel()
    capture = ROOT / "fixtures" / "captures" / "system_prompt_changed.jsonl"
    folder = tmp_path / "otel"
    bodies = folder / "bodies"
    bodies.mkdir(parents=True)
    records = make_otel.from_capture(capture, bodies)
    export = folder / "export.otel.jsonl"
    export.write_text("".join(line + "\n" for line in make_otel.export_lines(records)))
    body = sorted(bodies.glob("*.json"))[-1]
    body.unlink()
    os.mkfifo(body)
    return export, body


@pytest.mark.parametrize(
    "command",
    [["analyze", "--json"], ["analyze"], ["audit", "--json"], ["export", "--output", "{out}"]],
)
def test_a_fifo_among_the_bodies_is_skipped_not_read(
    otel_with_fifo_body: tuple[Path, Path], command: list[str], tmp_path: Path
) -> None:
    """It hung every command for ever (nothing writes to it); now it is named as not
    read and the rest of the export is."""
    if command[0] == "export":
        pytest.importorskip("pyarrow")
    export, fifo = otel_with_fifo_body
    args = [a.replace("{out}", str(tmp_path / "ds")) for a in command]
    done = _entry(*args, str(export.parent))
    assert done.returncode == 0, done.stderr
    assert f"{fifo}: request body: not a regular file".encode() in done.stderr, done.stderr
    if command == ["audit", "--json"]:
        assert json.loads(done.stdout)["totals"]["requests"] > 0


@pytest.mark.parametrize("reader", ["open_file", "first_session_id", "only_sidechain_lines"])
def test_a_fifo_found_is_refused_before_it_is_read(tmp_path: Path, reader: str) -> None:
    """A FIFO put where the walk saw a file (or named by a folder's layout): refused on
    its descriptor, without waiting for a writer."""
    from cachediag.ingest import discover, sniff
    from cachediag.safefiles import UnsafeFile

    fifo = tmp_path / "agent-x.jsonl"
    os.mkfifo(fifo)
    calls = {
        "open_file": lambda: sniff.open_file(fifo, 10),
        "first_session_id": lambda: discover.first_session_id(fifo),
        "only_sidechain_lines": lambda: discover.only_sidechain_lines(fifo),
    }
    answer: list[Any] = []

    def call() -> None:
        try:
            answer.append(calls[reader]())
        except UnsafeFile as exc:
            answer.append(exc)

    worker = threading.Thread(target=call, daemon=True)  # a hang must not hang the run
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "blocked on the FIFO"
    # The reader refuses it; the two discovery peeks see no session id, no sidechain.
    want = {"open_file": UnsafeFile, "first_session_id": type(None), "only_sidechain_lines": bool}
    assert len(answer) == 1 and isinstance(answer[0], want[reader])
    assert reader == "open_file" or not answer[0]


# --- Ctrl-C stops a --jq program --------------------------------------------------------


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX signals")
def test_ctrl_c_stops_a_jq_program_that_never_ends() -> None:
    """The program ends for every session but the last, for which it never does, in C:
    SIGINT ends the process as an interrupted program should (status 130 in a shell),
    without a traceback, the lines before kept."""
    folder = REAL / "spotter"
    ids = run("analyze", "--jq", ".session_id", str(folder)).stdout.split()
    assert len(ids) >= 2
    program = f'if .session_id == "{ids[-1]}" then (def f: f; f) else "go" end'
    child = subprocess.Popen(
        [sys.executable, "-m", "cachediag", "analyze", "--jq", program, str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None
        for _ in ids[:-1]:
            assert child.stdout.readline() == b"go\n"
        time.sleep(2)  # the last program is running now, in C (not a bound: either way)
        child.send_signal(signal.SIGINT)
        rest, err = child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGINT, err
    assert b"Traceback" not in err, err
    assert rest == b""


# --- skipped lines are counted, not kept ------------------------------------------------

SESSION = ROOT / "fixtures" / "real" / "spotter" / "short.jsonl"


def test_endless_bad_lines_are_counted_in_bounded_memory() -> None:
    """``cat s.jsonl; yes``: every bad line is counted, a few kept with their numbers, and
    memory does not grow with them (each was kept, and the scanner answered for a whole
    4 MiB chunk of them at once: 515 MB at 3 million lines, now 34 MB)."""
    from cachediag.ingest.reader import read_stdin
    from cachediag.ingest.skipped import KEEP

    bad = 400_000
    data = SESSION.read_bytes() + b"y\n" * bad
    tracemalloc.start()
    try:
        (log,) = read_stdin(io.BytesIO(data))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(log.issues) == bad
    kept = log.issues.examples()  # type: ignore[attr-defined]
    assert len(kept) == KEEP and kept[0].line == SESSION.read_bytes().count(b"\n") + 1
    assert {i.reason for i in kept} == {"not valid JSON"}
    assert any(s.items for s in log.streams.values())
    assert peak - len(data) < 24 << 20, peak


def test_the_scanner_is_asked_a_piece_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """What one scan answers is bounded by ``PIECE_BYTES``, however many lines a chunk of
    short ones holds; the lines and their numbers are the same as one scan of the whole."""
    from cachediag.ingest import lines

    data = b"".join(b'{"type":"x","n":%d}\n' % i if i % 7 else b"y\n" for i in range(60_000))
    needles = (b'"type"',)
    whole, _ = lines.py_scan_chunk(data, 0, len(data), needles)
    want = [(index + 1, data[start:stop]) for index, start, stop in whole]
    asked: list[int] = []
    real = lines.scan_chunk

    def scan(buf: Any, first: int, end: int, wanted: tuple[bytes, ...]) -> Any:
        asked.append(end - first)
        return real(buf, first, end, wanted)

    monkeypatch.setattr(lines, "scan_chunk", scan)
    assert list(lines.scan_lines(io.BytesIO(data), needles)) == want
    assert max(asked) <= lines.PIECE_BYTES < len(data)
    asked.clear()
    assert list(lines._lines_holding(data, needles)) == want
    assert max(asked) <= lines.PIECE_BYTES


def test_stderr_says_how_many_lines_were_skipped_not_how_many_were_kept(
    tmp_path: Path,
) -> None:
    """The count on stderr is every skipped line, though only a few are kept as examples."""
    from cachediag.ingest.skipped import KEEP

    path = tmp_path / "s.jsonl"
    bad = 3 * KEEP + 7
    path.write_bytes(SESSION.read_bytes() + b"y\n" * bad)
    result = CliRunner().invoke(main, ["analyze", "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert f"skipped {bad} line(s)" in result.stderr


def test_skipped_counts_travel_from_worker_processes(tmp_path: Path) -> None:
    """Each session's count comes back whole from a worker (pickled with its counts, not
    rebuilt from the examples kept) and adds up in the run."""
    from cachediag.ingest.skipped import KEEP, Skipped
    from cachediag.model import LineIssue

    skipped = Skipped(LineIssue("f", n, "bad") for n in range(1, 3 * KEEP))
    skipped.append(LineIssue("g", 0, "not a log"))
    again = pickle.loads(pickle.dumps(skipped))
    assert (again.files, again.lines, len(again)) == (1, 3 * KEEP - 1, 3 * KEEP)
    assert again.examples() == skipped.examples()
    body = SESSION.read_bytes()
    for n in range(3):
        project = tmp_path / f"p{n}"
        project.mkdir()
        (project / f"s{n}.jsonl").write_bytes(body + b"{oops\n" * (KEEP + 50))
    result = run("analyze", "--json", "--jobs", "2", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    counts = [json.loads(line)["skipped_lines"] for line in result.stdout.splitlines()]
    assert counts == [KEEP + 50] * 3
