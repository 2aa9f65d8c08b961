"""``--request``/``--message-id``/``--stream``: one search for ``explain`` and ``prompt``."""

from __future__ import annotations

import pytest

from cachediag.analysis.ledger import LedgerEntry
from cachediag.analysis.session_analysis import SessionAnalysis, analyze_session
from cachediag.cli.target import find_request
from cachediag.errors import CachediagError
from cachediag.ingest.discover import discover
from cachediag.ingest.reader import read_session
from cachediag.model import MAIN_STREAM, StreamKind
from tests.conftest import SPOTTER_SESSION


def session() -> SessionAnalysis:
    (src,) = discover([SPOTTER_SESSION])
    return analyze_session(read_session(src), 0.0)


def last(entries: list[LedgerEntry]) -> int | None:
    return len(entries) - 1 if entries else None


def test_a_response_id_is_found_in_any_stream() -> None:
    a = session()
    sub = next(s for s in a.others if s.log.kind is StreamKind.SUBAGENT)
    wanted = sub.entries[3]
    stream, pos = find_request(
        a.streams,
        "x",
        stream_id=MAIN_STREAM,
        index=None,
        message_id=wanted.record.message_id,
        default=last,
    )
    assert (stream.log.id, pos) == (sub.log.id, wanted.index)


def test_the_default_or_the_index_in_the_stream_named() -> None:
    a = session()
    n = len(a.main.entries)
    args = {"stream_id": MAIN_STREAM, "message_id": None}
    assert find_request(a.streams, "x", index=None, default=last, **args)[1] == n - 1
    assert find_request(a.streams, "x", index=5, default=last, **args)[1] == 5
    assert find_request(a.streams, "x", index=None, default=lambda e: None, **args)[1] is None
    with pytest.raises(CachediagError, match=rf"has {n} requests \(0-{n - 1}\); no request {n}$"):
        find_request(a.streams, "x", index=n, default=last, **args)


def test_what_is_not_there_is_named() -> None:
    a = session()
    with pytest.raises(CachediagError, match=r"^log\.jsonl: no stream 'agent-x'$"):
        find_request(
            a.streams, "log.jsonl", stream_id="agent-x", index=None, message_id=None, default=last
        )
    with pytest.raises(CachediagError, match=r"^log\.jsonl: no message id 'msg_none'$"):
        find_request(
            a.streams,
            "log.jsonl",
            stream_id=MAIN_STREAM,
            index=None,
            message_id="msg_none",
            default=last,
        )
    empty = [s for s in a.streams if s.log.id == MAIN_STREAM]
    empty[0].entries.clear()
    with pytest.raises(CachediagError, match=r"^stream 'main' of log\.jsonl has no requests$"):
        find_request(
            empty, "log.jsonl", stream_id=MAIN_STREAM, index=0, message_id=None, default=last
        )
