"""Time ``cachediag audit DIR`` on a team-sized dataset: 10 million requests, 500 hosts.

The dataset is built from the shared corpus's own ledger: the corpus is exported once
(``cachediag export``), then its rows are copied with new ids (request key, message and
request ids, session and source names get a copy number; each copy goes to one of the
hosts, round robin) by DuckDB into ``day=.../host=.../part-*.parquet``, like hundreds of
laptops exporting into one folder. Then, interleaved (the order reversed every other
round), each command runs ``--runs`` times:

- ``cachediag audit DIR --by cause`` and ``--by host`` (tables, as people read them) and
  the same with ``--json`` (machines; every session's what-if included), cachediag
  installed with its ``fleet`` extra in a venv of its own (what users run; ``--install
  none`` runs this checkout instead);
- the named peer: the bare DuckDB query that sums the same groups over the same files
  (one ``GROUP BY``, no cachediag), in the same venv: the floor any tool on DuckDB
  stands on. Its groups' requests and dollars are checked against ``--json``'s, so both
  did the same work.

Reported: median wall time, CPU seconds (user + system, load-independent) and peak
resident memory of the process tree (sampled from /proc every 20 ms), the ratio of wall
times to the peer, and the 1-minute load average before each run (the machine may be
shared: its range is printed with the figures). Targets (issue 18): under 10 s and
1 GB on a 2-core machine.

    python scripts/bench_dataset.py [--requests 10000000] [--hosts 500] [--runs 3]
                                    [--keep DIR] [--corpus DIR] [--install venv|none]

``--keep DIR`` builds the dataset in DIR and keeps it; a DIR that has one is reused
(building 10 million requests takes a few minutes).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass(slots=True)
class Runs:
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(argv: list[str], env: dict[str, str], runs: Runs) -> bytes:
    """One run of ``argv``, added to ``runs``; returns its stdout."""
    rss_kib = _load("bench_audit").tree_rss_kb  # the process tree's RSS, as bench_audit sums it
    cpu = _children_cpu_s()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = 0
    done = threading.Event()
    out: dict[str, bytes] = {}

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_kib(proc.pid))
            time.sleep(0.02)

    def drain(name: str) -> None:
        out[name] = getattr(proc, name).read()

    threads = [threading.Thread(target=sample, daemon=True)] + [
        threading.Thread(target=drain, args=(n,), daemon=True) for n in ("stdout", "stderr")
    ]
    for t in threads:
        t.start()
    proc.wait()
    runs.wall_s.append(time.perf_counter() - start)
    runs.cpu_s.append(_children_cpu_s() - cpu)
    done.set()
    for t in threads:
        t.join()
    runs.peak_mb.append(peak / 1024)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed: {out['stderr'][-2000:]!r}")
    return out["stdout"]


def build_dataset(
    cachediag: list[str], env: dict[str, str], corpus: Path, target: Path, n: int, hosts: int
) -> int:
    import duckdb

    base = target.parent / "base"
    shutil.rmtree(base, ignore_errors=True)
    subprocess.run(
        [*cachediag, "export", str(corpus), "--output", str(base), "--label", "host=seed"],
        env=env,
        check=True,
        stderr=subprocess.DEVNULL,
    )
    con = duckdb.connect()
    base_glob = f"{base}/**/*.parquet"
    [(rows,)] = con.execute(f"SELECT count(*) FROM read_parquet('{base_glob}')").fetchall()
    copies = -(-n // rows)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    tag = "'~' || CAST(k AS VARCHAR)"
    con.execute(
        f"""
        COPY (
          SELECT * EXCLUDE (host, day) REPLACE (
              request_key || {tag} AS request_key,
              message_id || {tag} AS message_id,
              request_id || {tag} AS request_id,
              session_id || {tag} AS session_id,
              source || {tag} AS source),
            'host-' || lpad(CAST(k % {hosts} AS VARCHAR), 3, '0') AS host,
            CAST(day AS VARCHAR) AS day
          FROM read_parquet('{base_glob}', hive_partitioning = true), range({copies}) AS t(k)
          LIMIT {n}
        ) TO '{target}' (FORMAT parquet, PARTITION_BY (day, host), COMPRESSION zstd,
                        FILENAME_PATTERN 'part-{{uuid}}')
        """
    )
    shutil.copy(base / "_schema.json", target / "_schema.json")
    [(count,)] = con.execute(
        f"SELECT count(*) FROM read_parquet('{target}/**/*.parquet', hive_partitioning = true)"
    ).fetchall()
    con.close()
    shutil.rmtree(base)
    return int(count)


PEER = """
import json, sys, duckdb
by = {"cause": "cause_key", "host": "CAST(host AS VARCHAR)"}[sys.argv[2]]
rows = duckdb.connect().execute(f'''
  SELECT {by} AS key, count(*), sum(input_tokens), sum(cache_read_tokens),
         sum(cache_creation_tokens), sum(output_tokens), sum(cost_usd),
         sum(CASE WHEN outcome = 'miss' THEN miss_cost_usd END)
  FROM read_parquet('{sys.argv[1]}/**/*.parquet', hive_partitioning = true)
  GROUP BY 1 ORDER BY 7 DESC''').fetchall()
