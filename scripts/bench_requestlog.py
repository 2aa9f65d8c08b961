"""Throughput of the capture reader on a generated ~100 MB claude-trace capture.

    python scripts/bench_requestlog.py [--mb 100] [--keep PATH]

Captures are large because every request repeats the conversation: the generator grows
one Claude Code-like main thread (system blocks, 8 tools, tool_use / tool_result turns
of ~1.5 kB) until the file reaches the size asked for, with a Haiku side call before
every main request and responses alternating JSON and SSE. It then times, separately,
reading + stream separation (``read_capture``) and the whole ``analyze --json`` command
in a subprocess, as a user runs it, and prints MB/s for each, by wall-clock and by CPU
time (the first moves with whatever else the machine is doing).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures" / "captures"))
sys.path.insert(0, str(ROOT))

import generate as gen  # noqa: E402  (fixtures/captures/generate.py)

sys.path.insert(0, str(ROOT / "scripts"))
from bench_analyze import add_install_option, installed  # noqa: E402  (one way to install what is timed)


def write_capture(path: Path, target_bytes: int) -> int:
    cap = gen.Capture()
    msgs: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>context</system-reminder>"},
                {"type": "text", "text": "Refactor the billing module."},
            ],
        }
    ]
    at, prev_total, size, k = gen.T0, 0, 0, 0
    filler = "x" * 1400
    with path.open("w") as out:
        while size < target_bytes:
            body = gen.base_body()
            body["messages"] = json.loads(json.dumps(msgs))
            body["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
            total = gen.PREFIX + 400 * len(msgs)
            use = gen.usage(prev_total, total - prev_total - 3) if k else gen.usage(0, total - 3)
            cap.records.clear()
            cap.side_calls(at)
            cap.call(at + 0.5, body, gen.message(f"msg_{k}", gen.OPUS, use))
            for record in cap.records:
                line = json.dumps(record) + "\n"
                out.write(line)
                size += len(line.encode())
            msgs.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"step {k} {filler}"},
                        {
                            "type": "tool_use",
                            "id": f"toolu_{k}",
                            "name": "Bash",
                            "input": {"arg": "make"},
                        },
                    ],
                }
            )
            msgs.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": filler}
                    ],
                }
            )
            prev_total, at, k = total, at + 15.0, k + 1
    return k


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--keep", type=Path, help="write the capture here and keep it")
    add_install_option(parser)
    args = parser.parse_args()
    path = args.keep or Path(tempfile.mkdtemp()) / "capture.jsonl"
    requests = write_capture(path, int(args.mb * 1e6))
    mb = path.stat().st_size / 1e6

    from cachediag.ingest.capture import read_capture

    start, cpu = time.perf_counter(), time.process_time()
    with path.open("rb") as fp:
        session = read_capture(fp, str(path), "bench")
    read_s, read_cpu = time.perf_counter() - start, time.process_time() - cpu
    main_requests = len(session.streams["main"].requests)
    assert main_requests == requests, (main_requests, requests)

    command, env = installed(args.install)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "analyze", "--json", "--now", "0", str(path)],
        env=env,
        capture_output=True,
        check=True,
    )
    cli_s = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cli_cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    misses = json.loads(done.stdout)["prompt_cache"]["misses"]
    print(f"capture: {mb:.1f} MB, {requests} main requests + {2 * requests} side calls")
    # Wall time moves with the machine's load; CPU time is what this code costs.
    print(
        f"read_capture: wall {read_s:.2f} s = {mb / read_s:.1f} MB/s; "
        f"cpu {read_cpu:.2f} s = {mb / read_cpu:.1f} MB/s"
    )
    print(
        f"analyze --json (subprocess): wall {cli_s:.2f} s = {mb / cli_s:.1f} MB/s; "
        f"cpu {cli_cpu:.2f} s = {mb / cli_cpu:.1f} MB/s; misses {misses}"
    )
    if args.keep is None:
        path.unlink()


if __name__ == "__main__":
    main()
