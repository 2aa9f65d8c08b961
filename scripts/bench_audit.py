#!/usr/bin/env python3
"""Benchmark ``cachediag audit`` against ``ccusage claude daily`` on ~1 GB of transcripts.

The tree is built in a temporary directory from the shared corpus (never committed): copy
N of every transcript gets its own project folder, session ids, message ids and request
ids, so both tools see distinct sessions and ccusage's de-duplication by message and
request id removes nothing. Each tool runs on the same tree; the script reports wall
time, MB/s over the tree's size, the peak resident memory of the whole process tree
(sampled every 20 ms from /proc, so the sum over worker processes) and the largest single
process (``wait4`` rusage), with CPU seconds (user + system, the tool and its workers).

    python scripts/bench_audit.py [--size-mb 1000] [--ccusage PATH] [--jobs N ...]
                                  [--repeat 3] [--keep DIR]

Wall time depends on what else the machine runs (the load average is printed); CPU
seconds do not. The tree is read once before the runs (so no tool pays for flushing
fresh pages), and each tool runs ``--repeat`` times; the fastest run is reported.
``--keep DIR`` builds the tree in DIR and keeps it; a DIR that has one is reused.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "claude-code"
UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*.jsonl") if p.is_file())


def session_ids(files: list[Path]) -> set[bytes]:
    """Every session id the corpus uses (in lines and in file and folder names)."""
    found: set[bytes] = set()
    for path in files:
        found.update(m.encode() for m in re.findall(r'"sessionId":"([^"]+)"', path.read_text()))
        found.update(UUID.findall(str(path.relative_to(CORPUS)).encode()))
    return found


def build_tree(target: Path, size_mb: float) -> int:
    files = corpus_files()
    ids = sorted(session_ids(files), key=len, reverse=True)
    pattern = re.compile(b"|".join(re.escape(i) for i in ids))
    corpus_bytes = sum(p.stat().st_size for p in files)
    copies = max(1, round(size_mb * 1e6 / corpus_bytes))
    total = 0
    for n in range(copies):
        tag = f"{n:06x}".encode()

        def new_id(m: re.Match[bytes], tag: bytes = tag) -> bytes:
            return tag + m.group(0)[len(tag) :] if len(m.group(0)) > len(tag) else tag

        for src in files:
            rel = src.relative_to(CORPUS)
            rel_new = pattern.sub(new_id, str(rel).encode()).decode()
            dest = (
                target
                / "projects"
                / f"copy{n:04d}-{rel.parts[0]}"
                / Path(rel_new).relative_to(rel.parts[0])
            )
            dest.parent.mkdir(parents=True, exist_ok=True)
            data = pattern.sub(new_id, src.read_bytes())
            data = data.replace(b'"msg_', b'"msg_c' + tag).replace(b'"req_', b'"req_c' + tag)
            dest.write_bytes(data)
            total += len(data)
    return total


def tree_rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants, from /proc."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                stack.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return total


def measure(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = 0
    done = threading.Event()
    streams: dict[str, bytes] = {}

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss_kb(proc.pid))
            time.sleep(0.02)

    def drain(name: str) -> None:
        pipe = getattr(proc, name)
        streams[name] = pipe.read()

    threads = [threading.Thread(target=sample, daemon=True)] + [
        threading.Thread(target=drain, args=(n,), daemon=True) for n in ("stdout", "stderr")
    ]
    for t in threads:
        t.start()
    # wait4 gives this child's own rusage: its ru_maxrss is the largest single process
    # among it and the workers it waited for.
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    done.set()
    for t in threads:
        t.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {streams['stderr'][-2000:]!r}")
    doc = json.loads(streams["stdout"])
    return {
        "seconds": elapsed,
        "tree_peak_rss_mb": peak / 1024,
        "largest_process_rss_mb": usage.ru_maxrss / 1024,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "tokens": float(total_tokens(doc)),
    }


def total_tokens(doc: dict[str, object]) -> int:
    """All tokens counted, from either tool's JSON: the two must have done the same work."""
    totals = doc["totals"]
    assert isinstance(totals, dict)
    keys = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")
    if "inputTokens" in totals:
        keys = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")
    return sum(int(totals[k]) for k in keys)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_analyze import add_install_option, installed

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=1000)
    parser.add_argument(
        "--ccusage", help="ccusage executable (default: found or installed as bench_analyze does)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="Runs per tool; best is shown.")
    parser.add_argument("--keep", type=Path, help="Build the tree here and keep it.")
    parser.add_argument(
        "--jobs",
        type=int,
        action="append",
        help="cachediag --jobs values to try (default: the automatic choice).",
    )
    add_install_option(parser)
    args = parser.parse_args()

    command, installed_env = installed(args.install)
    if args.ccusage is None:
        from bench_analyze import find_ccusage  # one way to find or install ccusage

        args.ccusage = find_ccusage()[0]
    if not CORPUS.is_dir():
        raise SystemExit(f"{CORPUS} not found: the benchmark builds its tree from the corpus")
    tmp = Path(tempfile.mkdtemp(prefix="cachediag-bench-")) if args.keep is None else args.keep
    try:
        t0 = time.perf_counter()
        if (tmp / "projects").is_dir():  # --keep DIR from an earlier run: reuse it
            size = sum(p.stat().st_size for p in (tmp / "projects").rglob("*.jsonl"))
        else:
            size = build_tree(tmp, args.size_mb)
        files = sum(1 for _ in (tmp / "projects").rglob("*.jsonl"))
        print(
            f"tree: {size / 1e6:.0f} MB in {files} files, built in "
            f"{time.perf_counter() - t0:.0f} s ({tmp})"
        )
        # Read the fresh tree once so that no tool pays for flushing or loading it.
        for path in (tmp / "projects").rglob("*.jsonl"):
            path.read_bytes()
        print(f"load average before the runs: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
        env = {**installed_env, "CLAUDE_CONFIG_DIR": str(tmp), "TZ": "UTC"}
        runs: list[tuple[str, list[str]]] = []
        for jobs in args.jobs or [0]:
            extra = [] if jobs == 0 else ["--jobs", str(jobs)]
            label = "cachediag audit --json" + (f" --jobs {jobs}" if jobs else "")
            runs.append(
                (
                    label,
                    [
                        *command,
                        "audit",
                        "--json",
                        "--no-progress",
                        *extra,
                        str(tmp / "projects"),
                    ],
                )
            )
        runs.append(
            (
                "ccusage claude daily --json --offline",
                [args.ccusage, "claude", "daily", "--json", "--offline"],
            )
        )
        for label, cmd in runs:
            # Best of --repeat runs: the figures describe the tool, not a busy moment.
            m = min((measure(cmd, env) for _ in range(args.repeat)), key=lambda r: r["seconds"])
            print(
                f"{label}: {m['seconds']:.1f} s, {size / 1e6 / m['seconds']:.1f} MB/s, "
                f"CPU {m['cpu_seconds']:.1f} s ({size / 1e6 / m['cpu_seconds']:.0f} MB per "
                "CPU-second), "
                f"peak RSS {m['tree_peak_rss_mb']:.0f} MB (process tree), "
                f"largest process {m['largest_process_rss_mb']:.0f} MB, "
                f"{m['tokens']:,.0f} tokens counted"
            )
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
