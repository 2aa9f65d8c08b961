#!/usr/bin/env python3
"""Benchmark ``cachediag statusline`` against ``ccusage statusline`` (issue 3).

Builds a ~100 MB Claude Code transcript from the corpus, then times whole processes
(spawn to exit, warm page cache), median of N runs, in one run side by side:

- warm: transcript unchanged since the previous run (both tools' caches valid);
- append: one more response appended before each run;
- cold: first run on the transcript (cachediag: no state file; ccusage: no cache).

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
CORPUS_DIRS = [ROOT.parent / "shared" / "corpus" / "claude-code" / "spotter", ROOT / "fixtures" / "real" / "spotter"]
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
            stamps = [datetime.fromisoformat(o["timestamp"].replace("Z", "+00:00"))
                      for o in objs if isinstance(o.get("timestamp"), str)]
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
