"""Files other programs (or other users) may have put in cachediag's way (issue 11).

Each test reproduces one finding: damaged state files, planted symlinks and FIFOs in the
cache folder, a cache folder that is not private, settings.json modes and links, price
files of the wrong shape, arguments that crashed or hung.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.statusline import install, state
from tests.conftest import ROOT, RULES
from tests.statusline_support import REPORT_PEAK, T0, THREE, cache_home, run_line, write

__all__ = ["cache_home"]


def line_in_process(t: Path, env: dict[str, str], *args: str, timeout: float = 20) -> str:
    """One status line in a fresh process, as Claude Code runs it."""
    cmd = [sys.executable, "-m", "cachediag", "statusline", "--no-color", "--now", str(T0), *args]
    proc = subprocess.run(
        cmd,
        input=json.dumps({"transcript_path": str(t)}).encode(),
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    return proc.stdout.decode()


def resave(path: Path, edit: Any) -> None:
    """Rewrite a state file with ``edit`` applied to its header, checksums made valid
    again: what the checksums cannot catch must still never stick."""
    _, head, rest = path.read_bytes().split(b"\n", 2)
    header = json.loads(head)
    edit(header)
    body = json.dumps(header, allow_nan=True).encode()
    path.write_bytes(b"%s%08x\n%s\n%s" % (state.MAGIC, zlib.crc32(body), body, rest))


def _set(key: str, value: Any) -> Any:
    def edit(header: dict[str, Any]) -> None:
        header[key] = value

    return edit


def _cursor(key: str, value: Any) -> Any:
    def edit(header: dict[str, Any]) -> None:
        for entry in header["files"].values():
            entry[key] = value

    return edit


DAMAGE: dict[str, Any] = {
    "header line cut": lambda p: p.write_bytes(p.read_bytes().split(b"\n", 1)[1]),
    "checksum line cut": lambda p: p.write_bytes(b"\n".join(p.read_bytes().split(b"\n")[1:])),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "byte flipped": lambda p: p.write_bytes(p.read_bytes().replace(b'"misses":', b'"misses":9', 1)),
    "skipped_lines Infinity": lambda p: resave(p, _set("skipped_lines", float("inf"))),
    "api_errors huge": lambda p: resave(p, _set("api_errors", 10**400)),
    "negative offset": lambda p: resave(p, _cursor("offset", -5)),
    "offset past the end": lambda p: resave(p, _cursor("offset", 1 << 60)),
    "streams a list": lambda p: resave(p, _set("streams", [1, 2])),
    "files null": lambda p: resave(p, _set("files", None)),
    "prices of strings": lambda p: resave(
        p,
        _set(
            "prices", {f"m-1|{int(T0 // 86400)}": {"changes": [], "slots": [{"input_mtok": "x"}]}}
        ),
    ),
    "readers damaged": lambda p: p.write_bytes(p.read_bytes()[:-12] + b'"x":[1,2]}\n'),
    "a folder": lambda p: (p.unlink(), p.mkdir()),
    "empty": lambda p: p.write_bytes(b""),
}


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_damaged_state_is_recomputed_in_a_fresh_process(tmp_path: Path, damage: str) -> None:
    """Finding 2: whatever the damage raises, the next run recomputes (never `cache ?`)."""
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert line_in_process(t, env, "--format", "{requests}") == "2 req\n"
    path = Path(state.state_path(str(t), str(tmp_path / "xdg" / "cachediag")))
    DAMAGE[damage](path)
    write(t, THREE[2:], "a")
    assert line_in_process(t, env, "--format", "{requests} {misses}") == "3 req 1 miss\n"
    assert line_in_process(t, env, "--format", "{requests} {misses}") == "3 req 1 miss\n"
    log = (tmp_path / "xdg" / "cachediag" / "statusline.log").read_text()
    assert "recomputed" in log or "damaged" in log


def test_state_fuzz_never_sticks(tmp_path: Path) -> None:
    """Random damage to a real state, in fresh processes: never a traceback, never a
    `cache ?` that outlives the damage, never a mode other than 0600."""
    import random

    rng = random.Random(11)
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    good = line_in_process(t, env, "--format", "{requests} {misses}")
    path = Path(state.state_path(str(t), str(tmp_path / "xdg" / "cachediag")))
    for _ in range(8):
        data = bytearray(path.read_bytes())
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data[: rng.randint(len(data) // 2, len(data))]))
        os.utime(t)  # a change, so that the state is read beyond its header
        assert line_in_process(t, env, "--format", "{requests} {misses}") == good
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_cache_files_never_follow_planted_links(tmp_path: Path, cache_home: Path) -> None:
    """Finding 4: links at the temporary, log and lock paths are replaced or refused,
    their targets never written; folders are made 0700."""
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    run_line({"transcript_path": str(t)})
    assert stat.S_IMODE(cache_home.stat().st_mode) == 0o700
    assert stat.S_IMODE((cache_home / "statusline").stat().st_mode) == 0o700
    path = state.state_path(str(t), str(cache_home))
    victims = {}
    for name in (f"{path}.{os.getpid()}.tmp", str(cache_home / "statusline.log"), path + ".lock"):
        victim = tmp_path / f"victim-{len(victims)}"
        victim.write_text("precious")
        Path(name).unlink(missing_ok=True)
        os.symlink(victim, name)
        victims[name] = victim
    write(t, THREE[2:], "a")
    run_line({"transcript_path": "\x00bad"})  # a failure, which writes the log
    assert run_line({"transcript_path": str(t)}, "--format", "{requests}") == "3 req"
    for victim in victims.values():
        assert victim.read_text() == "precious"


def test_folder_of_someone_else_is_not_used(tmp_path: Path, cache_home: Path) -> None:
    """Finding 4: an existing folder writable by others is refused (a clear log line is
    impossible there: the line is still right, computed without state)."""
    cache_home.mkdir(parents=True)
    (cache_home / "statusline").mkdir(mode=0o777)
    os.chmod(cache_home / "statusline", 0o777)
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    line = run_line({"transcript_path": str(t)}, "--no-color", "--format", "{requests} {misses}")
    assert line == "3 req 1 miss"
    assert list((cache_home / "statusline").iterdir()) == []  # nothing read or written there
    assert "writable by others" in (cache_home / "statusline.log").read_text()


def test_fifo_state_and_transcript_never_block(tmp_path: Path) -> None:
    """Finding 4 and 6: a FIFO at the state path or as the transcript is not opened
    blocking; the run answers at once."""
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    line_in_process(t, env)
    path = Path(state.state_path(str(t), str(tmp_path / "xdg" / "cachediag")))
    path.unlink()
    os.mkfifo(path)
    assert line_in_process(t, env, "--format", "{requests}", timeout=10) == "3 req\n"
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    assert line_in_process(fifo, env, timeout=10) == "cache ?\n"


def test_install_keeps_mode_owner_and_links(tmp_path: Path) -> None:
    """Finding 3: a private settings.json stays private; a symlinked one stays a link
    (the target is written atomically), and the backup keeps the mode too."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    real.write_text(json.dumps({"env": {"ANTHROPIC_API_KEY": "sk-secret"}}))
    real.chmod(0o600)
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    settings.symlink_to(real)
    done = install.install(settings, "cachediag statusline")
    assert done.changed and settings.is_symlink() and os.readlink(settings) == str(real)
    assert json.loads(real.read_text())["statusLine"]["command"] == "cachediag statusline"
    assert json.loads(real.read_text())["env"] == {"ANTHROPIC_API_KEY": "sk-secret"}
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert done.backup is not None and stat.S_IMODE(done.backup.stat().st_mode) == 0o600
    assert real.stat().st_uid == os.getuid()
    plain = tmp_path / "plain" / "settings.json"
    plain.parent.mkdir()
    plain.write_text("{}")
    plain.chmod(0o640)
    install.install(plain, "cachediag statusline")
    assert stat.S_IMODE(plain.stat().st_mode) == 0o640
    fresh = tmp_path / "new" / "settings.json"
    install.install(fresh, "cachediag statusline")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


