#!/usr/bin/env python3
"""Benchmark ``cachediag statusline`` against ``ccusage statusline`` (issues 3, 14).

Builds a ~100 MB Claude Code transcript from the corpus, then times whole processes
(spawn to exit, warm page cache; wall and CPU time), interleaved runs (the order
alternates) after a warm-up, medians and the median of paired ratios, side by side:

- warm: transcript unchanged since the previous run (both tools' caches valid);
- append: one more response appended before each run;
- cold: first run on the transcript (cachediag: no state file, its price cache kept as
  any earlier run leaves it; ccusage: no cache).
- first ever: cachediag with no cache directory at all (prices loaded from genai-prices).

cachediag runs its default line (model, session cost, cache) and ``--preset full`` (every
usage field: today's and the block's cost come from the history index).

cachediag is what users run: this checkout pip-installed in a venv of its own
(``bench_analyze.install_in_venv``), timed through the command ``statusline install``
writes (``python -I -S -c ...``) and through its console script.

Usage: python scripts/bench_statusline.py [--size-mb 100] [--runs 9] [--keep DIR]
                                          [--install venv|none]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIRS = [
    ROOT.parent / "shared" / "corpus" / "claude-code" / "spotter",
    ROOT / "fixtures" / "real" / "spotter",
]
CCUSAGE_VERSION = "20.0.24"
SESSION_ID = "00000000-bench-4000-8000-000000000100"


def corpus_transcripts() -> list[Path]:
    for folder in CORPUS_DIRS:
        files = sorted(p for p in folder.glob("*.jsonl") if len(p.stem) == 36)
        if files:
            return files
    sys.exit("no corpus transcripts found")


def _shift(obj: dict, suffix: str, offset: timedelta) -> None:
    obj["sessionId"] = SESSION_ID
    for key in ("uuid", "parentUuid", "logicalParentUuid", "requestId"):
        if isinstance(obj.get(key), str):
            obj[key] = f"{obj[key]}-{suffix}"
    message = obj.get("message")
    if isinstance(message, dict) and isinstance(message.get("id"), str):
        message["id"] = f"{message['id']}-{suffix}"
    ts = obj.get("timestamp")
    if isinstance(ts, str):
        at = datetime.fromisoformat(ts.replace("Z", "+00:00")) + offset
        obj["timestamp"] = at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def build_transcript(path: Path, size_mb: float) -> list[bytes]:
    """Concatenate corpus sessions (ids made unique, clocks shifted to follow each other)
    into one session of ``size_mb``; returns the last copy's lines for the append runs."""
    sources = [p.read_bytes().splitlines() for p in corpus_transcripts()]
    target = int(size_mb * 1024 * 1024)
    written = 0
    copy = 0
    clock = datetime(2026, 1, 1, tzinfo=UTC)
    last: list[bytes] = []
    with path.open("wb") as out:
        while written < target:
            lines = sources[copy % len(sources)]
            objs = [json.loads(raw) for raw in lines if raw.strip()]
            stamps = [
                datetime.fromisoformat(o["timestamp"].replace("Z", "+00:00"))
                for o in objs
                if isinstance(o.get("timestamp"), str)
            ]
            offset = clock - min(stamps)
            last = []
            for obj in objs:
                _shift(obj, f"c{copy}", offset)
                raw = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
                out.write(raw)
                written += len(raw)
                last.append(raw)
            clock = max(stamps) + offset + timedelta(minutes=2)
            copy += 1
    return last


def last_response(lines: list[bytes]) -> list[dict]:
    """The lines of the last assistant response (one per content block)."""
    objs = [json.loads(raw) for raw in lines if b'"assistant"' in raw]
    objs = [o for o in objs if o.get("type") == "assistant" and isinstance(o.get("message"), dict)]
    last_id = objs[-1]["message"].get("id")
    return [o for o in objs if o["message"].get("id") == last_id]


def append_response(path: Path, template: list[dict], n: int) -> None:
    """Append one new API response: the template's lines with fresh ids, 5 s later each."""
    at = datetime.fromisoformat(template[-1]["timestamp"].replace("Z", "+00:00"))
    at += timedelta(seconds=5 * (n + 1))
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    with path.open("ab") as out:
        for i, obj in enumerate(template):
            obj = json.loads(json.dumps(obj))
            obj["uuid"] = f"bench-append-{n}-{i}"
            obj["requestId"] = f"req_bench_append_{n}"
            obj["message"]["id"] = f"msg_bench_append_{n}"
            obj["timestamp"] = stamp
            out.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")


