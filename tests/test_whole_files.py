"""A small file is read whole in one call, and a session of one file by a short path:
both must read exactly as a streamed file through the general path does."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cachediag.errors import NotALogError
from cachediag.ingest import files, lines, reader, sniff
from cachediag.ingest.discover import discover
from cachediag.ingest.reader import read_sessions
from cachediag.model import SessionLog

from .conftest import FIXTURES


def _read_tree(root: Path, whole: bool, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every session under ``root`` as a comparable value: read whole, a session of one
    file by its own short path, or streamed, every session by the general path."""
    monkeypatch.setattr(sniff, "SMALL_FILE_BYTES", 1 << 20 if whole else -1)
    if not whole:
        monkeypatch.setattr(
            reader,
            "_read_lone_transcript",
            lambda src, _path, claimed, _found: reader._read_transcript_session(src, claimed),
        )
    out: list[object] = []
    claimed: reader.Claims = {}
    for src in discover([root], lambda issue: out.append(issue)):
        try:
            out.extend(read_sessions(src, claimed))  # dataclasses: compared field by field
        except NotALogError as exc:
            out.append(str(exc))
    return out


@pytest.mark.parametrize(
    "folder", sorted(p.name for p in FIXTURES.iterdir() if any(p.rglob("*.jsonl")))
)
def test_every_fixture_reads_the_same_whole_or_streamed(
    folder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = FIXTURES / folder
    whole = _read_tree(root, True, monkeypatch)
    assert whole == _read_tree(root, False, monkeypatch)
    assert whole  # the folder held something to compare


def test_the_corpus_reads_the_same_whole_or_streamed(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = corpus / "claude-code"
    assert _read_tree(root, True, monkeypatch) == _read_tree(root, False, monkeypatch)


def _line(i: int) -> bytes:
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": "s",
            "uuid": f"u{i}",
            "timestamp": f"2026-01-01T00:00:{i % 60:02d}Z",
            "message": {
                "id": f"m{i}",
                "model": "claude-sonnet-4-5",
                "usage": {"input_tokens": i, "output_tokens": 1},
            },
        }
    ).encode()


