"""What the proxy changes in the headers it relays, and why (RFC 9110 §7.6.1).

Hop-by-hop headers (``Connection``, the names it lists, ``Keep-Alive``, ``TE``,
``Trailer``, ``Transfer-Encoding``, ``Upgrade``, ``Proxy-*``) belong to one connection and
are not forwarded, and ``Host`` names the upstream. For ``POST /v1/messages`` only,
``Accept-Encoding`` is narrowed to the codings the recorder can undo, so the usage of a
compressed answer can still be read; the bytes the upstream sends are relayed as they are.
"""

from __future__ import annotations

from multidict import CIMultiDict, MultiMapping

from cachediag.proxy.recording import DECODABLE

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Content-Length stays: the body is streamed on as it comes, with the client's framing.
# Expect is answered by the proxy (``request_body``), so the upstream never waits on it.
NOT_FORWARDED = HOP_BY_HOP | {"host", "expect"}
# aiohttp adds these when absent; a transparent proxy sends only what the client sent.
NO_AUTO = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")


def end_to_end(source: MultiMapping[str], drop: frozenset[str]) -> CIMultiDict[str]:
    """Headers minus the hop-by-hop ones (and those ``Connection`` names), case and
    repeats kept."""
    listed = {
        token.strip().lower()
        for value in source.getall("Connection", [])
        for token in value.split(",")
    }
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in source.items():
        lower = name.lower()
        if lower not in drop and lower not in listed:
            out.add(name, value)
    return out


def narrowed_accept_encoding(value: str) -> str:
    """The client's ``Accept-Encoding`` without codings the recorder cannot read back."""
    kept = [
        part.strip()
        for part in value.split(",")
        if part.split(";", 1)[0].strip().lower() in (*DECODABLE, "identity")
    ]
    return ", ".join(kept) or "identity"