def find_ccusage(explicit: str | None, scratch: Path) -> Path:
    candidates = [explicit] if explicit else []
    candidates += [shutil.which("ccusage") or "", "/tmp/ccu/node_modules/.bin/ccusage"]
    for c in candidates:
        if c and Path(c).is_file() and _ccusage_version(Path(c)) == CCUSAGE_VERSION:
            return Path(c)
    target = scratch / "ccusage"
    print(f"installing ccusage@{CCUSAGE_VERSION} into {target} ...", file=sys.stderr)
    subprocess.run(
        ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(target),
         f"ccusage@{CCUSAGE_VERSION}", f"@ccusage/ccusage-linux-x64@{CCUSAGE_VERSION}"],
        check=True,
    )  # fmt: skip
    return target / "node_modules" / ".bin" / "ccusage"


def _ccusage_version(path: Path) -> str:
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    words = out.stdout.split()  # "ccusage 20.0.24"
    return words[-1].lstrip("v") if words else ""


@dataclass
class Command:
    """One command under test and its timings, per scenario."""

    name: str
    argv: list[str]
    env: dict[str, str]
    ours: bool
    silent: bool = False
    """Prints nothing (the interpreter alone, for scale)."""
    wall: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)
    partial: int = 0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: Command, stdin: bytes, scenario: str | None = None) -> bytes:
    """One whole process: spawn to exit (wall) and the CPU time it and its children used."""
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(cmd.argv, input=stdin, capture_output=True, env=cmd.env)
    elapsed = time.perf_counter() - start
    used = _children_cpu() - cpu
    bad = not done.stdout.strip() or done.stdout.startswith(b"cache ?")
    if done.returncode != 0 or (bad and not cmd.silent):
        sys.exit(f"{cmd.name} failed: rc={done.returncode} out={done.stdout[-200:]!r} "
                 f"stderr={done.stderr[-500:]!r}")  # fmt: skip
    if scenario is not None:
        cmd.wall.setdefault(scenario, []).append(elapsed * 1000)
        cmd.cpu.setdefault(scenario, []).append(used * 1000)
        if cmd.ours and b"partial" in done.stdout:
            cmd.partial += 1
    return done.stdout


