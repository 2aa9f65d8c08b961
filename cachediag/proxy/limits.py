"""The proxy's limits: what one connection or request may take of time and memory.

Declared here once: ``cachediag proxy`` builds its options (and their ``--help``
defaults) from ``LIMITS``, and ``ProxyConfig`` takes a ``Limits``. Each default is wide
enough for Claude Code's real traffic and narrow enough that a client (or a hostile page
the browser lets reach 127.0.0.1) cannot hold the proxy's connections or memory.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20


@dataclass(slots=True, frozen=True)
class Limits:
    header_timeout_s: float = 10.0
    """From a connection's first byte of a request head (or from the connection's start)
    to the whole head: a head that trickles in is cut off after this."""
    body_timeout_s: float = 60.0
    """How long a request body may go without a byte: then the upstream request is
    cancelled and the client answered 408 (one byte a second would hold both for ever)."""
    idle_timeout_s: float = 75.0
    """How long a kept-alive connection may wait, idle, for its next request."""
    max_body_bytes: int = 64 * MIB
    """The largest request body forwarded (413 above it). The Messages API takes 32 MB."""
    record_max_bytes: int = 32 * MIB
    """The most the recorder keeps of one request or answer, and the most it decompresses
    one to: a bigger request is forwarded whole but recorded without a fingerprint, a
    bigger answer without usage."""
    drain_s: float = 5.0
    """On SIGTERM or Ctrl-C, how long requests in flight may still finish; a second
    signal stops at once."""


@dataclass(slots=True, frozen=True)
class Option:
    field: str
    flag: str
    metavar: str
    help: str
    megabytes: bool = False
    """Shown and given in MiB (the field holds bytes)."""


LIMITS = (
    Option(
        "header_timeout_s", "--header-timeout", "S", "Seconds a request head may take to arrive."
    ),
    Option(
        "body_timeout_s",
        "--body-timeout",
        "S",
        "Seconds a request body may go without a byte (408 after).",
    ),
    Option(
        "idle_timeout_s", "--idle-timeout", "S", "Seconds an idle kept-alive connection stays open."
    ),
    Option(
        "max_body_bytes",
        "--max-body",
        "MIB",
        "Largest request body forwarded (413 above).",
        megabytes=True,
    ),
    Option(
        "record_max_bytes",
        "--record-max",
        "MIB",
        "Most the recorder keeps or decompresses of one request or answer.",
        megabytes=True,
    ),
    Option("drain_s", "--drain", "S", "Seconds requests in flight may finish after a stop signal."),
)
"""The command's limit options, in ``--help`` order."""


def default_of(option: Option) -> float | int:
    value: float | int = getattr(Limits(), option.field)
    return value // MIB if option.megabytes else value


def limits_from(values: dict[str, float | int]) -> Limits:
    """``Limits`` from the options' values, keyed by field name (MiB turned to bytes)."""
    fields: dict[str, float | int] = {}
    for option in LIMITS:
        if option.field in values:
            value = values[option.field]
            fields[option.field] = int(value * MIB) if option.megabytes else value
    return Limits(**fields)  # type: ignore[arg-type]