_PIECES = st.sampled_from(
    [
        *(b"", b"   ", b"\r", b"{", b"}", b"[1]", b"\x00", b"\xef\xbb\xbf", b"not json"),
        *(b"event: x", b'data: {"type":"message_start"}', b'"version":"', b'{"version":"2'),
        b'{"type":"user","sessionId":"s","uuid":"a","version":"1.0.9","isSidechain": true}',
        b'{"type":"user","sessionId":"s","uuid":"b","version":"2.1.3","isSidechain":true}',
        b'{"type":"user","sessionId":"s","uuid":"c","parentUuid":null,"isCompactSummary":true}',
        b'{"type":"system","subtype":"compact_boundary","uuid":"d","version":"x"}',
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(
        st.one_of(st.integers(0, 99).map(_line), _PIECES, st.binary(max_size=12)),
        max_size=30,
    ),
    final_newline=st.booleans(),
)
def test_any_file_reads_the_same_whole_or_streamed(
    parts: list[bytes], final_newline: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Bad lines, blank ones, a missing last newline, a byte order mark, binary data, an
    event stream or no log at all: the same records, issues and errors either way."""
    folder = tmp_path_factory.mktemp("whole") / "project"
    folder.mkdir()
    data = b"\n".join(parts) + (b"\n" if final_newline else b"")
    (folder / "0b1c2d3e-0000-4000-8000-000000000001.jsonl").write_bytes(data)
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _read_tree(folder, True, monkeypatch) == _read_tree(folder, False, monkeypatch)


def test_a_file_that_grew_after_the_walk_is_read_to_its_end(tmp_path: Path) -> None:
    """The walk's size says how much to read; more found there is streamed, not cut."""
    path = tmp_path / "project" / "0b1c2d3e-0000-4000-8000-000000000002.jsonl"
    path.parent.mkdir()
    path.write_bytes(_line(1) + b"\n")
    (src,) = discover([tmp_path])
    with path.open("ab") as fp:
        fp.write(b"".join(_line(i) + b"\n" for i in range(2, 40)))
    (log,) = read_sessions(src)
    assert len(log.streams["main"].items) == 39


def test_a_capture_read_whole_is_the_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    root = FIXTURES / "captures"
    logs = _read_tree(root, True, monkeypatch)
    assert any(isinstance(log, SessionLog) and log.format != "claude-code" for log in logs)


def test_a_read_that_fails_half_way_reads_as_the_general_path_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk error after the first lines: the file is unreadable, its conversation not
    known, by the short path as by the general one."""
    path = tmp_path / "project" / "0b1c2d3e-0000-4000-8000-000000000003.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(_line(i) + b"\n" for i in range(40)))
    (src,) = discover([tmp_path])

    def failing(*_: object, **__: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(sniff, "SMALL_FILE_BYTES", -1)
    monkeypatch.setattr(lines, "scan_lines", failing)
    (short,) = read_sessions(src)
    general = reader._read_transcript_session(src, None)
    assert short == general
    assert short.unreadable and not short.main_present and short.main_unreadable


class _Pieces(io.RawIOBase):
    """A file as a kernel may serve it: at most ``piece`` bytes a read, and a bad block
    at ``bad`` (the read reaching it comes back short, the next one fails)."""

    def __init__(self, data: bytes, piece: int, bad: int | None = None) -> None:
        self.data, self.piece, self.bad, self.pos = data, piece, bad, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = pos
        return pos

    def readinto(self, buffer: Any) -> int:
        end = len(self.data) if self.bad is None else self.bad
        if self.pos >= end and self.pos < len(self.data):
            raise OSError(5, "Input/output error")
        n = max(0, min(len(buffer), self.piece, end - self.pos))
        buffer[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


@pytest.mark.parametrize("bad", [None, 20_000])
def test_a_file_served_in_pieces_reads_as_a_stream_does(
    bad: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Short reads (a filesystem answering in pieces) are read on; a disk error part-way
    makes the file unreadable, as the buffered reader reports it, not a cut-off file.
    (Streamed, the lines before the error were read too; held whole, nothing of such a
    file is: either way the session of that one file gives no result.)"""
    path = tmp_path / "project" / "0b1c2d3e-0000-4000-8000-000000000004.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(_line(i) + b"\n" for i in range(300)))
    content = path.read_bytes()
    (src,) = discover([tmp_path])
    real_open = files.open_regular

    def served(name: str, **kw: Any) -> Any:
        # Every file a reader finds is opened by ingest.files (regular files only).
        if Path(name) != path:
            return real_open(name, **kw)
        return io.BufferedReader(_Pieces(content, 4096, bad))

    monkeypatch.setattr(files, "open_regular", served)
    reads: dict[bool, SessionLog] = {}
    for held_whole in (True, False):
        monkeypatch.setattr(sniff, "SMALL_FILE_BYTES", 1 << 20 if held_whole else -1)
        (reads[held_whole],) = read_sessions(src)
    whole, streamed = reads[True], reads[False]
    if bad is None:
        assert whole == streamed
        assert len(whole.streams["main"].items) == 300 and not whole.issues
    else:
        assert whole.unreadable == streamed.unreadable != []
        assert whole.main_unreadable and streamed.main_unreadable
        assert whole.issues == [] and whole.streams["main"].items == []


def test_a_uuid_named_file_in_a_subagents_folder_is_an_agent_of_its_session(
    tmp_path: Path,
) -> None:
    """<session>/subagents/<file>.jsonl, the session folder named on its own: the file is
    a stream of that session, whatever its name (the one-step path is for main files)."""
    session = tmp_path / "0b1c2d3e-0000-4000-8000-000000000005"
    (session / "subagents").mkdir(parents=True)
    (session / "0b1c2d3e-0000-4000-8000-000000000006.jsonl").write_bytes(_line(1) + b"\n")
    agent = session / "subagents" / "0b1c2d3e-0000-4000-8000-000000000007.jsonl"
    agent.write_bytes(_line(2) + b"\n")
    found = {src.session_id: src for src in discover([session])}
    assert sorted(found) == [session.name, "0b1c2d3e-0000-4000-8000-000000000006"]
    assert [a.path for a in found[session.name].agents] == [agent]
