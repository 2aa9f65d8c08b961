#!/usr/bin/env python3
"""Time ``cachediag audit --json`` against ``ccusage claude daily --json --offline``.

For each size (12 MB, 100 MB and 1 GB by default), both tools read the same Claude Code
transcript tree, built from the real corpus as ``bench_analyze.py`` builds it (sessions
copied under fresh session, message and request ids, so neither tool de-duplicates a copy
away). In one run per size: one untimed warm-up run each, then ``--runs`` timed runs
each, interleaved (the order reversed every other round). Reported per size: the load
average, median wall time, MB/s, median CPU time and peak RSS (largest process, and the
whole process tree summed), the cachediag/ccusage ratios, and whether the two agree on
the tokens of the tree: against ``ccusage claude session``, run once more untimed (exit 1
if not; ``daily`` counts a few more, see ``check_tokens``), with the days side by side.
docs/audit.md#benchmark has the method and the figures.

    python scripts/bench_audit.py [--size-mb 12 --size-mb 100 --size-mb 1000] [--runs 5]
                                  [--trees DIR] [--install venv|none] [--corpus DIR]

The cachediag under test is this checkout pip-installed into a venv of its own and run
through its console script, as users run it (``--install none``: ``python -m cachediag``
from the checkout). It gets a price cache of its own (``XDG_CACHE_HOME`` in the scratch
folder), which its warm-up run fills, as any earlier run on a machine does. Both tools
run with ``TZ=UTC``, so that days are the same days. ``--trees DIR`` builds the trees in
DIR (``DIR/tree-<size>``) and keeps them; a tree already there is reused.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_analyze as shared  # the helpers every benchmark script uses

DEFAULT_SIZES_MB = (12.0, 100.0, 1000.0)
TOKENS = {  # cachediag's name: ccusage's name
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_creation_tokens": "cacheCreationTokens",
    "cache_read_tokens": "cacheReadTokens",
}
Days = dict[str, tuple[int, ...]]


def tree_rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants, from /proc, in KiB."""
    pids = [pid]
    for p in pids:
        pids.extend(shared._children_of(p))
    return sum(shared._status_kib(p, "VmRSS") for p in pids)


def cachediag_days(stdout: bytes) -> tuple[tuple[int, ...], Days]:
    """Token totals of ``audit --json --by day``: the tree's, and each day's."""
    doc = json.loads(stdout)

    def row(obj: dict[str, int]) -> tuple[int, ...]:
        return tuple(obj[k] for k in TOKENS)

    return row(doc["totals"]), {g["key"]: row(g) for g in doc["groups"]}


def ccusage_days(stdout: bytes) -> tuple[tuple[int, ...], Days]:
    """The same from ``ccusage claude daily --json``."""
    doc = json.loads(stdout)

    def row(obj: dict[str, int]) -> tuple[int, ...]:
        return tuple(obj[k] for k in TOKENS.values())

    return row(doc["totals"]), {d["date"]: row(d) for d in doc["daily"]}


def session_totals(stdout: bytes) -> tuple[int, ...]:
    """The tree's tokens by ``ccusage claude session --json``: the sum of its sessions."""
    rows = json.loads(stdout)["sessions"]
    return tuple(sum(s[k] for s in rows) for k in TOKENS.values())


def check_tokens(ours: bytes, daily: bytes, session: bytes) -> bool:
    """cachediag's totals against ccusage's, and day by day against ``daily``.

    ``ccusage claude daily`` counts a few more tokens than its own ``session`` report on
    the corpus (0.13%: it de-duplicates the copies of a response differently); cachediag
    counts what ``session`` counts, so the check (the exit status) is against that, and
    the days are shown for what they are."""
    (our_total, our_days), (daily_total, daily_days) = cachediag_days(ours), ccusage_days(daily)
    their_total = session_totals(session)
    print(f"  {'tokens':<22} {'cachediag':>16} {'ccusage session':>16} {'ccusage daily':>16}")
    for i, name in enumerate(TOKENS):
        flag = "" if our_total[i] == their_total[i] else "  <-- differs"
        print(f"  {name:<22} {our_total[i]:>16,} {their_total[i]:>16,} {daily_total[i]:>16,}{flag}")
    days = our_days.keys() | daily_days.keys()
    differ = sorted(d for d in days if our_days.get(d) != daily_days.get(d))
    print(f"  days with the same tokens as ccusage daily: {len(days) - len(differ)} of {len(days)}")
    for day in differ[:5]:
        ours_day, theirs_day = our_days.get(day), daily_days.get(day)
        print(f"    {day}: cachediag {ours_day}, ccusage daily {theirs_day}")
    same = our_total == their_total
    print(f"  token totals agree with ccusage session: {'yes' if same else 'NO'}")
    return same