def test_install_refuses_a_fifo(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    os.mkfifo(settings)
    with pytest.raises(install.CachediagError, match="not a regular file"):
        install.install(settings, "cachediag statusline")


def _prices_cache(tmp_path: Path, entries: Any, source: Any = "genai-prices") -> dict[str, str]:
    from cachediag.pricing.disk import _stamp

    folder = tmp_path / "xdg" / "cachediag"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    data = {"stamps": {_stamp(): {"saved_at": 1.0, "source": source, "entries": entries}}}
    (folder / "prices.json").write_text(json.dumps(data, allow_nan=True))
    return {"XDG_CACHE_HOME": str(tmp_path / "xdg")}


def _one_slot(prices: Any) -> Any:
    return {"changes": [], "slots": [prices]}


PRICE_CACHES = {
    "entries a list": [1, 2],
    "string prices": {
        "claude-opus-4-6|20495": {
            "changes": [],
            "slots": [{"input_mtok": "5", "output_mtok": "x"}],
        }
    },
    "NaN prices": {
        f"{m}|{d}": _one_slot(
            dict.fromkeys(
                (
                    "input_mtok",
                    "cache_write_5m_mtok",
                    "cache_write_1h_mtok",
                    "cache_read_mtok",
                    "output_mtok",
                ),
                float("nan"),
            )
        )
        for m in ("claude-opus-4-6", "m-1")
        for d in range(20480, 20500)
    },
}


@pytest.mark.parametrize("damage", list(PRICE_CACHES), ids=list(PRICE_CACHES))
def test_damaged_price_cache_is_ignored(tmp_path: Path, damage: str) -> None:
    """Finding 7: a price cache of the wrong shape is looked up again, never a
    traceback, never `$nan`, never non-standard JSON."""
    env = _prices_cache(tmp_path, PRICE_CACHES[damage], source="\x1b]0;pwned\x07")
    for args in (["analyze"], ["analyze", "--json"], ["audit"], ["audit", "--json"]):
        proc = subprocess.run(
            [sys.executable, "-m", "cachediag", *args, str(RULES / "ttl_expired_5m.jsonl")],
            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr and "nan" not in proc.stdout.lower()
        assert "\x1b]" not in proc.stdout
        if "--json" in args:
            json.loads(proc.stdout.splitlines()[0], parse_constant=pytest.fail)
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    assert line_in_process(t, env, "--format", "{misses}") != "cache ?\n"


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"m": {"input_cost_per_token": NaN, "output_cost_per_token": 1e-6}}', "finite"),
        ('{"m": {"input_cost_per_token": -1e-6, "output_cost_per_token": 1e-6}}', ">= 0"),
        ('{"models": {"m": {"input_mtok": NaN}}}', "not a LiteLLM or cachediag"),
        ('{"models": {"m": [1, 2]}}', "not a LiteLLM or cachediag"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
    ids=["litellm-nan", "litellm-negative", "own-nan", "own-shape", "deep"],
)
def test_bad_price_file_is_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    result = CliRunner().invoke(
        main, ["analyze", "--pricing", str(path), str(RULES / "ttl_expired_5m.jsonl")]
    )
    assert result.exit_code == 1, result.output
    assert str(path) in result.output and message in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_price_file_that_is_no_file_does_not_hang(tmp_path: Path, kind: str) -> None:
    path = Path("/dev/zero") if kind == "dev-zero" else tmp_path / "fifo.json"
    if kind == "fifo":
        os.mkfifo(path)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cachediag",
            "analyze",
            "--pricing",
            str(path),
            str(RULES / "hit.jsonl"),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert proc.returncode == 1 and "not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["audit", "--until", "9999-12-31"],
        ["audit", "--since", "0001-01-01"],
        ["analyze", "--now", "nan"],
        ["analyze", "--now", "1e400"],
        ["watch", "--once", "--min-cost", "nan"],
        ["statusline", "--now", "inf"],
    ],
    ids=lambda a: " ".join(a),
)
def test_date_and_number_arguments(args: list[str]) -> None:
    """Finding 8: no traceback; a value nothing can use is a usage error (exit 2)."""
    result = CliRunner().invoke(main, [*args, str(RULES / "hit.jsonl")])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    if args[0] == "audit":
        assert result.exit_code == 0 or (
            result.exit_code == 2 and "outside the dates" in result.output
        ), result.output
    else:
        assert result.exit_code == 2 and "not between" in result.output


