"""The capture log's files: private, whole lines only, no symlinks, old days pruned; and
the records they hold read back as any cachediag records."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.errors import CachediagError
from cachediag.ingest.records import read_records
from cachediag.proxy import logfiles
from cachediag.proxy.exchange import Exchange
from cachediag.proxy.logfiles import MARKER, CaptureLog, day_file_name, default_log_dir
from cachediag.proxy.recording import build_record
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
    assert [f.name for f in files] == [MARKER, "2025-11-30.jsonl", "2025-12-01.jsonl"]
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
    with pytest.raises(CachediagError, match="a symlink"):
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
    # The appends take turns (flock): no blank line, no broken record.
    lines = (tmp_path / day_file_name(NOON)).read_bytes().splitlines()
    assert len(lines) == 100 and set(lines) == {line}


def test_old_days_are_pruned(tmp_path: Path) -> None:
    log = CaptureLog(tmp_path / "caps", keep_days=30)  # created here: the proxy's own
    for day in (0, 20, 40):
        (log.folder / day_file_name(NOON - day * 86400)).write_text("")
    (log.folder / "notes.txt").write_text("not ours")
    assert log.prune(now=NOON) == [day_file_name(NOON - 40 * 86400)]
    log.close()
    assert sorted(p.name for p in log.folder.iterdir()) == sorted(
        [MARKER, day_file_name(NOON), day_file_name(NOON - 20 * 86400), "notes.txt"]
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


def _snapshot(folder: Path) -> tuple[int, int, list[str]]:
    st = folder.stat()
    return st.st_mode, st.st_uid, sorted(os.listdir(folder))


def test_a_shared_folder_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "2020-01-01.jsonl").write_text("somebody's\n")
    before = _snapshot(shared)
    with pytest.raises(CachediagError, match=r"mode 1777, not 0700.*nothing changed"):
        CaptureLog(shared)
    assert _snapshot(shared) == before
    lax = tmp_path / "lax"
    lax.mkdir()
    lax.chmod(0o755)
    with pytest.raises(CachediagError, match="mode 755"):
        CaptureLog(lax)
    assert lax.stat().st_mode & 0o7777 == 0o755 and not list(lax.iterdir())


def test_somebody_elses_folder_is_refused_without_a_traceback(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root could take it over: give it to somebody else
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
    else:  # a folder of root's, which this user cannot change anyway
        theirs = Path("/")
    before = _snapshot(theirs)
    with pytest.raises(CachediagError, match=r"owned by uid \d+, not by you"):
        CaptureLog(theirs)
    assert _snapshot(theirs) == before


def test_the_command_refuses_a_shared_log_dir_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    result = CliRunner().invoke(
        main, ["proxy", "--listen", "127.0.0.1:0", "--log-dir", str(shared)]
    )
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"Error: {shared}: mode 1777") and "Traceback" not in result.output
    assert shared.stat().st_mode & 0o7777 == 0o1777 and not list(shared.iterdir())


def test_a_new_folder_and_its_parents_are_created_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        CaptureLog(tmp_path / "a" / "b" / "caps", keep_days=0).close()
        os.umask(0o277)  # a umask that even takes the owner's write bit
        log = CaptureLog(tmp_path / "c", keep_days=0)
        log.append(b"{}", NOON)
        log.close()
    finally:
        os.umask(old)
    for folder in ("a", "a/b", "a/b/caps", "c"):
        assert (tmp_path / folder).stat().st_mode & 0o777 == 0o700, folder
    assert (tmp_path / "c" / day_file_name(NOON)).stat().st_mode & 0o777 == 0o600


def test_pruning_spares_what_the_proxy_did_not_write(tmp_path: Path) -> None:
    old = day_file_name(NOON - 400 * 86400)
    # A private folder of the user's that already held files: used, never pruned.
    mine = tmp_path / "journal"
    mine.mkdir(mode=0o700)
    (mine / "2020-01-01.jsonl").write_text("my own notes\n")
    log = CaptureLog(mine, keep_days=30)
    assert not log.owns_folder
    log.append(b"{}", NOON)
    assert log.prune(now=NOON) == []
    log.close()
    assert (mine / "2020-01-01.jsonl").read_text() == "my own notes\n"
    assert not (mine / MARKER).exists()
    # The proxy's own folder: only its exact names, regular files, never a link's target.
    log = CaptureLog(tmp_path / "caps", keep_days=30)
    folder = log.folder
    kept = ["2020-01-01.jsonl.bak", "2020-13-01.jsonl", "2020-02-30.jsonl", "x2020-01-01.jsonl",
            "\u0662020-01-01.jsonl", "2020-01-01.jsonl\n"]  # fmt: skip
    for name in [old, *kept]:
        (folder / name).write_text("x\n")
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("keep me\n")
    (folder / "2019-05-05.jsonl").symlink_to(target)
    (folder / "2019-05-06.jsonl").mkdir()
    assert log.prune(now=NOON) == [old]
    log.close()
    assert target.read_text() == "keep me\n"
    left = set(os.listdir(folder))
    assert left == {MARKER, *kept, "2019-05-05.jsonl", "2019-05-06.jsonl"}


def test_an_empty_folder_given_becomes_the_proxys(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o700)
    log = CaptureLog(empty, keep_days=30)
    assert log.owns_folder and (empty / MARKER).is_file()
    log.close()


def test_a_full_disk_writes_nothing_and_the_next_record_stands_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = CaptureLog(tmp_path / "caps", keep_days=0)
    log.append(b'{"at": 1}', NOON)
    path = log.folder / day_file_name(NOON)
    before = path.read_bytes()
    calls = []

    def full_disk(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 1:  # a short write, then no space at all
            return os.write(fd, data[:5])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(logfiles, "_write", full_disk)
    with pytest.raises(OSError) as failed:
        log.append(b'{"at": 2, "pad": "' + b"x" * 100 + b'"}', NOON)
    assert failed.value.errno == errno.ENOSPC and len(calls) == 2
    assert path.read_bytes() == before  # not half a record
    monkeypatch.setattr(logfiles, "_write", lambda fd, data: 0)  # a write that writes nothing
    with pytest.raises(OSError):
        log.append(b'{"at": 3}', NOON)
    assert path.read_bytes() == before
    monkeypatch.undo()
    log.append(b'{"at": 4}', NOON)
    log.close()
    assert path.read_bytes().splitlines() == [b'{"at": 1}', b'{"at": 4}']


def test_a_recorder_on_a_full_disk_counts_the_record_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cachediag.proxy.recording import Recorder

    def full_disk(fd: int, data: bytes) -> int:
        if len(data) < 100:  # the disk filled up part-way through the record
            raise OSError(errno.ENOSPC, "No space left on device")
        return os.write(fd, data[: len(data) // 2])

    log = CaptureLog(tmp_path / "caps", keep_days=0)
    recorder = Recorder(log, offload=False)
    monkeypatch.setattr(logfiles, "_write", full_disk)
    recorder.submit(exchange("m1", [{"role": "user", "content": "a"}], NOON))
    recorder.close()
    assert (recorder.written, recorder.failed) == (0, 1)
    assert (log.folder / day_file_name(NOON)).read_bytes() == b""


def test_a_torn_line_is_one_bad_line_between_whole_records(tmp_path: Path) -> None:
    turns = [{"role": "user", "content": "a"}]
    first = json.dumps(build_record(exchange("m1", turns, NOON))).encode()
    path = tmp_path / day_file_name(NOON)
    path.write_bytes(first + b"\n" + first[: len(first) // 2])  # a crash mid-record
    log = CaptureLog(tmp_path, keep_days=0)
    log.append(json.dumps(build_record(exchange("m2", turns, NOON + 5))).encode(), NOON)
    log.close()
    session = read_records(path.read_bytes().splitlines(keepends=True), str(path), "s")
    assert [r.message_id for r in session.streams["main"].requests] == ["m1", "m2"]
    assert [i.line for i in session.issues] == [2]


def test_a_hard_linked_day_file_is_not_written_into(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text("not a capture\n")
    other.chmod(0o644)
    folder = tmp_path / "caps"
    folder.mkdir(mode=0o700)
    os.link(other, folder / day_file_name(NOON))
    log = CaptureLog(folder, keep_days=0)
    with pytest.raises(CachediagError, match="hard link"):
        log.append(b"{}", NOON)
    log.close()
    assert other.read_text() == "not a capture\n" and other.stat().st_mode & 0o777 == 0o644


def test_without_locks_a_torn_record_stays_one_bad_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    turns = [{"role": "user", "content": "a"}]
    lines = [json.dumps(build_record(exchange(m, turns, NOON))).encode() for m in "abc"]
    log = CaptureLog(tmp_path, keep_days=0)
    log.append(lines[0], NOON)

    def fails_mid_record(fd: int, data: bytes) -> int:
        os.write(fd, data[:40])
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(logfiles, "_write", fails_mid_record)
    with pytest.raises(OSError):  # unlocked, it is not ours to cut back: left torn
        log.append(lines[1], NOON)
    monkeypatch.setattr(logfiles, "_write", os.write)
    log.append(lines[2], NOON)
    log.close()
    path = tmp_path / day_file_name(NOON)
    session = read_records(path.read_bytes().splitlines(keepends=True), str(path), "s")
    assert [r.message_id for r in session.streams["main"].requests] == ["a", "c"]
    assert [i.line for i in session.issues] == [2]


def test_day_names_are_exactly_real_dates_and_cheap_to_check(tmp_path: Path) -> None:
    import datetime
    import subprocess
    import sys

    from cachediag.proxy.logfiles import is_day_file_name

    for year in (1900, 2000, 2024, 2025, 2100):
        for month in range(14):
            for day in range(33):
                try:
                    real = datetime.date(year, month, day).isoformat() + ".jsonl"
                except ValueError:
                    real = None
                name = f"{year:04d}-{month:02d}-{day:02d}.jsonl"
                assert is_day_file_name(name) == (real == name), name
    (tmp_path / "2025-11-30.jsonl").write_text("")
    code = (
        "import sys; from pathlib import Path; from cachediag.proxy.logfiles import day_files;"
        f"assert day_files(Path({str(tmp_path)!r})); print('_strptime' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout == "False\n", out.stderr  # the status line lists these folders


def test_only_regular_day_files_are_listed_for_readers(tmp_path: Path) -> None:
    from cachediag.proxy.index import CaptureIndex
    from cachediag.proxy.logfiles import day_files

    log = CaptureLog(tmp_path / "caps", keep_days=0)
    log.append(json.dumps(build_record(exchange("m1", [], NOON))).encode(), NOON)
    log.close()
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps(build_record(exchange("m2", [], NOON))) + "\n")
    (log.folder / "2025-11-29.jsonl").symlink_to(elsewhere)
    os.mkfifo(log.folder / "2025-11-28.jsonl")
    assert day_files(log.folder) == [log.folder / day_file_name(NOON)]
    index = CaptureIndex(log.folder)
    assert index.refresh() == 1  # the FIFO is not opened (it would block), the link not read
