#!/usr/bin/env python3
"""Benchmark ``cachediag watch`` (issue 5): event latency and CPU while idle.

Builds a projects tree of N transcripts (copies of a corpus session with their own ids,
last written two hours ago, as most of a real tree is), starts ``cachediag watch --json``
on it in a subprocess, then:

- idle CPU: user + system CPU time of the watch process (all its threads, from
  /proc/<pid>/stat) over ``--idle-s`` seconds in which nothing is written;
- latency: appends one API response line at a time to random sessions (a pause between
  appends) and measures from just before the ``write`` call to the moment the event's
  JSON line arrives on the watch's stdout (a reader thread in this process). A session's
  first append also includes reading its earlier content (quietly) for the first time.

Usage: python scripts/bench_watch.py [--files 1000] [--idle-s 30] [--appends 60] [--recent]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "fixtures" / "real" / "spotter" / "short.jsonl"
TICKS = os.sysconf("SC_CLK_TCK")


def build_tree(root: Path, files: int, recent: bool, per_project: int = 20) -> list[Path]:
    """``files`` transcripts in projects of ``per_project``, mtimes two hours back (or now:
    every session is then read at the start)."""
    lines = TEMPLATE.read_bytes().splitlines(keepends=True)
    old = time.time() - (0 if recent else 7200)
    made: list[Path] = []
    for n in range(files):
        project = root / f"-home-bench-project-{n // per_project:03d}"
        project.mkdir(parents=True, exist_ok=True)
        session = f"00000000-0000-4000-8000-{n:012d}"
        path = project / f"{session}.jsonl"
        with path.open("wb") as out:
            for raw in lines:
                obj = json.loads(raw)
                if "sessionId" in obj:
                    obj["sessionId"] = session
                message = obj.get("message")
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    message["id"] = f"{message['id']}-{n}"
                out.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
        os.utime(path, (old, old))
        made.append(path)
    return made


def response_line(message_id: str, session: str, read_tokens: int) -> bytes:
    """One API response as Claude Code writes it (only what the reader looks at)."""
    obj = {
        "type": "assistant",
        "sessionId": session,
        "uuid": f"u-{message_id}",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        "requestId": f"req-{message_id}",
        "message": {
            "id": message_id,
            "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": "x" * 400}],
            "usage": {
                "input_tokens": 3,
                "cache_read_input_tokens": read_tokens,
                "cache_creation_input_tokens": 200,
                "cache_creation": {"ephemeral_5m_input_tokens": 200},
                "output_tokens": 50,
            },
        },
    }
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def threads_cpu_and_wakeups(pid: int) -> tuple[float, int]:
    """CPU seconds on the run queue (nanosecond schedstat, summed over the threads) and
    voluntary context switches (each one a sleep, hence a wake-up)."""
    cpu_ns = switches = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            cpu_ns += int((task / "schedstat").read_text().split()[0])
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    switches += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return cpu_ns / 1e9, switches


class Arrivals:
    """Reads the watch's stdout; remembers when each request event arrived."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.at: dict[str, float] = {}
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            now = time.time()
            event = json.loads(raw)
            if event.get("event") == "request":
                with self.cond:
                    self.at[event["message_id"]] = now
                    self.cond.notify_all()

    def wait_for(self, message_id: str, timeout_s: float) -> float | None:
        with self.cond:
            self.cond.wait_for(lambda: message_id in self.at, timeout_s)
            return self.at.get(message_id)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_analyze import add_install_option, installed

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--idle-s", type=float, default=30.0)
    parser.add_argument("--appends", type=int, default=60)
    parser.add_argument("--sessions", type=int, default=10, help="sessions appended to")
    parser.add_argument(
        "--recent", action="store_true", help="all transcripts written just now (read at start)"
    )
    add_install_option(parser)
    opts = parser.parse_args()

    command, installed_env = installed(opts.install)

    with tempfile.TemporaryDirectory(prefix="cachediag-bench-watch-") as scratch:
        tree = Path(scratch) / "projects"
        started = time.perf_counter()
        files = build_tree(tree, opts.files, opts.recent)
        print(f"tree: {len(files)} transcripts in {tree} ({time.perf_counter() - started:.1f} s)")
        env = {**installed_env, "XDG_CACHE_HOME": f"{scratch}/cache"}
        cmd = [*command, "watch", "--json", str(tree)]
        spawned = time.time()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE)
        arrivals = Arrivals(proc)
        try:
            # Ready once a probe written to a new session is reported.
            probe = tree / "-home-bench-probe" / "probe.jsonl"
            probe.parent.mkdir()
            for n in range(200):
                with probe.open("ab") as fp:
                    fp.write(response_line(f"probe-{n}", "probe", 0))
                if arrivals.wait_for(f"probe-{n}", 0.25) is not None:
                    break
            else:
                sys.exit("the watch never reported the probe")
            print(f"ready (first event) {time.time() - spawned:.2f} s after spawn")

            time.sleep(2)  # let the first probe's work settle
            before, t0 = cpu_seconds(proc.pid), time.perf_counter()
            ns_before, switches_before = threads_cpu_and_wakeups(proc.pid)
            time.sleep(opts.idle_s)
            used, wall = cpu_seconds(proc.pid) - before, time.perf_counter() - t0
            ns_after, switches_after = threads_cpu_and_wakeups(proc.pid)
            precise = ns_after - ns_before
            print(
                f"idle over {wall:.1f} s with {opts.files} transcripts watched: "
                f"utime+stime {used * 1000:.0f} ms (10 ms ticks); "
                f"schedstat {precise * 1000:.1f} ms = {100 * precise / wall:.3f}% of one core; "
                f"{(switches_after - switches_before) / wall:.1f} wake-ups/s over all threads"
            )

            rng = random.Random(5)
            chosen = rng.sample(files, opts.sessions)
            first: list[float] = []
            later: list[float] = []
            reads: dict[Path, int] = {}
            for n in range(opts.appends):
                path = rng.choice(chosen)
                reads[path] = reads.get(path, 0) + 1
                message_id = f"bench-{n}"
                line = response_line(message_id, path.stem, 10_000 * reads[path])
                fd = os.open(path, os.O_WRONLY | os.O_APPEND)
                try:
                    written_at = time.time()
                    os.write(fd, line)
                finally:
                    os.close(fd)
                arrived = arrivals.wait_for(message_id, 10)
                if arrived is None:
                    sys.exit(f"no event for {message_id} within 10 s")
                (first if reads[path] == 1 else later).append((arrived - written_at) * 1000)
                time.sleep(rng.uniform(0.2, 0.5))
            for label, values in (("first append to a session", first), ("later appends", later)):
                if not values:
                    continue
                values.sort()
                p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
                median = statistics.median(values)
                print(
                    f"latency, {label} (n={len(values)}): median {median:.0f} ms,"
                    f" p95 {p95:.0f} ms, min {values[0]:.0f} ms, max {values[-1]:.0f} ms"
                )
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
            print(f"watch exited with status {proc.returncode} after SIGTERM")


if __name__ == "__main__":
    main()
