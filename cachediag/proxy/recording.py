"""From one forwarded ``POST /v1/messages`` to one normalised record line, off the hot path.

The forwarder hands over the raw bytes it relayed (an ``Exchange``) once the client has
its last byte; a single recorder thread has them turned into a line (by the worker process
of ``worker``, or itself) and appends it. The record is
built by the capture reader itself (``ingest.capture.read_call``), so the proxy's lines
mean exactly what a claude-trace capture of the same call would. Kept: usage, ids, times,
status, the server's diagnostics, the fingerprint (hashes, names, counts, lengths) and
Claude Code's gateway hints. Never kept: prompt or response text, any other header value.
"""

from __future__ import annotations

import dataclasses
import queue
import sys
import threading
import zlib
from typing import Any

from cachediag.ingest.block_prints import canonical_json
from cachediag.ingest.capture import read_call
from cachediag.ingest.jsonl import BadLine, JsonObject, parse_line
from cachediag.jsonsafe import escape_json_utf8
from cachediag.model import Fingerprint, RequestRecord
from cachediag.proxy.exchange import Exchange
from cachediag.proxy.logfiles import CaptureLog
from cachediag.proxy.worker import LineWorker, WorkerGone

HINT_HEADERS = {
    "x-claude-code-request-class": "request_class",
    "x-claude-code-agent-type": "agent_type",
    "x-claude-code-compaction": "compaction",
    "x-claude-code-context-compacted": "context_compacted",
    "x-claude-code-prompt-id": "prompt_id",
}
"""Claude Code's optional gateway hints (``CLAUDE_CODE_GATEWAY_HINT_HEADERS=1``): the only
request header values a record keeps, as stream and compaction hints."""
HINT_MAX_CHARS = 128


class Failure:
    """Why a request has no usage; the values of a record's ``failure`` field."""

    HTTP_ERROR = "http_error"
    UNREACHABLE = "upstream_unreachable"
    CANCELLED = "cancelled"
    UPSTREAM_DROPPED = "upstream_dropped"
    NO_USAGE = "no_usage"
    OVER_LIMIT = "over_limit"
    """The answer was larger (decoded) than ``--record-max``: forwarded whole, not read."""


class OverCap(BadLine):
    """A body that decodes to more than the recorder's cap."""


def hint_value(raw: str) -> str:
    """A hint as stored: printable ASCII, bounded (it reaches terminals and reports)."""
    return "".join(c for c in raw[:HINT_MAX_CHARS] if " " <= c <= "~")


def decode_body(data: bytes, encoding: str, max_bytes: int | None = None) -> bytes:
    """The body behind a ``Content-Encoding``; ``BadLine`` when it cannot be undone,
    ``OverCap`` as soon as its decoded size would pass ``max_bytes`` (decoded in steps,
    so a small bomb never becomes a large buffer)."""
    cap = max_bytes if max_bytes is not None else 1 << 62
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
    if len(data) > cap:
        raise OverCap(f"body over {cap} bytes")
    for coding in reversed(codings):
        if coding == "identity":
            continue
        try:
            if coding in ("gzip", "x-gzip"):
                data = _inflate(data, 16 + zlib.MAX_WBITS, cap)
            elif coding == "deflate":
                try:
                    data = _inflate(data, zlib.MAX_WBITS, cap)
                except zlib.error:  # raw deflate, as some servers send it
                    data = _inflate(data, -zlib.MAX_WBITS, cap)
            elif coding == "br" and BROTLI is not None:
                data = _unbrotli(data, cap)
            else:
                raise BadLine(f"body encoded as {coding!r}, which cannot be decoded here")
        except BadLine:
            raise
        except (zlib.error, OSError, ValueError) as exc:
            raise BadLine(f"body encoded as {coding!r} does not decode") from exc
    return data


def _inflate(data: bytes, wbits: int, cap: int) -> bytes:
    inflater = zlib.decompressobj(wbits)
    out = inflater.decompress(data, cap + 1)
    if len(out) > cap or inflater.unconsumed_tail:
        raise OverCap(f"body decodes to over {cap} bytes")
    if not inflater.eof:
        raise zlib.error("truncated")
    return out


