#!/usr/bin/env python3
"""Time ``cachediag daily --json`` with its history index against ``ccusage claude daily
--json`` on the same ~100 MiB history (issue 27).

The history is ``bench_analyze``'s synthetic tree (the corpus's sessions copied under
fresh ids). cachediag is this checkout pip-installed in a venv of its own and run through
its console script (``bench_analyze.install_in_venv``); ccusage 20.0.24 is installed with
npm into a temporary prefix (``bench_analyze.find_ccusage``). Whole processes, spawn to
exit, warm page cache, runs interleaved (the order alternates), medians and the median
of paired ratios:

- first: cachediag with an empty cache folder (the index built), for reference;
- unchanged: the history as the previous run left it (its stored answer printed);
- rows: the same, the stored answers deleted before each run (the rows from the index);
- appended: one response appended to a transcript before each run (of each tool);
- no index: ``cachediag daily --json --no-index``, everything read as ccusage does;
- floor: a process that only imports what classifying one appended response needs (the
  transcript reader, the ledger, the prices), timed beside the appended runs.

Targets: unchanged at most 0.2x ccusage, appended at most 0.3x. Each run's output is
checked: with and without the index cachediag prints the same bytes (exit 1 if not).

    python scripts/bench_index.py [--size-mb 100] [--runs 7] [--install venv|none] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_analyze import (
    CCUSAGE_VERSION,
    MIB,
    add_install_option,
    build_tree,
    find_ccusage,
    installed,
    read_units,
    shared_corpus,
)
from bench_statusline import append_response, last_response

FLOOR_IMPORTS = (
    "import cachediag.analysis.ledger, cachediag.ingest.transcript, "
    "cachediag.analysis.costs, cachediag.pricing.slots, orjson"
)
"""What any answer to an append must load to turn the new lines into rows the one
ledger classified: timed alone, it is the floor under the appended target."""
BUNDLED_CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "real"
TARGETS = {"unchanged": 0.2, "appended": 0.3}
"""Issue 27's; ``rows`` (no stored answer) is shown against ccusage without one."""


@dataclass(slots=True)
class Tool:
    name: str
    argv: list[str]
    env: dict[str, str]
    wall: dict[str, list[float]] = field(default_factory=dict)
    last: bytes = b""


def run(tool: Tool, scenario: str | None, cwd: Path) -> None:
    start = time.perf_counter()
    done = subprocess.run(tool.argv, env=tool.env, capture_output=True, cwd=cwd)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{tool.name} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    tool.last = done.stdout
    if scenario is not None:
        tool.wall.setdefault(scenario, []).append(elapsed)


def largest_transcript(tree: Path) -> Path:
    mains = [p for p in (tree / "projects").rglob("*.jsonl") if "subagents" not in p.parts]
    return max(mains, key=lambda p: p.stat().st_size)


