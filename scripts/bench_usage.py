#!/usr/bin/env python3
"""Time a usage report (``cachediag daily --json`` by default) read cold against
``ccusage claude daily --json --offline`` (issue 27).

Cold: no history kept between runs. Each cachediag run starts without the history
index (its folder under ``XDG_CACHE_HOME`` removed), and with ``--no-index`` when the
command has that option; the price file the warm-up round wrote is kept, as on any
machine after its first run; the page cache is warm for every tool alike. Two
histories: the shared corpus as it is, and ``bench_analyze``'s synthetic tree of
``--size-mb`` (the corpus's sessions copied under fresh ids; 0: the corpus alone).

Tools: cachediag as users run it (``bench_analyze.installed``: pip-installed in a venv
of its own by default), ccusage 20.0.24's npm script under node and, when installed
beside it, the native binary that script spawns (``bench_analyze.native_ccusage``), and
any ``--also NAME=COMMAND`` (e.g. an older checkout: ``--also
before="env PYTHONPATH=/tmp/old python -m cachediag"``). Whole processes, runs
interleaved with the order rotating each round; medians of wall time, CPU time (the
process and its children) and peak RSS, and the median of paired wall-time ratios
against each ccusage. Every cachediag variant must print the same bytes (exit 1 if not).

    python scripts/bench_usage.py [--report daily] [--size-mb 100] [--runs 7]
        [--install venv|none] [--also NAME=COMMAND]... [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_analyze import (
    BUNDLED_CORPUS,
    MIB,
    Tool,
    add_install_option,
    build_tree,
    find_ccusage,
    installed,
    native_ccusage,
    read_units,
    run_once,
    shared_corpus,
)

REPORTS = ("daily", "weekly", "monthly", "session", "blocks")
TOKEN_KEYS = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")


def corpus_tree(root: Path, corpus: Path) -> tuple[int, int]:
    """The corpus's project folders copied under ``root/projects`` (what ccusage's
    ``CLAUDE_CONFIG_DIR`` must hold); returns (bytes, files)."""
    size = files = 0
    for project in sorted(p for p in corpus.iterdir() if p.is_dir()):
        shutil.copytree(project, root / "projects" / project.name)
    for path in (root / "projects").rglob("*.jsonl"):
        size += path.stat().st_size
        files += 1
    return size, files


def totals_of(stdout: bytes) -> str:
    """The token totals a report prints, for the log (both tools use ccusage's keys)."""
    try:
        totals = json.loads(stdout).get("totals") or {}
    except (ValueError, AttributeError):
        return "?"
    return " ".join(f"{k}={totals.get(k)}" for k in TOKEN_KEYS)


def median_ms(values: list[float]) -> float:
    return 1000 * float(statistics.median(values))


def time_tools(tools: list[Tool], cold: Path, runs: int, scratch: Path) -> None:
    """``runs`` rounds, every tool once per round, the order rotating; each cachediag
    run starts without the history index under the cache folder ``cold``."""
    for round_no in range(runs + 1):
        turn = round_no % len(tools)
        for tool in tools[turn:] + tools[:turn]:
            if tool.env.get("XDG_CACHE_HOME") == str(cold):
                shutil.rmtree(cold / "cachediag" / "history", ignore_errors=True)
            run_once(tool, scratch)
            if round_no == 0:  # a warm-up round: imports and page cache, not timed
                tool.wall_s.clear()
                tool.cpu_s.clear()
                tool.peak_kib.clear()


def report(title: str, tools: list[Tool], theirs: list[Tool]) -> bool:
    """Print one history's figures; False when the cachediag variants' bytes differ."""
    print(f"\n{title}")
    for tool in tools:
        print(
            f"  {tool.name:<16} wall {median_ms(tool.wall_s):7.0f} ms   "
            f"cpu {median_ms(tool.cpu_s):7.0f} ms   "
            f"peak {statistics.median(tool.peak_kib) / 1024:6.1f} MiB"
        )
    ours = [t for t in tools if t not in theirs]
    for mine in ours:
        for other in theirs:
            pairs = [a / b for a, b in zip(mine.wall_s, other.wall_s, strict=True)]
            print(f"  {mine.name} / {other.name}: {statistics.median(pairs):.2f}x (paired median)")
    for tool in [ours[0], *theirs]:
        print(f"  totals {tool.name:<12} {totals_of(tool.last_stdout)}")
    same = all(t.last_stdout == ours[0].last_stdout for t in ours)
    if not same:
        print("  ERROR: the cachediag variants printed different bytes")
    return same


def _also(value: str) -> tuple[str, list[str]]:
    name, sep, command = value.partition("=")
    if not sep or not name or not command.strip():
        raise argparse.ArgumentTypeError(f"--also wants NAME=COMMAND, not {value!r}")
    return name, shlex.split(command)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", choices=REPORTS, default="daily")
    parser.add_argument("--size-mb", type=float, default=100.0, help="synthetic tree; 0: none")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per tool and history")
    parser.add_argument("--also", type=_also, action="append", default=[], metavar="NAME=CMD")
    parser.add_argument("--keep", action="store_true", help="keep the trees; print their path")
    add_install_option(parser)
    args = parser.parse_args(argv)

    corpus = shared_corpus() or BUNDLED_CORPUS
    ccusage = find_ccusage()
    native = native_ccusage(ccusage[0])
    command, env = installed(args.install)
    tmp = Path(tempfile.mkdtemp(prefix="cachediag-bench-usage-"))
    ok = True
    try:
        cold = tmp / "cache"
        scratch = tmp / "out"
        scratch.mkdir()
        histories: list[tuple[str, Path]] = []
        size, files = corpus_tree(tmp / "corpus", corpus)
        histories.append((f"corpus: {size / MIB:.1f} MiB, {files} files", tmp / "corpus"))
        if args.size_mb > 0:
            tree = tmp / "synthetic"
            size, files, sessions = build_tree(tree, read_units(corpus), int(args.size_mb * MIB))
            title = f"synthetic: {size / MIB:.1f} MiB, {files} files, {sessions} sessions"
            histories.append((title, tree))
        flags = ["--json"]
        help_text = subprocess.run(
            [*command, args.report, "--help"], env=env, capture_output=True, text=True
        ).stdout
        if "--no-index" in help_text:
            flags.append("--no-index")
        version = subprocess.run([*ccusage, "--version"], capture_output=True, text=True)
        print(f"cachediag: {' '.join(command)} {args.report} {' '.join(flags)} (cold)")
        print(f"ccusage:   {ccusage[0]} ({version.stdout.strip()}); native: {native or 'none'}")
        print(
            f"machine:   {os.cpu_count()} CPUs, load average "
            + ", ".join(f"{x:.2f}" for x in os.getloadavg())
        )
        for title, tree in histories:
            ours_env = dict(env, CLAUDE_CONFIG_DIR=str(tree), XDG_CACHE_HOME=str(cold))
            cc_env = dict(os.environ, CLAUDE_CONFIG_DIR=str(tree))
            tools = [Tool("cachediag", [*command, args.report, *flags], ours_env)]
            tools += [Tool(name, [*cmd, args.report, *flags], ours_env) for name, cmd in args.also]
            claude = ["claude", args.report, "--json", "--offline"]
            theirs = [Tool("ccusage (node)", [*ccusage, *claude], cc_env)]
            if native is not None:
                theirs.append(Tool("ccusage (native)", [native, *claude], cc_env))
            time_tools(tools + theirs, cold, args.runs, scratch)
            ok = report(title, tools + theirs, theirs) and ok
        print(f"\nload average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