_BROTLI_STEP = 4096


def _unbrotli(data: bytes, cap: int) -> bytes:
    # Fed in small steps: brotli's decompressor has no output limit in every version.
    decompressor = BROTLI.Decompressor()
    out = bytearray()
    for at in range(0, len(data), _BROTLI_STEP):
        out += decompressor.process(data[at : at + _BROTLI_STEP])
        if len(out) > cap:
            raise OverCap(f"body decodes to over {cap} bytes")
    return bytes(out)


def _brotli() -> Any:
    try:
        import brotli  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            import brotlicffi as brotli  # type: ignore[import-not-found,unused-ignore,no-redef]
        except ImportError:
            return None
    return brotli


BROTLI = _brotli()
DECODABLE = ("gzip", "deflate", "br") if BROTLI is not None else ("gzip", "deflate")
"""Content codings the recorder can undo to read usage from a compressed response."""


NOT_MESSAGES = "request body is not a JSON Messages request"


def _request_body(ex: Exchange) -> tuple[JsonObject | None, str]:
    """The request body, or ``None`` and why not (the record's ``fingerprint_error``)."""
    over = f"request body over the recorder's limit ({ex.record_max_bytes} bytes)"
    if ex.request_over_cap:
        return None, over
    raw = b"".join(ex.request_parts) if ex.request_parts else ex.request_body
    try:
        body = parse_line(decode_body(raw, ex.request_encoding, ex.record_max_bytes))
    except OverCap:
        return None, over
    except BadLine:
        return None, NOT_MESSAGES
    if not isinstance(body.get("messages"), list):
        return None, NOT_MESSAGES
    return body, ""


def _response(ex: Exchange) -> JsonObject:
    if ex.response_over_cap:
        raise OverCap("answer over the recorder's limit")
    text = decode_body(b"".join(ex.chunks), ex.response_encoding, ex.record_max_bytes)
    response: JsonObject = {"status_code": ex.status, "timestamp": ex.done_at}
    if text.lstrip().startswith((b"event:", b"data:")):
        response["body_raw"] = text.decode("utf-8", "replace")
    else:
        response["body"] = parse_line(text)
    return response


_FINGERPRINT_FIELDS = tuple(f.name for f in dataclasses.fields(Fingerprint) if f.name != "joined")


def fingerprint_dict(fp: Fingerprint) -> JsonObject:
    """The record's ``fingerprint``: what the body showed (``joined`` is for readers).
    Tuples stay tuples (they serialise as arrays): ``asdict`` would deep-copy every hash."""
    out: JsonObject = {}
    for name in _FINGERPRINT_FIELDS:
        value = getattr(fp, name)
        if value is not None:
            out[name] = value
    return out


def build_record(ex: Exchange) -> JsonObject:
    """The record line of one exchange (``ingest.records`` reads it back)."""
    body, why_no_body = _request_body(ex)
    base: JsonObject = {"at": ex.done_at if ex.done_at is not None else ex.sent_at}
    base["sent_at"] = ex.sent_at
    if ex.first_byte_at is not None:
        base["first_byte_at"] = ex.first_byte_at
    if ex.status is not None:
        base["status"] = ex.status
    failure = ex.failure
    if failure is None and ex.status is not None and ex.status >= 400:
        failure = Failure.HTTP_ERROR
    record: RequestRecord | None = None
    if failure is None:
        capture = {
            "request": {
                "timestamp": ex.sent_at,
                "headers": {"anthropic-beta": ex.betas},
                # A body that is not a Messages request is still forwarded; its usage is
                # read, its fingerprint is not claimed.
                "body": body if body is not None else {"messages": []},
            },
        }
        try:
            capture["response"] = _response(ex)
            record = read_call(capture, 0).record
        except OverCap:
            failure = Failure.OVER_LIMIT
        except BadLine:
            failure = Failure.NO_USAGE
    if record is None:
        out: JsonObject = {**base, "failure": failure}
        if body is not None and isinstance(body.get("model"), str):
            out["model"] = body["model"]
    else:
        out = {**base, **_usage_fields(record)}
    if ex.request_id is not None:
        out["request_id"] = ex.request_id
    if body is None:
        out["fingerprint_error"] = why_no_body
    elif record is not None and record.fingerprint is not None:
        out["fingerprint"] = fingerprint_dict(record.fingerprint)
    else:
        from cachediag.ingest.fingerprint import betas_from_headers, fingerprint_request

        fp = fingerprint_request(body, betas_from_headers({"anthropic-beta": ex.betas}))
        out["fingerprint"] = fingerprint_dict(fp)
    if ex.hints:
        out["hints"] = {k: hint_value(v) for k, v in sorted(ex.hints.items())}
    return out