def tree_for(size_mb: float, trees: Path, units: list[shared.SessionUnit]) -> Path:
    """``trees/tree-<size>`` (built unless it is there already); returns its root."""
    root = trees / f"tree-{size_mb:g}"
    if not (root / "projects").is_dir():
        _, files, sessions = shared.build_tree(root, units, int(size_mb * shared.MIB))
        print(f"built {root}/projects: {files} files, {sessions} sessions")
    return root


def bench_size(
    root: Path,
    command: list[str],
    env: dict[str, str],
    ccusage: list[str],
    runs: int,
    scratch: Path,
) -> bool:
    projects = root / "projects"
    files = list(projects.rglob("*.jsonl"))
    size = sum(p.stat().st_size for p in files)
    print(f"\n== {size / 1e6:.0f} MB ({size / shared.MIB:.1f} MiB), {len(files)} files: {projects}")
    ours_env = {**env, "TZ": "UTC", "XDG_CACHE_HOME": str(scratch / "xdg-cache")}
    tools = [
        shared.Tool(
            "cachediag",
            [*command, "audit", "--json", "--by", "day", "--no-progress", str(projects)],
            ours_env,
        ),
        shared.Tool(
            "ccusage",
            [*ccusage, "claude", "daily", "--json", "--offline"],
            {**os.environ, "CLAUDE_CONFIG_DIR": str(root), "TZ": "UTC"},
        ),
    ]
    for t in tools:  # warm-up: page cache, .pyc files, cachediag's price cache
        shared.run_once(t, scratch)
        t.wall_s.clear()
        t.peak_kib.clear()
        t.cpu_s.clear()
    load_before = os.getloadavg()
    for i in range(runs):
        for t in tools if i % 2 == 0 else tools[::-1]:
            shared.run_once(t, scratch)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"load average: {load_before[0]:.2f} before the timed runs, {load} after "
        f"({os.cpu_count()} CPUs); {runs} runs per tool, interleaved"
    )
    shared.print_table(tools, size)
    trees = {t.name: shared.tree_peak_kib(t, scratch) for t in tools}
    summed = ", ".join(f"{name} {kib / 1024:.1f} MiB" for name, kib in trees.items())
    print(
        f"whole process tree, peak of summed RSS (median of 3): {summed}; "
        f"ratio {trees['cachediag'] / trees['ccusage']:.2f}x"
    )
    session = subprocess.run(
        [*ccusage, "claude", "session", "--json", "--offline"],
        env=tools[1].env,
        capture_output=True,
        check=True,
        cwd=scratch,
    ).stdout
    return check_tokens(tools[0].last_stdout, tools[1].last_stdout, session)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--size-mb",
        type=float,
        action="append",
        help="tree size in MiB, repeatable (default: 12, 100 and 1000)",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs per tool and size")
    parser.add_argument("--corpus", type=Path, help="folder of project folders to copy")
    parser.add_argument("--trees", type=Path, help="build the trees here and keep them")
    shared.add_install_option(parser)
    args = parser.parse_args(argv)
    corpus = args.corpus or shared.shared_corpus() or shared.BUNDLED_CORPUS

    ccusage = shared.find_ccusage()
    command, env = shared.installed(args.install)
    version = subprocess.run(
        [*ccusage, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    print(f"corpus:    {corpus}")
    print(f"cachediag: {' '.join(command)} (python {sys.version.split()[0]})")
    print(f"ccusage:   {ccusage[0]} ({version})")
    if version.split()[-1] != shared.CCUSAGE_VERSION:
        print(f"warning: the benchmark is defined for ccusage {shared.CCUSAGE_VERSION}")

    tmp = Path(tempfile.mkdtemp(prefix="cachediag-bench-audit-"))
    try:
        trees = args.trees or tmp
        units = shared.read_units(corpus)
        agree = True
        for size_mb in args.size_mb or DEFAULT_SIZES_MB:
            root = tree_for(size_mb, trees, units)
            scratch = tmp / f"out-{size_mb:g}"
            scratch.mkdir()
            agree = bench_size(root, command, env, ccusage, args.runs, scratch) and agree
        return 0 if agree else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
