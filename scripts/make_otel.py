"""Write a Claude Code OpenTelemetry export, as the Collector's file exporter would, from
a transcript or a request/response capture (the OTel reader's tests use it).

    python scripts/make_otel.py SESSION.jsonl > otel.jsonl
    python scripts/make_otel.py --capture CAPTURE.jsonl > otel.jsonl
    python scripts/make_otel.py --capture CAPTURE.jsonl --bodies-dir DIR > otel.jsonl

From a transcript: one ``claude_code.api_request`` event per request (``query_source``
``repl_main_thread`` for the main conversation, ``compact`` for compactions, the agent's
stream id for a subagent) and a ``claude_code.compaction`` event at each rebuild the
transcript announced; the 5m/1h split is dropped, as the real events have none. From a
capture: the same events (main thread by cachediag's own stream split) plus each
request's body, inline as ``claude_code.api_request_body`` events, or with
``--bodies-dir`` as the files ``OTEL_LOG_RAW_API_BODIES=file:<dir>`` writes (one
``<request_body_id>.json`` per body and an ``index.jsonl`` linking it to ``message.id``).

Records go out in batches of a few per line, with a metrics line now and then, as a
Collector does. Nothing here is needed at run time: it is a test and demo tool.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cachediag.ingest.capture import REQUEST_KEYS, _first, _request_parts, _response_message
from cachediag.ingest.discover import sessions_for_file
from cachediag.ingest.jsonl import iter_objects
from cachediag.ingest.reader import read_session
from cachediag.model import MAIN_STREAM, RebuildAnnounced, RequestRecord, SessionLog, StreamKind

BATCH = 4
RESOURCE = {
    "service.name": "claude-code",
    "service.version": "2.1.280",
    "host.name": "laptop-7",
    "host.arch": "amd64",
    "user.id": "4f1c0ffee",
    "user.email": "dev@example.com",
    "os.type": "linux",
}


def value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": value(v)} for k, v in d.items() if v is not None]


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def log_record(name: str, at: float, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "timeUnixNano": str(round(at * 1e9)),
        "observedTimeUnixNano": str(round(at * 1e9) + 1_000_000),
        "severityNumber": 9,
        "body": {"stringValue": f"claude_code.{name}"},
        "attributes": attrs({"event.name": name, "event.timestamp": iso(at), **fields}),
    }


def export_lines(records: list[dict[str, Any]]) -> Iterator[str]:
    for start in range(0, len(records), BATCH):
        batch = records[start : start + BATCH]
        yield json.dumps(
            {
                "resourceLogs": [
                    {
                        "resource": {"attributes": attrs(RESOURCE)},
                        "scopeLogs": [
                            {
                                "scope": {
                                    "name": "com.anthropic.claude_code.events",
                                    "version": RESOURCE["service.version"],
                                },
                                "logRecords": batch,
                            }
                        ],
                    }
                ]
            }
        )
        if (start // BATCH) % 5 == 4:
            yield json.dumps(metrics_line(batch[-1]["timeUnixNano"]))


def metrics_line(nanos: str) -> dict[str, Any]:
    point = {"timeUnixNano": nanos, "asDouble": 0.25, "attributes": attrs({"model": "x"})}
    metric = {
        "name": "claude_code.cost.usage",
        "unit": "USD",
        "sum": {"dataPoints": [point], "aggregationTemporality": 1, "isMonotonic": True},
    }
    return {
        "resourceMetrics": [
            {
                "resource": {"attributes": attrs(RESOURCE)},
                "scopeMetrics": [{"scope": {"name": "x"}, "metrics": [metric]}],
            }
        ]
    }


def request_fields(
    session_id: str, r: RequestRecord, query_source: str, seq: int
) -> dict[str, Any]:
    return {
        "session.id": session_id,
        "event.sequence": seq,
        "prompt.id": f"prompt-{seq // 7}",
        "model": r.model,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "cache_read_tokens": r.cache_read_tokens,
        "cache_creation_tokens": r.cache_creation_tokens,
        "cost_usd": 0.0,
        "duration_ms": 1500,
        "request_id": r.request_id,
        "message.id": r.message_id,
        "query_source": query_source,
        "speed": "normal",
    }


def query_source(stream_id: str, kind: StreamKind) -> str:
    if kind is StreamKind.MAIN:
        return "repl_main_thread"
    if kind is StreamKind.COMPACTION:
        return "compact"
    return stream_id


def from_session(log: SessionLog) -> list[dict[str, Any]]:
    items: list[tuple[float, int, str, dict[str, Any]]] = []
    order = 0
    for stream in log.streams.values():
        source = query_source(stream.id, stream.kind)
        for item in stream.items:
            order += 1
            if isinstance(item, RebuildAnnounced):
                if stream.id == MAIN_STREAM:
                    items.append(
                        (
                            item.at,
                            order,
                            "compaction",
                            {
                                "session.id": log.session_id,
                                "trigger": "auto",
                                "success": True,
                                "duration_ms": 20000,
                            },
                        )
                    )
                continue
            items.append(
                (item.at, order, "api_request", request_fields(log.session_id, item, source, 0))
            )
    items.sort(key=lambda t: (t[0], t[1]))
    out = []
    for seq, (at, _, name, fields) in enumerate(items):
        fields["event.sequence"] = seq
        out.append(log_record(name, at, fields))
    return out


def from_capture(path: Path, bodies_dir: Path | None) -> list[dict[str, Any]]:
    from cachediag.ingest.capture import read_capture

    with path.open("rb") as fp:
        log = read_capture(fp, str(path), path.stem)
    kinds = {r.message_id: (s.id, s.kind) for s in log.streams.values() for r in s.requests}
    bodies: dict[str, Any] = {}
    responses: dict[str, Any] = {}
    with path.open("rb") as fp:
        for _, obj in iter_objects(fp, str(path), []):
            try:
                _, body, _ = _request_parts(obj)
            except Exception:
                continue
            resp = _first(obj, ("response",))
            msg_id = _message_id(resp)
            if msg_id is not None and _first(obj, REQUEST_KEYS) is not None:
                bodies[msg_id] = body
            responses[msg_id] = _response_message(obj)
    out: list[dict[str, Any]] = []
    index: list[dict[str, Any]] = []
    seq = 0
    records = sorted((r for s in log.streams.values() for r in s.requests), key=lambda r: r.at)
    for r in records:
        if r.message_id is None or r.message_id not in kinds:
            continue
        stream_id, kind = kinds[r.message_id]
        body_id = f"body-{seq:05d}"
        fields = request_fields(log.session_id, r, query_source(stream_id, kind), seq)
        body = bodies.get(r.message_id)
        if body is not None and bodies_dir is None:
            out.append(
                log_record(
                    "api_request_body",
                    r.at - 1.0,
                    {
                        "session.id": log.session_id,
                        "request_body_id": body_id,
                        "request_id": r.request_id,
                        "message.id": r.message_id,
                        "body": json.dumps(body),
                    },
                )
            )
            out.append(
                log_record(
                    "api_response_body",
                    r.at,
                    {
                        "session.id": log.session_id,
                        "request_id": r.request_id,
                        "message.id": r.message_id,
                        "body": json.dumps(responses[r.message_id]),
                    },
                )
            )
        elif body is not None and bodies_dir is not None:
            (bodies_dir / f"{body_id}.json").write_text(json.dumps(body))
            index.append({"request_body_id": body_id, "message.id": r.message_id})
        out.append(log_record("api_request", r.at, fields))
        seq += 1
    if bodies_dir is not None:
        with (bodies_dir / "index.jsonl").open("w") as fp:
            fp.writelines(json.dumps(line) + "\n" for line in index)
    return out


def _message_id(resp: Any) -> str | None:
    if isinstance(resp, dict):
        body = resp.get("body")
        if isinstance(body, dict) and isinstance(body.get("id"), str):
            return str(body["id"])
        raw = resp.get("body_raw")
        if isinstance(raw, str):
            from cachediag.ingest.capture import parse_sse

            message, _ = parse_sse(raw)
            return message.get("id") if isinstance(message.get("id"), str) else None
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--capture", action="store_true", help="PATH is a capture")
    parser.add_argument("--bodies-dir", type=Path, help="write bodies as files here")
    args = parser.parse_args(argv)
    if args.capture:
        if args.bodies_dir is not None:
            args.bodies_dir.mkdir(parents=True, exist_ok=True)
        records = from_capture(args.path, args.bodies_dir)
    else:
        records = from_session(read_session(sessions_for_file(args.path)))
    for line in export_lines(records):
        sys.stdout.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
