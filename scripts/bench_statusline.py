#!/usr/bin/env python3
"""Benchmark ``cachediag statusline`` against ``ccusage statusline`` (issue 3).

Builds a ~100 MB Claude Code transcript from the corpus, then times whole processes
(spawn to exit, warm page cache), median of N runs, in one run side by side:

- warm: transcript unchanged since the previous run (both tools' caches valid);
- append: one more response appended before each run;
- cold: first run on the transcript (cachediag: no state file, its price cache kept as
  any earlier run leaves it; ccusage: no cache).
- first ever: cachediag with no cache directory at all (prices loaded from genai-prices).

Usage: python scripts/bench_statusline.py [--size-mb 100] [--runs 9] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
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


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or not done.stdout.strip():
        sys.exit(f"{argv[0]} failed: rc={done.returncode} stderr={done.stderr[-500:]!r}")
    return elapsed * 1000, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=100)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--ccusage", help="path to a ccusage 20.0.24 executable")
    parser.add_argument("--keep", type=Path, help="build the data here and keep it")
    opts = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="cachediag-bench-"))
    data_root = opts.keep or scratch / "claude"
    try:
        ccusage = find_ccusage(opts.ccusage, scratch)
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
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache_home),
               "CLAUDE_CONFIG_DIR": str(data_root), "TMPDIR": str(tmp_home),
               "NO_COLOR": "1"}  # fmt: skip
        sys.path.insert(0, str(ROOT))
        from cachediag.statusline.install import fast_argv

        entry = "import sys; from cachediag.entry import main; sys.exit(main())"
        ours = {
            "cachediag statusline (console entry)": [sys.executable, "-c", entry, "statusline"],
            "cachediag installed command (python -I -S -c ...)": fast_argv(),
        }
        native = ccusage.resolve().parents[2] / "@ccusage" / "ccusage-linux-x64" / "bin" / "ccusage"
        # For scale: the interpreter alone, with and without site (.pth files).
        scale = {
            "(python -c 'print(0)', for scale)": [sys.executable, "-c", "print(0)"],
            "(python -S -c 'print(0)', for scale)": [sys.executable, "-S", "-c", "print(0)"],
        }
        theirs = {"ccusage statusline": [str(ccusage), "statusline"]}
        if native.is_file():
            theirs["ccusage native binary statusline"] = [str(native), "statusline"]
        lock = tmp_home / "ccusage-semaphore" / f"{SESSION_ID}.lock"

        results: dict[str, dict[str, float]] = {}

        def measure(scenario: str, before: dict[str, object]) -> None:
            times: dict[str, list[float]] = {name: [] for name in [*ours, *theirs, *scale]}
            for n in range(opts.runs):
                for name, argv in [*ours.items(), *theirs.items(), *scale.items()]:
                    prepare = before.get(name) or before.get("*")
                    if callable(prepare):
                        prepare(n)
                    times[name].append(timed(argv, stdin, env)[0])
            for name, xs in times.items():
                results.setdefault(name, {})[scenario] = statistics.median(xs)

        def forget_ours(_: int) -> None:
            # First run on this transcript: no state file. The price cache is not about
            # any transcript (any earlier cachediag run fills it), so it stays.
            shutil.rmtree(cache_home / "cachediag" / "statusline", ignore_errors=True)

        def forget_everything(_: int) -> None:
            shutil.rmtree(cache_home, ignore_errors=True)

        def forget_theirs(_: int) -> None:
            lock.unlink(missing_ok=True)

        first = {name: forget_everything for name in ours}
        first |= {name: forget_theirs for name in theirs}
        measure("first", first)
        cold = {name: forget_ours for name in ours} | {name: forget_theirs for name in theirs}
        measure("cold", cold)
        if not lock.exists():
            sys.exit(f"ccusage did not write its cache at {lock}; cannot tell cached runs")
        # Warm: both caches primed by the last cold run; nothing changes between runs.
        # ccusage's cache also expires after --refresh-interval (1 s); runs here follow
        # each other within it, so its cached path is what is timed.
        for argv in [*ours.values(), *theirs.values()]:
            timed(argv, stdin, env)
        measure("warm", {})
        counter = iter(range(10**6))
        appended = {name: (lambda _n: append_response(transcript, template, next(counter)))
                    for name in ours}  # fmt: skip
        measure("append", appended)

        print(f"\ntranscript: {size_mb:.1f} MB, {opts.runs} runs per cell, median wall ms, "
              f"whole process; {os.cpu_count()} CPUs; "
              f"python {sys.version.split()[0]}\n")  # fmt: skip
        print("| command | warm (unchanged) | one response appended | cold (first run) "
              "| first ever (no caches) |")  # fmt: skip
        print("|---|---:|---:|---:|---:|")
        for name, c in results.items():
            print(f"| {name} | {c['warm']:.0f} | {c['append']:.0f} | {c['cold']:.0f} "
                  f"| {c['first']:.0f} |")  # fmt: skip
        print("\n(append: a new response is appended before each cachediag run; ccusage runs"
              " after it on the same file, so it sees a changed transcript too.)")  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