def installed_commands(how: str) -> tuple[dict[str, list[str]], str]:
    """The command ``statusline install`` writes (``python -I -S -c ...``), and the
    console entry, of cachediag installed in a venv of its own (``bench_analyze``'s)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_analyze import installed

    command, env = installed(how)
    python = str(Path(command[0]).with_name("python")) if how == "venv" else sys.executable
    probe = (
        "import json,cachediag.ingest.native as n;"
        "from cachediag.statusline.install import fast_argv;"
        "print(json.dumps([fast_argv(), 'C scanner' if n.SCANNER else 'Python scanner']))"
    )
    out = subprocess.run([python, "-c", probe], env=env, capture_output=True, text=True,
                         check=True, cwd=tempfile.gettempdir())  # fmt: skip
    fast, scanner = json.loads(out.stdout)
    return {"installed command": fast, "console entry": [*command, "statusline"]}, scanner


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=100)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--ccusage", help="path to a ccusage 20.0.24 executable")
    parser.add_argument("--keep", type=Path, help="build the data here and keep it")
    parser.add_argument(
        "--install", choices=("venv", "none"), default="venv",
        help="venv: cachediag pip-installed in a venv of its own, as users run it "
        "(default); none: this checkout on PYTHONPATH",
    )  # fmt: skip
    opts = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="cachediag-bench-"))
    data_root = opts.keep or scratch / "claude"
    try:
        ccusage = find_ccusage(opts.ccusage, scratch)
        ours_argv, scanner = installed_commands(opts.install)
        transcript = data_root / "projects" / "-bench" / f"{SESSION_ID}.jsonl"
        transcript.parent.mkdir(parents=True, exist_ok=True)
        template = last_response(build_transcript(transcript, opts.size_mb))
        size_mb = transcript.stat().st_size / 1e6
        transcript.read_bytes()  # warm page cache for both tools
        stdin = json.dumps({
            "session_id": SESSION_ID, "transcript_path": str(transcript), "cwd": str(ROOT),
            "model": {"id": "claude-opus-4-6", "display_name": "Opus"},
            "workspace": {"current_dir": str(ROOT), "project_dir": str(ROOT)},
            "version": "2.1.39", "cost": {"total_cost_usd": 1.0},
        }).encode()  # fmt: skip

        cache_home, tmp_home = scratch / "xdg", scratch / "tmp"
        tmp_home.mkdir()
        # No capture folder (XDG_STATE_HOME), no state or price cache but this run's.
        base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env = {**base, "XDG_CACHE_HOME": str(cache_home), "XDG_STATE_HOME": str(scratch),
               "CLAUDE_CONFIG_DIR": str(data_root), "TMPDIR": str(tmp_home),
               "NO_COLOR": "1"}  # fmt: skip
        if opts.install == "none":
            env["PYTHONPATH"] = str(ROOT)
        # A first run reads the whole transcript; with the default 1 s budget a busy
        # machine stops it at 0.7 s (the line says partial) and the next run goes on: the
        # budget is raised so that every cold run times the whole read.
        cold_env = {**env, "CACHEDIAG_STATUSLINE_BUDGET": "60"}
        native = ccusage.resolve().parents[2] / "@ccusage" / "ccusage-linux-x64" / "bin" / "ccusage"
        commands = [
            Command(f"cachediag {name}", argv, env, True) for name, argv in ours_argv.items()
        ]
        # Every usage field too: today's and the block's cost read the whole history index.
        full = [*ours_argv["installed command"], "--preset", "full"]
        commands.insert(1, Command("cachediag --preset full", full, env, True))
        commands.append(Command("ccusage statusline", [str(ccusage), "statusline"], env, False))
        if native.is_file():
            commands.append(
                Command("ccusage native binary", [str(native), "statusline"], env, False)
            )
        scale = [sys.executable, "-S", "-c", "0"]
        commands.append(Command("(python -S -c 0, for scale)", scale, env, False, silent=True))
        lock = tmp_home / "ccusage-semaphore" / f"{SESSION_ID}.lock"

        def forget(cmd: Command, everything: bool) -> None:
            if cmd.silent:
                return
            if not cmd.ours:
                lock.unlink(missing_ok=True)
            elif everything:
                shutil.rmtree(cache_home, ignore_errors=True)
            else:
                # First run on this transcript: no state file and no history index. The
                # price cache is not about any transcript (any earlier cachediag run fills
                # it), so it stays.
                shutil.rmtree(cache_home / "cachediag" / "statusline", ignore_errors=True)
                shutil.rmtree(cache_home / "cachediag" / "history", ignore_errors=True)

        def measure(scenario: str, before: Callable[[Command, int], None] | None) -> None:
            for n in range(opts.runs + 1):  # run 0 is a warm-up, not counted
                order = commands if n % 2 == 0 else commands[::-1]
                for cmd in order:
                    if before is not None:
                        before(cmd, n)
                    timed(cmd, stdin, scenario if n else None)

        def cold(cmd: Command, _: int) -> None:
            forget(cmd, everything=False)
            cmd.env = cold_env if cmd.ours else env

        def first(cmd: Command, _: int) -> None:
            forget(cmd, everything=True)
            cmd.env = cold_env if cmd.ours else env

        counter = iter(range(10**6))

        def appended(cmd: Command, _: int) -> None:
            cmd.env = env
            if cmd.ours:  # ccusage runs after it on the same, changed file
                append_response(transcript, template, next(counter))

        measure("first", first)
        measure("cold", cold)
        if not lock.exists():
            sys.exit(f"ccusage did not write its cache at {lock}; cannot tell cached runs")
        for cmd in commands:
            cmd.env = env
        # Warm: both caches primed by the last cold run; nothing changes between runs.
        # ccusage's cache also expires after --refresh-interval (1 s); runs here follow
        # each other within it, so its cached path is what is timed.
        measure("warm", None)
        measure("append", appended)
        report(commands, size_mb, scanner, opts.runs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


SCENARIOS = {
    "warm": "warm (unchanged)",
    "append": "one response appended",
    "cold": "cold (first run)",
    "first": "first ever (no caches)",
}


def report(commands: list[Command], size_mb: float, scanner: str, runs: int) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\ntranscript: {size_mb:.1f} MB; {runs} interleaved runs per cell after a warm-up;"
          f" median ms, whole process; {os.cpu_count()} CPUs, load average {load}; "
          f"python {sys.version.split()[0]}, cachediag with the {scanner}\n")  # fmt: skip
    for figure, pick in (("wall", lambda c: c.wall), ("CPU", lambda c: c.cpu)):
        print(f"| command ({figure} ms) | " + " | ".join(SCENARIOS.values()) + " |")
        print("|---|" + "---:|" * len(SCENARIOS))
        for cmd in commands:
            cells = " | ".join(f"{_median(pick(cmd)[s]):.0f}" for s in SCENARIOS)
            print(f"| {cmd.name} | {cells} |")
        print()
    peer = next(c for c in commands if c.name == "ccusage statusline")
    for cmd in (c for c in commands if c.ours):
        for figure, pick in (("wall", lambda c: c.wall), ("CPU", lambda c: c.cpu)):
            ratios = []
            for s in SCENARIOS:
                # Paired: run i of each command ran next to the other's run i.
                pairs = [a / b for a, b in zip(pick(cmd)[s], pick(peer)[s], strict=True)]
                ratios.append(f"{s} {_median(pairs):.2f}x")
            print(f"{cmd.name} / ccusage statusline, {figure}, median of paired ratios: "
                  + ", ".join(ratios))  # fmt: skip
        if cmd.partial:
            print(f"  note: {cmd.partial} runs of {cmd.name} printed partial (time budget)")
    print("\n(append: a new response is appended before each cachediag run; ccusage runs"
          " after it on the same file, so it sees a changed transcript too.)")  # fmt: skip


if __name__ == "__main__":
    main()
