"""One messages request as the forwarder saw it, handed to the recorder.

Its own module so that the recorder and its worker process both name it without
importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Exchange:
    """What the forwarder saw of one messages request: raw bytes, never parsed there."""

    sent_at: float
    request_body: bytes = b""
    request_parts: list[bytes] = field(default_factory=list)
    """The body as the chunks it was relayed in (the forwarder never joins them); when
    given, they are the body and ``request_body`` is not read."""
    request_encoding: str = ""
    betas: str = ""
    """The ``anthropic-beta`` header as sent (names only reach the record)."""
    hints: dict[str, str] = field(default_factory=dict)
    first_byte_at: float | None = None
    done_at: float | None = None
    status: int | None = None
    request_id: str | None = None
    response_encoding: str = ""
    chunks: list[bytes] = field(default_factory=list)
    failure: str | None = None
    record_max_bytes: int = 32 << 20
    """The most of a body (as sent, and decoded) the record is built from."""
    request_over_cap: bool = False
    """The request body passed ``record_max_bytes``: forwarded whole, kept not at all."""
    response_over_cap: bool = False
    """The answer passed ``record_max_bytes``: relayed whole, kept not at all."""
