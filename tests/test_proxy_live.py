"""The join for live readers: the status line and ``watch`` find each new request's
capture record by its time (a binary search of the day file), with no index to keep."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")

from cachediag.proxy.index import find_captured
from cachediag.proxy.logfiles import CaptureLog, day_file_name
from cachediag.statusline.fast import run
from tests.conftest import FIXTURES
from tests.proxy_support import replay_capture, transcript_of
from tests.test_proxy_replay import analyzed

NOON = 1764504000.0


def test_found_by_time_in_a_long_day_file(tmp_path: Path) -> None:
    log = CaptureLog(tmp_path, keep_days=0)
    for n in range(5000):
        fp = {"message_hashes": [f"{n:016x}"] * 20, "model": "m"}
        line = {"at": NOON + n * 10, "cache_creation_tokens": 0, "cache_read_tokens": n,
                "fingerprint": fp, "input_tokens": 1, "message_id": f"msg_{n}"}  # fmt: skip
        log.append(json.dumps(line, separators=(",", ":"), sort_keys=True).encode(), NOON)
    log.close()
    found = find_captured(tmp_path, "msg_3210", NOON + 32100 + 3)
    assert found is not None and found.fingerprint.message_hashes == (f"{3210:016x}",) * 20
    assert found.fingerprint.joined
    # Outside the window around the transcript's time the record is not looked for.
    assert find_captured(tmp_path, "msg_3210", NOON + 32100 + 5000) is None
    assert find_captured(tmp_path, "msg_none", NOON + 100) is None
    assert (tmp_path / day_file_name(NOON)).exists()


def test_a_fifo_named_like_a_day_file_is_never_waited_on(tmp_path: Path) -> None:
    """The status line looks a record up after every message: a FIFO (or any other
    non-regular file) under a day's name must be passed over, never opened blocking."""
    import os
    import threading

    os.mkfifo(tmp_path / day_file_name(NOON))
    found: list[object] = []
    looker = threading.Thread(
        target=lambda: found.append(find_captured(tmp_path, "msg_1", NOON)), daemon=True
    )
    looker.start()
    looker.join(30)
    hung = looker.is_alive()
    if hung:  # unblock the thread so the test run can end
        with open(tmp_path / day_file_name(NOON), "wb"):
            pass
    assert not hung and found == [None]


def test_the_status_line_names_what_only_the_captures_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    capture = FIXTURES / "captures" / "tools_changed.jsonl"
    main_ids = {r["message_id"] for r in analyzed(capture)["requests"]}
    transcript = tmp_path / "s.jsonl"
    lines = transcript_of(capture, main_ids)
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    payload = json.dumps({"session_id": "s", "transcript_path": str(transcript)}).encode()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

    def status() -> dict[str, object]:
        out = io.StringIO()
        run(["--json", "--now", "1764460900"], io.BytesIO(payload), out)
        pc = json.loads(out.getvalue())["prompt_cache"]
        assert isinstance(pc, dict)
        return pc

    before = status()["last_miss_cause"]
    assert before is None  # a read that fell to zero in 30 s: the transcript cannot tell
    # The transcript's times are the capture's; the replay stamps records with today's
    # clock, so shift them back to when the transcript says they were answered.
    folder = tmp_path / "state" / "cachediag" / "captures"
    asyncio.run(replay_capture(capture, tmp_path / "replayed"))
    answered = {line["message"]["id"]: line["timestamp"] for line in lines if "requestId" in line}
    shift_records(tmp_path / "replayed", folder, answered)
    (tmp_path / "cache").rename(tmp_path / "cache-old")  # a fresh state: read it all again
    after = status()["last_miss_cause"]
    assert after == {"causes": ["tools_changed"], "tools_added": 1, "tools_removed": 1}

    def line(*args: str) -> str:
        out = io.StringIO()
        # The cache alone (the default line now starts with the model and the cost).
        flags = ["--no-color", "--preset", "cache", "--now", "1764460900"]
        run([*flags, *args], io.BytesIO(payload), out)
        return out.getvalue().rstrip("\n")

    # The names the capture join gave the ledger (issue 12), as wide as the line allows.
    wide = line("--width", "120")
    assert wide.endswith("· last: tools_changed (+1: WebFetch; -1: LS)")
    assert line("--width", str(len(wide))) == wide
    narrow = line("--width", "80")  # too short for the names: the counts alone
    assert len(wide) == 83 and narrow.endswith("· last: tools_changed (+1/-1 tools)")
    out = io.StringIO()
    run(["--json", "--now", "1764460900"], io.BytesIO(payload), out)
    names = json.loads(out.getvalue())["cachediag"]["last_miss_cause"]
    assert names == {"tools_added_names": ["WebFetch"], "tools_removed_names": ["LS"]}


def shift_records(source: Path, dest: Path, answered: dict[str, str]) -> None:
    from datetime import datetime

    dest.mkdir(parents=True, mode=0o700)
    log = CaptureLog(dest, keep_days=0)
    for path in sorted(source.glob("*.jsonl")):
        for raw in path.read_text().splitlines():
            rec = json.loads(raw)
            stamp = answered.get(rec.get("message_id", ""))
            if stamp is None:
                continue
            at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            rec["at"] = rec["sent_at"] = rec["first_byte_at"] = at
            log.append(json.dumps(rec, separators=(",", ":"), sort_keys=True).encode(), at)
    log.close()
