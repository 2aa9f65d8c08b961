"""The status line in process: numbers, state file, fallbacks, costs, install."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cachediag.analysis.costs import ModelPrices
from cachediag.statusline import fast, install, prices, render, state
from tests.conftest import ROOT

T0 = 1_770_000_000.0


def assistant(n: int, at: float, *, inp: int, read: int, write: int, model: str = "m-1") -> str:
    """One transcript line of one API response (formats.md §1)."""
    iso = datetime.fromtimestamp(at, UTC)
    return json.dumps(
        {
            "type": "assistant",
            "uuid": f"u{n}",
            "sessionId": "s1",
            "timestamp": iso.isoformat().replace("+00:00", "Z"),
            "requestId": f"req_{n}",
            "message": {
                "id": f"msg_{n}",
                "model": model,
                "content": [{"type": "text", "text": "SECRET-PROMPT-TEXT"}],
                "usage": {
                    "input_tokens": inp,
                    "cache_read_input_tokens": read,
                    "cache_creation_input_tokens": write,
                    "cache_creation": {"ephemeral_5m_input_tokens": write},
                    "output_tokens": 5,
                },
            },
        }
    )


# cold (20010 prompt), hit (20510), then 940 s idle > 5m TTL: a miss that rewrites it all.
THREE = [
    assistant(1, T0, inp=10, read=0, write=20000),
    assistant(2, T0 + 60, inp=10, read=20000, write=500),
    assistant(3, T0 + 1000, inp=10, read=0, write=21000),
]


def run_line(payload: Any, *args: str) -> str:
    out = io.StringIO()
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    assert fast.run(list(args), io.BytesIO(raw), out) == 0
    text = out.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1
    return text[:-1]


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.setattr(prices, "lookup_prices", lambda model, at=None: None)
    return home / "cachediag"


def write(path: Path, lines: list[str], mode: str = "w") -> None:
    with path.open(mode) as fp:
        fp.write("".join(line + "\n" for line in lines))


def test_line_from_transcript(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    line = run_line({"transcript_path": str(t)}, "--no-color", "--now", str(T0 + 1000 + 100))
    # hit ratio = reads / (reads + writes + input) = 20000 / (20000 + 41500 + 30) = 32.5%;
    # the last request wrote 5m cache at T0+1000, so 300 - 100 s = 3:20 are left.
    assert line == "cache 32% · warm 3:20 · 1 miss · last: ttl_expired_5m"


def test_cost_of_misses_from_looked_up_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def fake(model: str, at: float | None = None) -> ModelPrices:
        calls.append(model)
        return ModelPrices(5.0, 6.25, 10.0, 0.5, 25.0)

    monkeypatch.setattr(prices, "lookup_prices", fake)
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    payload = {"transcript_path": str(t)}
    obj = json.loads(run_line(payload, "--json", "--now", str(T0 + 2000)))
    # The miss could have read min(20510, 21010) = 20510 tokens and read 0; all 20510 were
    # written at $6.25/M instead of read at $0.50/M: 20510 * 5.75e-6 = $0.1179325.
    assert obj["cachediag"]["miss_cost_usd"] == pytest.approx(0.1179325)
    assert run_line(payload, "--no-color", "--now", str(T0 + 2000)) == (
        "cache 32% · cold · 1 miss ($0.12) · last: ttl_expired_5m"
    )
    # Looked up once, then taken from the state file.
    assert calls == ["m-1"]


def test_unknown_price_is_omitted_not_zero(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    obj = json.loads(run_line({"transcript_path": str(t)}, "--json", "--now", str(T0)))
    assert obj["cachediag"]["miss_cost_usd"] is None
    assert obj["cachediag"]["unpriced_models"] == ["m-1"]
    assert "$" not in run_line({"transcript_path": str(t)}, "--no-color")


def test_claude_codes_prompt_cache_is_kept_as_sent(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    sent = {"hit_ratio": 0.5, "requests": 9, "misses": 4, "expires_at": None, "odd": [1]}
    obj = json.loads(run_line({"transcript_path": str(t), "prompt_cache": sent}, "--json"))
    assert obj["prompt_cache"] == sent
    assert obj["cachediag"]["source"] == "claude-code"
    line = run_line({"prompt_cache": sent}, "--no-color", "--format", "{hit} {misses} {source}")
    assert line == "cache 50% 4 misses claude-code"


def test_state_file_private_and_without_prompt_text(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    run_line({"transcript_path": str(t)})
    files = list((cache_home / "statusline").glob("*.json"))
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(files[0].parent.stat().st_mode) == 0o700
    assert b"SECRET-PROMPT-TEXT" not in files[0].read_bytes()


def state_of(t: Path, cache_home: Path) -> dict[str, Any]:
    header, _ = state.load_header(state.state_path(str(t), str(cache_home)))
    assert header is not None
    return header


def requests_seen(t: Path) -> int:
    obj = json.loads(run_line({"transcript_path": str(t)}, "--json"))
    return int(obj["prompt_cache"]["requests"])


def test_half_written_line_waits_for_its_newline(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    assert requests_seen(t) == 2
    half = len(THREE[2]) // 2
    with t.open("a") as fp:
        fp.write(THREE[2][:half])
    assert requests_seen(t) == 2
    assert state_of(t, cache_home)["files"][str(t)]["offset"] == len(THREE[0]) + len(THREE[1]) + 2
    with t.open("a") as fp:
        fp.write(THREE[2][half:] + "\n")
    assert requests_seen(t) == 3


def test_truncation_and_replacement_restart(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    assert requests_seen(t) == 3
    write(t, THREE[:1])  # truncated in place
    assert requests_seen(t) == 1
    other = tmp_path / "other.jsonl"
    write(other, [assistant(7, T0, inp=1, read=0, write=3000)] * 1 + THREE[1:])
    os.replace(other, t)  # a new inode, longer than before
    obj = json.loads(run_line({"transcript_path": str(t)}, "--json"))
    assert obj["prompt_cache"]["requests"] == 3
    # Same size, same inode, different bytes before the offset: the tail hash sees it.
    data = t.read_bytes().replace(b"msg_2", b"msg_9")
    t.write_bytes(data)
    assert requests_seen(t) == 3


def test_corrupt_state_is_recomputed(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    run_line({"transcript_path": str(t)})
    path = Path(state.state_path(str(t), str(cache_home)))
    for garbage in (b"{not json", b'{"version": 1, "transcript": 3}\n[', b"\x00\xff", b""):
        path.write_bytes(garbage)
        assert requests_seen(t) == 3


def test_unwritable_cache_dir_still_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file: no dir can be made in it
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    assert run_line({"transcript_path": str(t)}, "--no-color", "--now", str(T0)).startswith(
        "cache 32%"
    )


@pytest.mark.parametrize(
    "stdin",
    [b"", b"garbage", b"[1, 2]", b'{"transcript_path": 5}', b'{"transcript_path": "/nope"}'],
)
def test_fallbacks(stdin: bytes) -> None:
    assert run_line(stdin, "--no-color") == "cache ?"
    obj = json.loads(run_line(stdin, "--json"))
    assert obj["prompt_cache"] is None


def test_failure_is_logged_not_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_home: Path
) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(fast, "build_view", boom)
    assert run_line({"transcript_path": "x"}) == "cache ?"
    log = (cache_home / "statusline.log").read_text()
    assert "RuntimeError" in log and "fast.py" in log
    assert run_line(b"{}", "--bogus") == "cache ?"


def test_format_template_and_colour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    payload = {"transcript_path": str(t)}
    now = str(T0 + 70)
    # {last} is empty before the first miss and drops with the text before it;
    # hit ratio = 20000 / (20000 + 20500 + 20) = 49.4%.
    line = run_line(payload, "--no-color", "--now", now, "--format", "[{last} | {hit}|{ttl}]")
    assert line == "[cache 49%|ttl 5m]"
    assert run_line(payload, "--no-color", "--format", "{{{requests}}}") == "{2 req}"
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert "\x1b[" in run_line(payload, "--now", now)
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run_line(payload, "--now", now)
    assert "\x1b[" in run_line(payload, "--now", now, "--color")
    # A bad template is a fallback, not half a line.
    assert run_line(payload, "--format", "{nope}") == "cache ?"


def test_render_guards_every_field() -> None:
    view = {
        "now": 0.0,
        "prompt_cache": {
            "hit_ratio": True,
            "requests": "3",
            "misses": -1,
            "expires_at": float("inf"),
            "last_miss_cause": {"causes": [None, 3, "model_changed"], "tools_added": "x"},
            "ttl": 5,
        },
        "subagents": {"streams": "2"},
        "miss_cost_usd": "1",
    }
    assert render.render_line(view) == f"cache {render.NONE} · last: model_changed"


def test_two_status_lines_at_once(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache_home.parent)}
    stdin = json.dumps({"transcript_path": str(t)}).encode()
    cmd = [sys.executable, "-m", "cachediag", "statusline", "--no-color", "--now", str(T0)]
    for extra in (None, [assistant(4, T0 + 1010, inp=10, read=21000, write=10)]):
        if extra:
            write(t, extra, "a")
        procs = [
            subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            for _ in range(6)
        ]
        outs = {p.communicate(stdin)[0] for p in procs}
        assert all(p.returncode == 0 for p in procs)
        assert len(outs) == 1, outs
        header = state_of(t, cache_home)
        assert header["streams"]["main"]["prompt_cache"]["requests"] == (4 if extra else 3)


WARM_PATH_FORBIDDEN = ("click", "rich", "pydantic", "genai_prices", "jq", "watchdog", "orjson")


def imported(stderr: bytes) -> set[str]:
    """Module names from ``python -X importtime`` output."""
    return {
        line.split("|")[-1].strip()
        for line in stderr.decode().splitlines()
        if line.startswith("import time:")
    }


def test_warm_path_imports_only_the_standard_library(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache_home.parent)}
    stdin = json.dumps({"transcript_path": str(t)}).encode()
    cmd = [sys.executable, "-X", "importtime", "-m", "cachediag", "statusline"]
    first = subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True)
    warm = subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True)
    assert warm.stdout == first.stdout

    warm_mods = imported(warm.stderr)
    assert "cachediag.statusline.fast" in warm_mods
    heavy = {m for m in warm_mods if m.split(".")[0] in WARM_PATH_FORBIDDEN}
    assert not heavy
    # Nor the reader and ledger, which only a changed transcript needs.
    assert "cachediag.analysis.ledger" not in warm_mods
    assert "cachediag.analysis.ledger" in imported(first.stderr)
    assert not {m for m in imported(first.stderr) if m.split(".")[0] in WARM_PATH_FORBIDDEN[:6]}


def test_installed_command_warm_path_skips_json_and_typing(
    tmp_path: Path, cache_home: Path
) -> None:
    """The command ``install`` writes runs without site; its warm path then loads not even
    ``json``, ``re``, ``enum`` or ``typing`` (each costs milliseconds)."""
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home.parent), "NO_COLOR": "1"}
    stdin = json.dumps({"transcript_path": str(t)}).encode()
    argv = install.fast_argv()
    cmd = [argv[0], "-X", "importtime", *argv[1:]]
    first = subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True)
    warm = subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True)
    assert warm.stdout == first.stdout and warm.stdout.startswith(b"cache 32%")
    mods = imported(warm.stderr)
    assert "cachediag.statusline.fast" in mods
    assert not mods & {"json", "re", "enum", "typing", "dataclasses", "hashlib", "site"}


@pytest.mark.parametrize("chains", [False, True])
def test_line_scan_selects_what_the_readers_filter_selects(chains: bool) -> None:
    from cachediag.ingest.transcript import wanted_line, wanted_line_with_chains

    want = wanted_line_with_chains if chains else wanted_line
    needles = state.WANTED_WITH_CHAINS if chains else state.WANTED
    for path in sorted((ROOT / "fixtures" / "real").rglob("*.jsonl")):
        data = path.read_bytes()
        end = data.rfind(b"\n") + 1
        expected, pos = [], 0
        for raw in data[:end].splitlines(keepends=True):
            if want(raw):
                expected.append(pos)
            pos += len(raw)
        assert state.wanted_lines(data, end, needles) == expected, path


def test_cancelled_writer_saves_its_work_then_exits(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal

    from cachediag.statusline import track

    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    real_refresh = track.refresh
    killed: list[int] = []

    def cancelled_midway(*args: Any) -> Any:
        signal.raise_signal(signal.SIGTERM)  # Claude Code's next update cancels us here
        return real_refresh(*args)

    monkeypatch.setattr(track, "refresh", cancelled_midway)
    monkeypatch.setattr(fast.os, "kill", lambda pid, sig: killed.append(sig))
    fast.session_state(str(t), T0)
    assert killed == [signal.SIGTERM]  # it still exits as asked, after saving
    assert state_of(t, cache_home)["streams"]["main"]["prompt_cache"]["requests"] == 3
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_unreadable_transcript_still_shows_claude_codes_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_home: Path
) -> None:
    def unreadable(*args: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(fast, "session_state", unreadable)
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    payload = {"transcript_path": str(t), "prompt_cache": {"hit_ratio": 0.7, "misses": 1}}
    assert run_line(payload, "--no-color") == "cache 70% · 1 miss"
    assert json.loads(run_line(payload, "--json"))["cachediag"]["transcript"] == "unreadable"
    assert "PermissionError" in (cache_home / "statusline.log").read_text()


def test_state_of_the_right_version_but_wrong_shape_is_recomputed(
    tmp_path: Path, cache_home: Path
) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    run_line({"transcript_path": str(t)})
    path = state.state_path(str(t), str(cache_home))
    header, rest = state.load_header(path)
    assert header is not None
    header["streams"]["main"]["prompt_cache"] = 5  # files unchanged: the warm path uses it
    state.save(path, json.dumps(header).encode(), rest.strip())
    assert requests_seen(t) == 3
    assert requests_seen(t) == 3  # and the state was replaced by a good one
    assert "state unusable" in (cache_home / "statusline.log").read_text()


def test_cost_beside_claude_codes_count_only_when_the_counts_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        prices, "lookup_prices", lambda m, at=None: ModelPrices(5, 6.25, 10, 0.5, 25)
    )
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    agree = {"transcript_path": str(t), "prompt_cache": {"hit_ratio": 0.3, "misses": 1}}
    # One miss in the transcript too, priced as in test_cost_of_misses_from_looked_up_prices.
    assert run_line(agree, "--no-color", "--format", "{misses}") == "1 miss ($0.12)"
    differ = {"transcript_path": str(t), "prompt_cache": {"hit_ratio": 0.3, "misses": 2}}
    assert run_line(differ, "--no-color", "--format", "{misses}") == "2 misses"
    assert json.loads(run_line(differ, "--json"))["cachediag"]["miss_cost_usd"] is None


def test_temporaries_of_killed_runs_are_removed(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    run_line({"transcript_path": str(t)})
    path = Path(state.state_path(str(t), str(cache_home)))
    stale, fresh = Path(f"{path}.99999.tmp"), Path(f"{path}.99998.tmp")
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    os.utime(stale, (T0, T0))  # long ago: its writer is dead
    write(t, THREE[2:], "a")
    assert requests_seen(t) == 3
    assert not stale.exists() and fresh.exists()  # a sibling may still be writing that one


def test_lines_without_requests_move_on_without_the_reader(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cachediag.statusline import track

    t = tmp_path / "s1.jsonl"
    write(t, THREE[:2])
    assert requests_seen(t) == 2
    progress = json.dumps({"type": "progress", "sessionId": "s1", "data": {"n": 1}})
    user = json.dumps({"type": "user", "sessionId": "s1", "message": {"content": "hi"}})
    write(t, [progress, user], "a")

    def must_not_run(*args: Any) -> Any:
        raise AssertionError("the reader was loaded for lines that hold no request")

    monkeypatch.setattr(track, "refresh", must_not_run)
    assert requests_seen(t) == 2
    saved = state_of(t, cache_home)["files"][str(t)]
    assert (saved["offset"], saved["lines"]) == (t.stat().st_size, 4)
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home.parent))
    monkeypatch.setattr(prices, "lookup_prices", lambda model, at=None: None)
    write(t, THREE[2:], "a")
    assert requests_seen(t) == 3
    assert state_of(t, cache_home)["files"][str(t)]["lines"] == 5
