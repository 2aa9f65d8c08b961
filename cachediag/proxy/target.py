"""Where a request goes: the upstream's origin, fixed once, and the one function that joins
a client's request target to it.

The proxy holds the user's credentials in every request, so the destination must not be
something a request can influence. ``Origin`` is parsed from ``--upstream`` once and keeps
scheme, host and port as separate fields; ``upstream_url`` builds the URL from those fields
plus a path and query that ``origin_form`` has checked character by character. Nothing is
concatenated and parsed again, so no target (an absolute URL, ``@``, ``//``, ``\\``, an
IDNA or full-width dot, a port, CR/LF) can move a request to another scheme, host or port:
the worst a target can do is name another path on the upstream, as any client can.

``redact_url`` is the one way a URL is shown (ready line, errors, 502 bodies): scheme, host,
port and path, never userinfo, query or fragment. Standard library plus yarl (which comes
with aiohttp, the ``cachediag[proxy]`` extra) only; no I/O.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

if TYPE_CHECKING:
    from yarl import URL

_PCHAR = r"A-Za-z0-9\-._~!$&'()*+,;=:@"
_PATH = re.compile(rf"(?:/(?:[{_PCHAR}]|%[0-9A-Fa-f]{{2}})*)+")
"""RFC 3986 ``absolute-path``: segments of pchar (unreserved, sub-delims, ``:``, ``@``,
percent-escapes with two hex digits), nothing else: no space, control, ``\\``, ``#``,
non-ASCII."""
_QUERY = re.compile(r"[!-\"$-~]*")
"""Visible ASCII but ``#``: stricter than that breaks clients that leave ``[]`` or ``|``
unescaped, and none of those characters can end the request line or name a host."""
_REG_NAME = re.compile(
    r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
)
_DOT_SEGMENT = re.compile(r"(?:\.|%2e){1,2}", re.IGNORECASE)


DEFAULT_PORTS = {"http": 80, "https": 443}


class BadTarget(ValueError):
    """A request target the proxy does not forward (answered 400)."""


class BadUpstream(ValueError):
    """An ``--upstream`` the proxy refuses; the message is safe to print (redacted)."""


@dataclass(slots=True, frozen=True)
class Origin:
    """Where every request goes: fixed at start, never derived from a request."""

    scheme: str
    """``http`` or ``https``."""
    host: str
    """Lower-case ASCII: a DNS name (IDNA-encoded), an IPv4 address, or an IPv6 address
    without brackets."""
    port: int | None
    """The port ``--upstream`` named, ``None`` for the scheme's default."""
    prefix: str = ""
    """The upstream's own path (``/gateway``), without a trailing ``/``; ``""`` for none."""

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{host}{port}{self.prefix}"


def redact_url(value: object) -> str:
    """A URL as it may be shown: scheme, host, port, path; userinfo, query and fragment
    dropped, anything unprintable replaced. Never raises."""
    try:
        parts = urlsplit(str(value))
        port = parts.port
        host = parts.hostname or ""
    except ValueError:
        return "<a URL that does not parse>"
    shown = f"[{host}]" if ":" in host else host
    netloc = f"{shown}:{port}" if port is not None else shown
    # A path with ``@`` may be the rest of a password (``user:PW/x@host``): not shown.
    path = "/..." if "@" in parts.path else parts.path
    text = f"{parts.scheme}://{netloc}{path}" if parts.scheme else path
    return "".join(c if " " < c <= "~" else "?" for c in text)


