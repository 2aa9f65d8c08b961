"""The recorder's worker process: the lines it builds from a body sent as chunks are the
lines the recorder would build itself, and a worker that dies costs no record."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from cachediag.proxy.exchange import Exchange
from cachediag.proxy.logfiles import CaptureLog
from cachediag.proxy.recording import Recorder, record_line
from cachediag.proxy.worker import LineWorker
from tests.proxy_support import records, sse_events

NOON = 1764590400.0


def exchange(msg_id: str, at: float) -> Exchange:
    body = json.dumps(
        {
            "model": "claude-opus-4-5",
            "system": [{"type": "text", "text": "system " * 2000}],
            "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": "turn " * 50_000}],
        }
    ).encode()
    # Cut as the forwarder relays it: pieces of whatever size arrived.
    parts = [body[i : i + 65_536] for i in range(0, len(body), 65_536)]
    ex = Exchange(sent_at=at, request_parts=parts, betas="b1")
    ex.first_byte_at, ex.done_at, ex.status, ex.request_id = at + 0.5, at + 2, 200, f"req_{msg_id}"
    ex.chunks = sse_events(msg_id)
    return ex


def test_worker_lines_equal_the_recorders_own() -> None:
    worker = LineWorker()
    try:
        for i in range(3):
            ex = exchange(f"msg_{i}", NOON + i)
            assert len(ex.request_parts) > 3
            line = worker.line(ex)
            assert line == record_line(ex) and b'"fingerprint":{' in line
    finally:
        worker.close()
    whole = exchange("msg_whole", NOON)
    joined = Exchange(
        sent_at=NOON,
        request_body=b"".join(whole.request_parts),
        betas="b1",
        first_byte_at=whole.first_byte_at,
        done_at=whole.done_at,
        status=200,
        request_id=whole.request_id,
        chunks=whole.chunks,
    )
    assert record_line(whole) == record_line(joined)


def test_a_dead_worker_costs_no_record(tmp_path: Path) -> None:
    recorder = Recorder(CaptureLog(tmp_path), offload=True)
    worker = recorder._worker
    assert worker is not None
    recorder.submit(exchange("msg_before", NOON))
    deadline = time.monotonic() + 60
    while recorder.written < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    pid = worker._proc.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    worker._proc.join(10)
    for i in range(3):
        recorder.submit(exchange(f"msg_after_{i}", NOON + 10 + i))
    recorder.close()
    assert (recorder.written, recorder.offloaded, recorder.failed) == (4, 1, 0)
    assert [r["message_id"] for r in records(tmp_path)] == [
        "msg_before",
        "msg_after_0",
        "msg_after_1",
        "msg_after_2",
    ]
