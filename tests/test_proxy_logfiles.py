"""The capture log's files: private, whole lines only, no symlinks, old days pruned; and
the records they hold read back as any cachediag records."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.errors import CachediagError
from cachediag.ingest.records import read_records
from cachediag.proxy.logfiles import CaptureLog, day_file_name, default_log_dir
from cachediag.proxy.recording import Exchange, build_record
from tests.proxy_support import sse_events

NOON = 1764504000.0  # 2025-11-30T12:00:00Z


def test_default_dir_follows_xdg_state_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_log_dir() == tmp_path / "cachediag" / "captures"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_log_dir() == tmp_path / ".local" / "state" / "cachediag" / "captures"


def test_files_are_private_and_one_per_day(tmp_path: Path) -> None:
    folder = tmp_path / "caps"
    log = CaptureLog(folder, keep_days=0)  # 2025 is long past: keep it
    log.append(b'{"a": 1}', NOON)
    log.append(b'{"a": 2}', NOON + 86400)
    log.close()
    assert folder.stat().st_mode & 0o777 == 0o700
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == ["2025-11-30.jsonl", "2025-12-01.jsonl"]
    assert all(f.stat().st_mode & 0o777 == 0o600 for f in files)


def test_a_line_left_half_written_by_a_crash_costs_only_itself(tmp_path: Path) -> None:
    (tmp_path / day_file_name(NOON)).write_bytes(b'{"at": 1}\n{"at": 2, "inp')
    log = CaptureLog(tmp_path, keep_days=0)
    log.append(b'{"at": 3}', NOON)
    log.close()
    lines = (tmp_path / day_file_name(NOON)).read_bytes().splitlines()
    assert lines == [b'{"at": 1}', b'{"at": 2, "inp', b'{"at": 3}']


def test_never_writes_through_a_symlink(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text("")
    folder = tmp_path / "caps"
    folder.mkdir(mode=0o700)
    (folder / day_file_name(NOON)).symlink_to(elsewhere)
    log = CaptureLog(folder, keep_days=0)
    with pytest.raises(OSError):
        log.append(b"{}", NOON)
    log.close()
    assert elsewhere.read_text() == ""
    linked = tmp_path / "linked"
    linked.symlink_to(folder)
    with pytest.raises(CachediagError, match="symlink"):
        CaptureLog(linked)


def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    logs = [CaptureLog(tmp_path, keep_days=0) for _ in range(4)]  # as four proxies on one folder
    line = b'{"pad": "' + b"x" * 50_000 + b'"}'

    def write(log: CaptureLog) -> None:
        for _ in range(25):
            log.append(line, NOON)

    threads = [threading.Thread(target=write, args=(log,)) for log in logs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for log in logs:
        log.close()
    # A proxy opening the file while another's append is half-way sees no final newline
    # and adds one: at worst a blank line, which readers skip; never a broken record.
    lines = [x for x in (tmp_path / day_file_name(NOON)).read_bytes().splitlines() if x]
    assert len(lines) == 100 and set(lines) == {line}


def test_old_days_are_pruned(tmp_path: Path) -> None:
    for day in (0, 20, 40):
        (tmp_path / day_file_name(NOON - day * 86400)).write_text("")
    (tmp_path / "notes.txt").write_text("not ours")
    log = CaptureLog(tmp_path, keep_days=30)
    assert log.prune(now=NOON) == [day_file_name(NOON - 40 * 86400)]
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [day_file_name(NOON), day_file_name(NOON - 20 * 86400), "notes.txt"]
    )


def exchange(msg_id: str, messages: list[dict[str, str]], at: float) -> Exchange:
    body = {"model": "claude-opus-4-5", "system": "s", "messages": messages}
    ex = Exchange(sent_at=at, request_body=json.dumps(body).encode(), betas="x,y")
    ex.first_byte_at, ex.done_at, ex.status, ex.request_id = at + 0.5, at + 2, 200, f"req_{msg_id}"
    ex.chunks = sse_events(msg_id)
    return ex


def test_records_read_back_as_cachediag_records(tmp_path: Path) -> None:
    turns = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    log = CaptureLog(tmp_path, keep_days=0)
    for i, ex in enumerate(
        [
            exchange("m1", turns[:1], NOON),
            exchange("m2", [*turns, {"role": "user", "content": "c"}], NOON + 10),
        ]
    ):
        log.append(json.dumps(build_record(ex)).encode(), NOON + i)
    cancelled = Exchange(sent_at=NOON + 20, request_body=b"{}", failure="cancelled")
    log.append(json.dumps(build_record(cancelled)).encode(), NOON + 20)
    log.close()
    path = tmp_path / day_file_name(NOON)
    session = read_records(path.read_bytes().splitlines(keepends=True), str(path), "s")
    [main_stream] = session.streams.values()
    first, second = main_stream.requests
    assert (first.message_id, second.message_id) == ("m1", "m2")
    assert (second.at, second.request_id, second.cache_read_tokens) == (NOON + 12, "req_m2", 9000)
    assert second.fingerprint is not None and second.fingerprint.betas == ("x", "y")
    assert [i.reason for i in session.issues] == [
        "request cancelled by the client before the answer ended (no usage)"
    ]
    result = CliRunner().invoke(main, ["schema"])
    schema = json.loads(result.stdout)
    assert {"RequestIn", "FailedRequestIn", "EventIn"} <= set(schema["$defs"])
    assert "sent_at" in schema["$defs"]["RequestIn"]["properties"]


def test_the_join_reads_a_record_fingerprint_as_the_records_reader_does(tmp_path: Path) -> None:
    from cachediag.proxy.index import fingerprint_from_json

    turns = [{"role": "user", "content": [{"type": "text", "text": "a"}]}]
    line = build_record(exchange("m1", turns, NOON))
    session = read_records([json.dumps(line).encode() + b"\n"], "x", "s")
    [record] = session.streams["main"].requests
    joined = fingerprint_from_json(json.loads(json.dumps(line))["fingerprint"])
    assert record.fingerprint is not None and joined is not None
    assert joined == dataclasses.replace(record.fingerprint, joined=True)