def test_statusline_budget_and_now_are_checked() -> None:
    assert run_line({}, "--now", "nan") == "cache ?"
    assert run_line({}, "--budget", "-1") == "cache ?"
    assert run_line({"prompt_cache": {"misses": 1, "hit_ratio": 0.5}}, "--budget", "2") == (
        # A miss whose cause nobody named says so (issue 26), never drops the field.
        "\x1b[33mcache 50%\x1b[0m · \x1b[31m1 miss\x1b[0m · \x1b[2mlast: unknown\x1b[0m"
    )


def test_statusline_extreme_numbers_leave_only_their_field_out() -> None:
    """Finding 10: a 400-digit integer or 1e308 in one field leaves that field out; a
    year-9999 expiry is not shown as a 69-million-hour countdown."""
    pc = {"hit_ratio": 0.9, "misses": 10**400, "requests": 3, "expires_at": 253402300799}
    line = run_line({"prompt_cache": pc}, "--no-color", "--now", str(T0))
    assert line == "cache 90% · warm"
    pc = {"hit_ratio": 0.9, "misses": 1e308, "requests": 3, "expires_at": T0 + 60}
    assert run_line({"prompt_cache": pc}, "--no-color", "--now", str(T0)) == "cache 90% · warm 1:00"


@pytest.mark.parametrize(
    "args", [["analyze"], ["watch", "--once"], ["explain"], ["audit"], ["analyze", "--json"]]
)
def test_closed_pipe_is_not_a_failure(args: list[str]) -> None:
    """Finding 10: ``cachediag analyze | head -1`` exits 0 without a word on stderr."""
    from tests.conftest import SPOTTER_SESSION

    proc = subprocess.Popen(
        [sys.executable, "-m", "cachediag", *args, str(SPOTTER_SESSION)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0 and err == b""


def test_utf8_bom_on_line_one(tmp_path: Path) -> None:
    """Finding 10: an editor's byte order mark does not cost the first line."""
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (RULES / "hit.jsonl").read_bytes())
    result = CliRunner().invoke(main, ["analyze", "--json", str(path)])
    assert result.exit_code == 0 and "skipped" not in result.stderr
    plain = CliRunner().invoke(main, ["analyze", "--json", str(RULES / "hit.jsonl")])
    assert json.loads(result.stdout)["prompt_cache"] == json.loads(plain.stdout)["prompt_cache"]


def test_audit_of_a_file_that_is_no_log_prints_no_empty_report(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    result = CliRunner().invoke(main, ["audit", str(path)])
    assert result.exit_code == 1 and result.stdout == ""
    assert "not a JSON object" in result.stderr


def test_state_of_vanished_transcripts_is_removed(tmp_path: Path, cache_home: Path) -> None:
    """Finding 10: housekeeping, at most once a day, removes the state and lock of
    transcripts that are gone and keeps the others."""
    kept, gone = tmp_path / "kept.jsonl", tmp_path / "gone.jsonl"
    for t in (kept, gone):
        write(t, THREE)
        run_line({"transcript_path": str(t)})
    folder = cache_home / "statusline"
    gone_state = Path(state.state_path(str(gone), str(cache_home)))
    assert gone_state.exists() and Path(f"{gone_state}.lock").exists()
    gone.unlink()
    (folder / ".swept").unlink()  # the first runs swept already: pretend a day passed
    write(kept, [THREE[0]], "a")  # a run that saves, which is when housekeeping runs
    run_line({"transcript_path": str(kept)})
    assert not gone_state.exists() and not Path(f"{gone_state}.lock").exists()
    assert Path(state.state_path(str(kept), str(cache_home))).exists()
    assert "housekeeping" in (cache_home / "statusline.log").read_text()
    assert state.sweep(str(folder)) == 0  # not again within the day


def _analyze_reporting_peak(path: Path) -> subprocess.CompletedProcess[str]:
    """``analyze --json PATH`` in a process of its own that prints its peak RSS (VmHWM)."""
    return subprocess.run(
        [sys.executable, "-c", REPORT_PEAK, "analyze", "--json", str(path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM (Linux)")
def test_batch_reader_skips_an_overlong_line_in_bounded_memory(tmp_path: Path) -> None:
    """Finding 9 (past the first lines, which format detection reads): a 200 MB line is
    skipped as one bad line without being held; the requests around it are read."""
    lines = (RULES / "ttl_expired_5m.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "long.jsonl"
    with path.open("wb") as fp:
        fp.write(lines[0] + b'{"type":"progress","data":"y"}\n' * 40)
        fp.write(b'{"type":"progress","data":"' + b"x" * (200 << 20) + b'"}\n')
        fp.write(b"".join(lines[1:]))
    proc = _analyze_reporting_peak(path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[0])
    plain = json.loads(
        CliRunner().invoke(main, ["analyze", "--json", str(RULES / "ttl_expired_5m.jsonl")]).stdout
    )
    assert got["prompt_cache"] == plain["prompt_cache"]
    assert f"{path}:42: line longer than 64 MiB" in proc.stderr
    peak_kib = int(proc.stderr.split("VmHWM:")[1].split()[0])
    assert peak_kib < 160 * 1024  # the line is 200 MB; the cap 64 MiB


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM (Linux)")
@pytest.mark.parametrize("first", ["sparse", "overlong_then_log"])
def test_an_overlong_first_line_is_never_held(tmp_path: Path, first: str) -> None:
    """Finding 9 within the first lines too: format detection and the session-id sniff
    read a line only up to the cap, so a newline-free 300 MB file costs the cap, not its
    size, and a log after an overlong first line is still read."""
    path = tmp_path / "big.jsonl"
    if first == "sparse":
        with path.open("wb") as fp:
            fp.truncate(300 << 20)  # zero bytes, no newline: `truncate -s 300M`
    else:
        with path.open("wb") as fp:
            fp.write(b'{"type":"progress","data":"' + b"x" * (200 << 20) + b'"}\n')
            fp.write((RULES / "ttl_expired_5m.jsonl").read_bytes())
    proc = _analyze_reporting_peak(path)
    if first == "sparse":
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert f"Error: {path}: line 1 is not a JSON object" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout.splitlines()[0])["prompt_cache"]["misses"] == 1
        assert f"{path}:1: line longer than 64 MiB" in proc.stderr
    peak_kib = int(proc.stderr.split("VmHWM:")[1].split()[0])
    assert peak_kib < 200 * 1024  # the file is 200-300 MB; the cap is 64 MiB