def _usage_fields(r: RequestRecord) -> JsonObject:
    out: JsonObject = {
        "input_tokens": r.input_tokens,
        "cache_read_tokens": r.cache_read_tokens,
        "cache_creation_tokens": r.cache_creation_tokens,
        "output_tokens": r.output_tokens,
        "ttl": r.ttl,
    }
    if r.cache_creation_5m_tokens is not None:
        out["cache_creation_5m"] = r.cache_creation_5m_tokens
    if r.cache_creation_1h_tokens is not None:
        out["cache_creation_1h"] = r.cache_creation_1h_tokens
    for key in ("model", "message_id"):
        value = getattr(r, key)
        if value is not None:
            out[key] = value
    if r.applied_edits:
        out["applied_edits"] = r.applied_edits
    if r.server_reason is not None:
        reason: JsonObject = {"type": r.server_reason.type}
        if r.server_reason.missed_tokens is not None:
            reason["missed_tokens"] = r.server_reason.missed_tokens
        out["server_reason"] = reason
    return out


def record_line(ex: Exchange) -> bytes:
    """One exchange as its log line (run in the recorder's worker process). The C1
    controls and U+2028/9 of a model name or id are written as ``\\u`` escapes, as in
    every JSON cachediag writes: ``tail -f`` of the day file must not send a CSI to the
    terminal. Only the line: the fingerprint's hashes are of ``canonical_json`` as is."""
    return escape_json_utf8(canonical_json(build_record(ex)))


class Recorder:
    """Turns exchanges into lines away from the event loop, which only enqueues.

    Parsing and fingerprinting a 200k-token request takes milliseconds of CPU; done in a
    thread of the proxy it would hold the interpreter lock while other streams wait to be
    relayed, so a worker process does it (``offload``), and this thread writes the lines
    in order. Should the worker die or fail to start, the thread builds the lines itself.
    """

    def __init__(self, log: CaptureLog, *, offload: bool = True) -> None:
        self.log = log
        self.written = 0
        self.failed = 0
        self.offloaded = 0
        """Lines the worker process built (the rest were built in this thread)."""
        self._worker = LineWorker() if offload else None
        self._queue: queue.SimpleQueue[Exchange | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="cachediag-recorder", daemon=True)
        self._thread.start()

    def submit(self, ex: Exchange) -> None:
        self._queue.put(ex)

    def close(self) -> None:
        """Write everything submitted so far, then stop."""
        self._queue.put(None)
        self._thread.join()
        if self._worker is not None:
            self._worker.close()
        self.log.close()

    def _line(self, ex: Exchange) -> bytes:
        if self._worker is not None:
            try:
                line = self._worker.line(ex)
            except WorkerGone:
                # A worker that died or could not start (a host script that spawns
                # processes unguarded): build here from now on; this record too.
                worker, self._worker = self._worker, None
                worker.close()
            else:
                if line is not None:
                    self.offloaded += 1
                    return line
                # It raised there: build it here, where the failure is reported.
        return record_line(ex)

    def _run(self) -> None:
        while (ex := self._queue.get()) is not None:
            try:
                self.log.append(self._line(ex), ex.done_at)
                self.written += 1
            except Exception as exc:  # a record lost must never stop the recorder
                self.failed += 1
                # The exception's type only: its message could quote a body.
                print(
                    f"cachediag proxy: a record was not written ({type(exc).__name__})",
                    file=sys.stderr,
                )
