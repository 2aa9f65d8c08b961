"""The follower driven by a scripted source: what is new, resets, deletions, agents."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from cachediag.follow.source import run
from tests.statusline_support import T0, THREE, assistant, write
from tests.watch_support import Recorder, ScriptedSource, Step

# THREE (tests/statusline_support.py): msg_1 cold (writes 20000), msg_2 a hit (reads
# 20000 of a 20010-token prefix: 10 short < 2000), msg_3 after 940 s idle reads 0 of
# min(20510, 21010) = 20510: a miss, ttl_expired_5m, 20510 tokens re-processed.


def follow(recorder: Recorder, steps: list[Step]) -> None:
    stop = threading.Event()
    run(recorder.follower, ScriptedSource(steps, stop), stop)


def outcomes(recorder: Recorder) -> list[tuple[str, str]]:
    return [(d["message_id"], d["outcome"]) for d in recorder.dicts("request")]


def test_half_written_line_waits_for_its_newline(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    line2 = THREE[1] + "\n"
    recorder = Recorder(tmp_path)

    def first() -> list[Path]:
        t.write_text(THREE[0] + "\n" + line2[:100])
        return [t]

    def second() -> list[Path]:
        assert outcomes(recorder) == [("msg_1", "cold")]
        with t.open("a") as fp:
            fp.write(line2[100:])
        return [t]

    follow(recorder, [first, second])
    assert outcomes(recorder) == [("msg_1", "cold"), ("msg_2", "hit")]
    assert recorder.follower.issues == []


def test_only_new_requests_are_reported_but_judged_against_earlier_ones(tmp_path: Path) -> None:
    quiet, busy = tmp_path / "p" / "s1.jsonl", tmp_path / "p" / "s2.jsonl"
    quiet.parent.mkdir()
    write(quiet, THREE[:2])
    busy.write_text(THREE[0] + "\n" + THREE[1][:50])  # the second line is being written
    old = time.time() - 7200
    os.utime(quiet, (old, old))  # read when it wakes up, not at the start
    recorder = Recorder(tmp_path)

    def wake_both() -> list[Path]:
        write(quiet, THREE[2:], "a")
        with busy.open("a") as fp:
            fp.write(THREE[1][50:] + "\n")
        return [quiet, busy]

    follow(recorder, [wake_both])
    # s1: msg_3 is a miss, not a cold start: its predecessor msg_2 was read quietly.
    # s2: msg_2's line was completed after the start, so it is new.
    got = [(d["session_id"], d["message_id"], d["outcome"]) for d in recorder.dicts("request")]
    assert got == [("s1", "msg_3", "miss"), ("s2", "msg_2", "hit")]
    sessions = recorder.dicts("session")
    assert [(d["session_id"], d["new"]) for d in sessions] == [("s1", False), ("s2", False)]
    miss = recorder.dicts("request")[0]
    assert miss["causes"] == ["ttl_expired_5m"] and miss["reprocessed_tokens"] == 20510
    assert recorder.follower.issues == []


def test_from_start_reports_what_exists(tmp_path: Path) -> None:
    write(tmp_path / "s1.jsonl", THREE)
    recorder = Recorder(tmp_path, from_start=True)
    follow(recorder, [])
    assert outcomes(recorder) == [("msg_1", "cold"), ("msg_2", "hit"), ("msg_3", "miss")]


def test_truncated_file_is_read_again(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    fresh = assistant(4, T0 + 2000, inp=10, read=0, write=30000)
    recorder = Recorder(tmp_path)

    def grow() -> list[Path]:
        write(t, THREE[:2])
        return [t]

    def truncate() -> list[Path]:
        write(t, [fresh])  # shorter than what was read: a new log in the old file
        return [t]

    follow(recorder, [grow, truncate])
    resets = recorder.dicts("reset")
    assert [(d["path"], d["reason"]) for d in resets] == [(str(t), "truncated")]
    # The new content starts a new ledger: a cold start, not a miss against msg_2.
    assert outcomes(recorder) == [("msg_1", "cold"), ("msg_2", "hit"), ("msg_4", "cold")]


def test_replaced_file_reports_only_what_it_adds(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    recorder = Recorder(tmp_path)

    def grow() -> list[Path]:
        write(t, THREE[:2])
        return [t]

    def replace() -> list[Path]:
        tmp = tmp_path / "s1.jsonl.tmp"
        write(tmp, THREE)
        os.replace(tmp, t)  # an editor's save, or a copy put in place: a new inode
        return [t]

    follow(recorder, [grow, replace])
    assert [d["reason"] for d in recorder.dicts("reset")] == ["replaced"]
    assert outcomes(recorder) == [("msg_1", "cold"), ("msg_2", "hit"), ("msg_3", "miss")]


def test_rewritten_in_place_is_noticed(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    recorder = Recorder(tmp_path)

    def grow() -> list[Path]:
        write(t, THREE[:2])
        return [t]

    def rewrite() -> list[Path]:
        data = t.read_bytes()
        at = data.rindex(b'"output_tokens": 5')
        with t.open("r+b") as fp:  # same inode, same length, other bytes before the end
            fp.seek(at)
            fp.write(b'"output_tokens": 7')
        write(t, THREE[2:], "a")
        return [t]

    follow(recorder, [grow, rewrite])
    assert [d["reason"] for d in recorder.dicts("reset")] == ["rewritten"]
    assert outcomes(recorder) == [("msg_1", "cold"), ("msg_2", "hit"), ("msg_3", "miss")]


def test_deleted_file_is_reported_and_its_successor_followed(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    recorder = Recorder(tmp_path)

    def grow() -> list[Path]:
        write(t, THREE[:2])
        return [t]

    def delete() -> list[Path]:
        t.unlink(missing_ok=True)
        return [t]

    def recreate() -> list[Path]:
        write(t, THREE)
        return [t]

    follow(recorder, [grow, delete, delete, recreate])
    assert [d["path"] for d in recorder.dicts("removed")] == [str(t)]
    # Whether the new file got a new inode or the old one, msg_3 comes once, as a miss.
    assert outcomes(recorder) == [("msg_1", "cold"), ("msg_2", "hit"), ("msg_3", "miss")]
    assert [s.requests for s in recorder.follower.summaries()] == [3]


def test_new_subagent_files_are_followed(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    t = project / "s1.jsonl"
    agents = project / "s1" / "subagents"
    recorder = Recorder(tmp_path)

    def grow() -> list[Path]:
        write(t, THREE[:1])
        return [t]

    def new_agent() -> list[Path]:
        agents.mkdir(parents=True)
        write(agents / "agent-abc.jsonl", [assistant(9, T0 + 5, inp=3, read=0, write=4000)])
        return [agents.parent]  # the folder's creation is all a watcher may have seen

    def old_layout_agent() -> list[Path]:
        # Claude Code 2.0 wrote agent files beside the sessions; the lines name theirs.
        write(project / "agent-old.jsonl", [assistant(8, T0 + 6, inp=3, read=0, write=3000)])
        return [project / "agent-old.jsonl"]

    follow(recorder, [grow, new_agent, old_layout_agent])
    streams = [(d["stream"], d["stream_kind"], d["source"]) for d in recorder.dicts("stream")]
    assert streams == [
        ("agent-abc", "subagent", str(agents / "agent-abc.jsonl")),
        ("agent-old", "subagent", str(project / "agent-old.jsonl")),
    ]
    got = [(d["stream"], d["message_id"], d["outcome"]) for d in recorder.dicts("request")]
    assert got == [
        ("main", "msg_1", "cold"),
        ("agent-abc", "msg_9", "cold"),
        ("agent-old", "msg_8", "cold"),
    ]
    assert {d["session_id"] for d in recorder.dicts("request")} == {"s1"}


def test_compaction_is_reported_and_the_rebuild_after_it_expected(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    boundary = (
        '{"type":"system","subtype":"compact_boundary","uuid":"b1","sessionId":"s1",'
        '"timestamp":"2026-02-02T02:41:10Z"}'
    )
    recorder = Recorder(tmp_path)

    def grow() -> list[Path]:
        write(t, THREE[:2])
        return [t]

    def compact() -> list[Path]:
        # T0 = 02:40:00 UTC; the boundary at T0 + 70, then a rebuild at T0 + 80 that
        # reads 0 of min(20510, 25010): 20510 re-processed, within the 5m TTL.
        write(t, [boundary, assistant(5, T0 + 80, inp=10, read=0, write=25000)], "a")
        return [t]

    follow(recorder, [grow, compact])
    assert [(d["stream"], d["kind"]) for d in recorder.dicts("rebuild")] == [("main", "compaction")]
    last = recorder.dicts("request")[-1]
    assert (last["outcome"], last["announced"], last["reprocessed_tokens"]) == (
        "expected",
        "compaction",
        20510,
    )


def test_other_logs_in_the_tree_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "notes.jsonl").write_text('{"foo": 1}\n')
    write(tmp_path / "s1.jsonl", THREE[:1])
    recorder = Recorder(tmp_path, from_start=True)
    follow(recorder, [lambda: [tmp_path / "notes.jsonl"]])
    assert outcomes(recorder) == [("msg_1", "cold")]
    [issue] = recorder.follower.issues
    assert (issue.source, issue.line) == (str(tmp_path / "notes.jsonl"), 0)


def test_bad_line_is_counted_with_its_place(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, [THREE[0], '{"type":"assistant","message":{"id":"x"}}', THREE[1]])
    recorder = Recorder(tmp_path, from_start=True)
    follow(recorder, [])
    assert outcomes(recorder) == [("msg_1", "cold"), ("msg_2", "hit")]
    assert [(i.source, i.line) for i in recorder.follower.issues] == [(str(t), 2)]


def test_a_transcript_named_alone_is_followed_with_its_agents_only(tmp_path: Path) -> None:
    t, other = tmp_path / "s1.jsonl", tmp_path / "s2.jsonl"
    t.touch()
    recorder = Recorder(t)
    agents = tmp_path / "s1" / "subagents"

    def grow() -> list[Path]:
        write(t, THREE[:1])
        write(other, THREE[:1])
        agents.mkdir(parents=True)
        write(agents / "agent-a.jsonl", THREE[:1])
        return [t, other, agents / "agent-a.jsonl"]

    follow(recorder, [grow])
    assert [(d["session_id"], d["stream"]) for d in recorder.dicts("request")] == [
        ("s1", "main"),
        ("s1", "agent-a"),
    ]


def test_a_session_folder_means_its_transcript_beside_it(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE[:1])
    (tmp_path / "s1" / "subagents").mkdir(parents=True)
    write(tmp_path / "s1" / "subagents" / "agent-a.jsonl", THREE[:1])
    write(tmp_path / "s2.jsonl", THREE[:1])
    recorder = Recorder(tmp_path / "s1", from_start=True)
    follow(recorder, [])
    assert [(d["session_id"], d["stream"]) for d in recorder.dicts("request")] == [
        ("s1", "main"),
        ("s1", "agent-a"),
    ]