print(json.dumps({r[0]: [r[1], r[6]] for r in rows}))
"""


def check_same_work(name: str, ours: bytes, peer: bytes) -> None:
    """The peer's groups (requests, dollars) are those of ``--json``: the same sums."""
    theirs = json.loads(peer)
    groups = {g["key"]: [g["requests"], g["cost_usd"]] for g in json.loads(ours)["groups"]}
    same = groups.keys() == theirs.keys() and all(
        groups[k][0] == theirs[k][0]
        and math.isclose(groups[k][1], theirs[k][1], rel_tol=1e-9, abs_tol=1e-4)
        for k in groups
    )
    if not same:
        raise SystemExit(f"{name}: the peer's groups differ from cachediag's: {theirs}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000_000)
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build (or reuse) the dataset here")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    bench = _load("bench_analyze")
    bench.add_install_option(parser)
    args = parser.parse_args(argv)
    if not (args.corpus / "claude-code").is_dir():
        raise SystemExit(f"{args.corpus}: the shared corpus is needed (--corpus DIR)")
    cachediag, env = bench.installed(args.install, "[fleet]")
    # The peer runs in the same interpreter as cachediag, with the same DuckDB.
    python = str(Path(cachediag[0]).with_name("python")) if args.install == "venv" else cachediag[0]
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="cachediag-bench-dataset-"))
    dataset = scratch / "dataset"
    if args.keep is None or not (dataset / "_schema.json").is_file():
        start = time.perf_counter()
        count = build_dataset(cachediag, env, args.corpus, dataset, args.requests, args.hosts)
        print(f"built {count:,} requests in {time.perf_counter() - start:.0f} s")
    files = sum(1 for _ in dataset.rglob("*.parquet"))
    size = sum(p.stat().st_size for p in dataset.rglob("*.parquet")) / 1e6
    hosts = sum(1 for _ in dataset.glob("day=*/host=*"))
    print(f"dataset: {dataset} ({files:,} files, {size:,.0f} MB, {hosts:,} day/host folders)")
    peer_script = scratch / "peer.py"
    peer_script.write_text(PEER)
    commands: dict[str, list[str]] = {}
    for by in ("cause", "host"):
        audit = [*cachediag, "audit", str(dataset), "--by", by]
        commands[f"cachediag audit DIR --by {by}"] = audit
        commands[f"cachediag audit DIR --by {by} --json"] = [*audit, "--json"]
        commands[f"duckdb GROUP BY {by} (peer)"] = [python, str(peer_script), str(dataset), by]
    env = {**env, "COLUMNS": "100", "NO_COLOR": "1"}
    runs = {name: Runs() for name in commands}
    loads: list[float] = []
    for round_ in range(args.runs):
        order = list(commands) if round_ % 2 == 0 else list(reversed(commands))
        outs: dict[str, bytes] = {}
        for name in order:
            loads.append(os.getloadavg()[0])
            outs[name] = measure(commands[name], env, runs[name])
        for by in ("cause", "host"):
            json_name = f"cachediag audit DIR --by {by} --json"
            check_same_work(json_name, outs[json_name], outs[f"duckdb GROUP BY {by} (peer)"])
            if round_ == 0:
                doc = json.loads(outs[json_name])
                totals, sessions = doc["totals"]["requests"], doc["sessions"]
                print(f"{json_name}: {totals:,} requests, {sessions:,} sessions")
    print(
        f"\n{os.cpu_count()} cores; 1-minute load average before the runs: "
        f"{min(loads):.1f} to {max(loads):.1f} (median {statistics.median(loads):.1f}); "
        f"median of {args.runs} interleaved runs"
    )
    print(f"{'command':40} {'wall':>8} {'CPU':>8} {'peak RSS':>9} {'vs peer':>8}")
    for name, r in runs.items():
        by = "cause" if "cause" in name else "host"
        peer = statistics.median(runs[f"duckdb GROUP BY {by} (peer)"].wall_s)
        wall = statistics.median(r.wall_s)
        print(
            f"{name:40} {wall:7.2f}s {statistics.median(r.cpu_s):7.2f}s "
            f"{statistics.median(r.peak_mb):7.0f}MB {wall / peer:7.2f}x"
        )
    if args.keep is None:
        shutil.rmtree(scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
