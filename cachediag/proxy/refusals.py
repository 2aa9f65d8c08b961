"""What the proxy refuses, before anything is sent on (RFC 9110/9112), and the answers of
its own.

Refused: a method no API uses (``CONNECT``, ``TRACE``, unknown ones: 501); a target not
in origin form (400: only ``/path?query`` is forwarded, to ``--upstream`` and nowhere
else, see ``target``); a transfer coding other than ``chunked`` (501: it cannot be
forwarded without undoing it); an expectation other than ``100-continue`` (417); a body
over the limit (413); a browser's request (403, see ``guard``). aiohttp (the
``cachediag[proxy]`` extra) makes the answers.
"""

from __future__ import annotations

from aiohttp import web

from cachediag.proxy.guard import browser_refusal
from cachediag.proxy.limits import Limits
from cachediag.proxy.target import Origin

FORWARDED_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""What an HTTP API is called with; anything else is a 501 (RFC 9110 9.1)."""


def error_body(message: str, kind: str = "api_error") -> bytes:
    """An error in the Anthropic API's own shape, so clients show it as they show theirs."""
    import json

    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def refusal(status: int, message: str, kind: str = "invalid_request_error") -> web.Response:
    """An answer of the proxy's own; the connection is closed after it, since the body the
    client may still be sending is not read."""
    response = web.Response(
        status=status, body=error_body(f"cachediag proxy: {message}", kind),
        content_type="application/json",
    )  # fmt: skip
    response.force_close()
    return response


def too_large(limits: Limits) -> web.Response:
    """The 413 of a body over ``max_body_bytes``, said as it is known or as it streams."""
    return refusal(413, f"request body over {limits.max_body_bytes} bytes", "request_too_large")


def transfer_codings(request: web.BaseRequest) -> list[str]:
    return [
        token.strip().lower()
        for value in request.headers.getall("Transfer-Encoding", [])
        for token in value.split(",")
        if token.strip()
    ]


def refused(request: web.BaseRequest, origin: Origin, limits: Limits) -> web.Response | None:
    """The answer to a request in origin form that is not forwarded; ``None`` for one
    that is (the target itself is checked first, by ``target``)."""
    if request.method not in FORWARDED_METHODS:
        # CONNECT would make the client library send the upstream's authority as target
        # (a tunnel); TRACE would echo the credentials; others are no API's.
        return refusal(501, f"the {request.method} method is not forwarded", "api_error")
    codings = transfer_codings(request)
    if codings and codings != ["chunked"]:
        # RFC 9112 6.1: a coding not understood is a 501; dropping it would send the
        # upstream a body it cannot read.
        return refusal(501, "only the chunked transfer coding is supported", "api_error")
    expect = request.headers.get("Expect")
    if expect is not None and expect.strip().lower() != "100-continue":
        return refusal(417, "the only expectation supported is 100-continue")
    if (request.content_length or 0) > limits.max_body_bytes:
        return too_large(limits)
    if (why := browser_refusal(request, origin)) is not None:
        return refusal(403, why, "permission_error")  # nothing forwarded, nothing recorded
    return None
