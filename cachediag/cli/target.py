"""The request a command looks at: ``--request N``, ``--message-id ID`` and ``--stream ID``
(``explain``, ``prompt``), and the search for it in a session."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from cachediag.analysis.ledger import LedgerEntry
from cachediag.analysis.session_analysis import StreamAnalysis
from cachediag.errors import CachediagError

F = TypeVar("F", bound=Callable[..., Any])


def request_options(*, request_help: str, stream_help: str) -> Callable[[F], F]:
    """The three options, in this order in ``--help``; each command says what it shows."""

    def decorate(f: F) -> F:
        f = click.option(
            "--stream",
            "stream_id",
            metavar="ID",
            default="main",
            show_default=True,
            help=stream_help,
        )(f)
        f = click.option(
            "--message-id", metavar="ID", help="The request whose response has this id."
        )(f)
        return click.option(
            "--request", "index", type=click.IntRange(min=0), metavar="N", help=request_help
        )(f)

    return decorate


def one_way(index: int | None, message_id: str | None) -> None:
    """A usage error for both ways of naming the request at once (before any reading)."""
    if index is not None and message_id is not None:
        raise click.UsageError("give --request or --message-id, not both")


def find_request(
    streams: Sequence[StreamAnalysis],
    name: str,
    *,
    stream_id: str,
    index: int | None,
    message_id: str | None,
    default: Callable[[list[LedgerEntry]], int | None],
) -> tuple[StreamAnalysis, int | None]:
    """The stream and the position of the request asked for: by response id in any stream,
    else by ``index`` (or ``default``'s choice) in ``stream_id``. The position is ``None``
    when ``default`` finds none. ``name`` says where in the errors."""
    for stream in streams:
        if message_id is not None:
            hit = next((e for e in stream.entries if e.record.message_id == message_id), None)
            if hit is not None:
                return stream, hit.index
        elif stream.log.id == stream_id:
            pos = default(stream.entries) if index is None else index
            n = len(stream.entries)
            if pos is not None and not 0 <= pos < n:
                if not n:
                    raise CachediagError(f"stream {stream_id!r} of {name} has no requests")
                raise CachediagError(
                    f"stream {stream_id!r} has {n} requests (0-{n - 1}); no request {pos}"
                )
            return stream, pos
    what = f"message id {message_id!r}" if message_id else f"stream {stream_id!r}"
    raise CachediagError(f"{name}: no {what}")