def parse_origin(value: object) -> Origin:
    """``--upstream`` as an ``Origin``; ``BadUpstream`` (with a redacted echo) when it is
    not a plain ``http(s)://host[:port][/path]``."""
    text = str(value)
    shown = redact_url(text)
    if any(not " " < c <= "~" for c in text):
        raise BadUpstream(f"--upstream {shown}: spaces, control or non-ASCII characters")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        # A fixed reason, never the exception's text: urllib quotes the piece it choked
        # on, which is the password of ``user:PW@host`` when PW is not a port.
        raise BadUpstream(
            f"--upstream {shown}: expected an http(s) URL (a port that is not a number, "
            "or brackets around something that is not an IPv6 address)"
        ) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise BadUpstream(f"--upstream {shown}: expected an http(s) URL")
    if parts.username is not None or parts.password is not None or "@" in text:
        # ``@`` anywhere: ``user:PW/x@host`` splits into host ``user`` and path ``/x@host``.
        raise BadUpstream(
            f"--upstream {shown}: has a user name or password; credentials belong in the "
            "client's headers (x-api-key, Authorization), which are forwarded as sent"
        )
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise BadUpstream(
            f"--upstream {shown}: has a query or fragment; a token in the URL belongs in "
            "the client's headers, which are forwarded as sent"
        )
    if port == 0:
        raise BadUpstream(f"--upstream {shown}: port 0 is not a port to connect to")
    scheme = parts.scheme.lower()
    if port == DEFAULT_PORTS[scheme]:
        port = None  # https://host:443 is https://host
    return Origin(scheme, _host(parts, shown), port, _prefix(parts.path, shown))


def _host(parts: SplitResult, shown: str) -> str:
    host = parts.hostname or ""
    if "[" in parts.netloc:
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise BadUpstream(f"--upstream {shown}: not an IPv6 address in [...]") from None
    if not _REG_NAME.fullmatch(host):
        raise BadUpstream(f"--upstream {shown}: not a host name or address")
    return host


def _prefix(path: str, shown: str) -> str:
    prefix = path.rstrip("/")
    if prefix and (not _PATH.fullmatch(prefix) or _has_dot_segment(prefix)):
        raise BadUpstream(f"--upstream {shown}: the path is not a plain /path")
    return prefix


def _has_dot_segment(path: str) -> bool:
    return any(_DOT_SEGMENT.fullmatch(segment) for segment in path.split("/"))


def origin_form(target: str) -> tuple[str, str]:
    """A request target as ``(path, query)`` when it is in origin form (``/path?query``,
    RFC 9112 §3.2.1); ``BadTarget`` for every other form (absolute, authority, ``*``) and
    for paths that are not plain: a character outside RFC 3986's, a ``.`` or ``..``
    segment (escaped or not: it would climb out of the upstream's prefix), or a leading
    ``//`` (read by some intermediaries as a host)."""
    path, sep, query = target.partition("?")
    if not path.startswith("/"):
        raise BadTarget("only origin-form request targets (/path?query) are forwarded")
    if path.startswith("//"):
        raise BadTarget("a request path may not start with //")
    if not _PATH.fullmatch(path) or (sep and not _QUERY.fullmatch(query)):
        raise BadTarget("the request target has characters a URL may not hold")
    if _has_dot_segment(path):
        raise BadTarget("the request path has a . or .. segment")
    return path, query


def upstream_url(origin: Origin, target: str) -> URL:
    """The URL a request for ``target`` is sent to: ``origin``'s scheme, host and port as
    they are, its prefix followed by the target's path, and the target's query, each
    exactly as written (no re-encoding); an empty query (a bare ``?``) is dropped, as
    yarl writes none. Built from fields, never from a joined string."""
    from yarl import URL

    path, query = origin_form(target)
    url = URL.build(
        scheme=origin.scheme,
        host=f"[{origin.host}]" if ":" in origin.host else origin.host,  # encoded form
        port=origin.port,
        path=origin.prefix + path,
        query_string=query,
        encoded=True,
    )
    # Cannot fail by construction; checked so that a change in yarl cannot make it.
    explicit = url.port if url.port != DEFAULT_PORTS[origin.scheme] else None
    if (url.scheme, url.raw_host, explicit) != (origin.scheme, origin.host, origin.port):
        raise BadTarget("the request target would change the upstream")
    return url