def median_ms(xs: list[float]) -> float:
    return 1000 * float(statistics.median(xs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=100.0)
    parser.add_argument("--runs", type=int, default=7, help="timed runs per tool and scenario")
    parser.add_argument("--keep", action="store_true", help="keep the tree; print its path")
    add_install_option(parser)
    args = parser.parse_args(argv)

    corpus = shared_corpus() or BUNDLED_CORPUS
    ccusage = find_ccusage()
    command, env = installed(args.install)
    tmp = Path(tempfile.mkdtemp(prefix="cachediag-bench-index-"))
    try:
        tree = tmp / "tree"
        size, files, sessions = build_tree(tree, read_units(corpus), int(args.size_mb * MIB))
        cache = tmp / "cache"
        ours_env = dict(env, CLAUDE_CONFIG_DIR=str(tree), XDG_CACHE_HOME=str(cache))
        cc_env = dict(os.environ, CLAUDE_CONFIG_DIR=str(tree))
        ours = Tool("cachediag", [*command, "daily", "--json"], ours_env)
        plain = Tool("no index", [*command, "daily", "--json", "--no-index"], ours_env)
        theirs = Tool("ccusage", [*ccusage, "claude", "daily", "--json", "--offline"], cc_env)
        version = subprocess.run([*ccusage, "--version"], capture_output=True, text=True)
        print(f"tree:      {size / MIB:.1f} MiB, {files} files, {sessions} sessions")
        print(f"cachediag: {' '.join(command)}")
        print(f"ccusage:   {ccusage[0]} ({version.stdout.strip()}; defined for {CCUSAGE_VERSION})")
        print(f"machine:   {os.cpu_count()} CPUs, load average "
              + ", ".join(f"{x:.2f}" for x in os.getloadavg()))  # fmt: skip
        scratch = tmp / "out"
        scratch.mkdir()

        for _ in range(max(1, args.runs // 2)):  # the index built from nothing, each time
            shutil.rmtree(cache, ignore_errors=True)
            run(ours, "first", scratch)
        run(theirs, None, scratch)  # warm-up
        run(ours, None, scratch)  # and ours: the first run's answer may be too recent to keep
        mismatches = 0
        for i in range(args.runs):
            order = [ours, plain, theirs] if i % 2 == 0 else [theirs, plain, ours]
            for tool in order:
                run(tool, "unchanged", scratch)
            mismatches += ours.last != plain.last
        for i in range(args.runs):
            for tool in [ours, theirs] if i % 2 == 0 else [theirs, ours]:
                if tool is ours:
                    for kept in (cache / "cachediag" / "history").glob("answer-*.index"):
                        kept.unlink()
                run(tool, "rows", scratch)
            mismatches += ours.last != plain.last
        target = largest_transcript(tree)
        template = last_response(target.read_bytes().splitlines()[-400:])
        n = 0
        venv = args.install == "venv"
        python = str(Path(command[0]).with_name("python")) if venv else sys.executable
        floor = Tool("floor", [python, "-c", FLOOR_IMPORTS], ours_env)
        for i in range(args.runs):
            order = [ours, theirs, floor] if i % 2 == 0 else [floor, theirs, ours]
            for tool in order:
                if tool is not floor:
                    append_response(target, template, n)
                    n += 1
                run(tool, "appended", scratch)
                if tool is ours:  # the same history read without the index: same bytes
                    run(plain, None, scratch)
                    mismatches += ours.last != plain.last

        print(f"\nwall time, median of {args.runs} runs (ms):")
        print(f"  {'scenario':<11} {'cachediag':>10} {'--no-index':>11} {'ccusage':>9} "
              f"{'ratio':>7} {'paired':>7} {'target':>7}")  # fmt: skip
        met = True
        for scenario in ("first", "unchanged", "rows", "appended"):
            mine = ours.wall.get(scenario, [])
            cc = theirs.wall.get(scenario) or theirs.wall["unchanged"]
            no_index = plain.wall.get(scenario)
            ratio = median_ms(mine) / median_ms(cc)
            # Run i of each tool ran next to the other's (the machine's speed drifts).
            paired = (
                f"{statistics.median(a / b for a, b in zip(mine, cc, strict=True)):.2f}x"
                if scenario != "first"
                else "-"
            )
            goal = TARGETS.get(scenario)
            verdict = (
                "" if goal is None else f"{goal:.1f}x " + ("met" if ratio <= goal else "NOT met")
            )
            met = met and (goal is None or ratio <= goal)
            print(f"  {scenario:<11} {median_ms(mine):>10.0f} "
                  f"{median_ms(no_index) if no_index else float('nan'):>11.0f} "
                  f"{median_ms(cc):>9.0f} {ratio:>6.2f}x {paired:>7} {verdict}")  # fmt: skip
        low = median_ms(floor.wall["appended"])
        cc_appended = median_ms(theirs.wall["appended"])
        print(f"\nfloor of any append in a fresh process that runs the one ledger (it only "
              f"imports the reader, the ledger and the prices): {low:.0f} ms, "
              f"{low / cc_appended:.2f}x ccusage's appended run")  # fmt: skip
        print("(first: ratio against ccusage's unchanged runs; ccusage keeps no index)")
        print("load average at the end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
        if mismatches:
            print(f"error: {mismatches} runs printed other bytes with the index than without")
        print("targets: " + ("met" if met else "NOT met"))
        if args.keep:
            print(f"tree kept at {tree}")
        return 1 if mismatches else 0
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
