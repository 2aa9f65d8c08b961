"""The incremental reader of the status line and the watch on real-world changes
(issue 10): rewrites of any size, unreadable agent files, 1.0.x compactions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.follow.files import change_of
from cachediag.follow.live_session import LiveSession
from tests.conftest import RULES
from tests.statusline_support import T0, THREE, assistant, cache_home, run_line, write

__all__ = ["cache_home"]


def analyze_json(path: Path, now: float) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", str(now), str(path)])
    assert result.exit_code == 0, result.output
    loaded: dict[str, Any] = json.loads(result.stdout.splitlines()[0])
    return loaded


def status_json(path: Path, now: float) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        run_line({"transcript_path": str(path)}, "--json", "--now", str(now))
    )
    return loaded


# Eight requests, each a miss after a long pause, so that one changed usage anywhere
# changes the count the status line must show.
EIGHT = [assistant(n, T0 + 1000 * n, inp=10, read=0, write=20000 + n) for n in range(8)]


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_same_size_rewrite_is_seen(tmp_path: Path, cache_home: Path, where: str) -> None:
    """An in-place rewrite that keeps the length (a sanitiser, a restore of an older copy
    of the same size) restarts the count: the line agrees with analyze again."""
    t = tmp_path / "s1.jsonl"
    write(t, EIGHT)
    assert status_json(t, T0)["prompt_cache"]["misses"] == 7
    data = t.read_bytes()
    lines = data.splitlines(keepends=True)
    target = {"start": 1, "middle": 4, "end": 7}[where]
    # A hit now: the request reads what the previous one wrote (same number of digits).
    before = b'"cache_read_input_tokens": 0, "cache_creation_input_tokens": 2000%d' % target
    after = b'"cache_read_input_tokens": 2000%d, "cache_creation_input_tokens": 0' % (target - 1)
    after = after.ljust(len(before))
    assert before in lines[target]
    lines[target] = lines[target].replace(before, after)
    with t.open("r+b") as fp:  # in place: same inode, same size
        fp.write(b"".join(lines))
    assert t.stat().st_size == len(data)
    # A pause cannot be a hit after 1000 s... unless the TTL says 1h; what matters is
    # that the status line reads the file again and agrees with a full analysis.
    expected = analyze_json(t, T0)["prompt_cache"]
    assert status_json(t, T0)["prompt_cache"] == expected
    assert (expected["requests"], expected["misses"]) == (8, 6)


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_rewrite_then_append_is_seen_by_the_sampled_blocks(tmp_path: Path, where: str) -> None:
    """A rewrite of earlier bytes followed by an append: the file grew, so only the
    checksums can tell; a block inside the change is always sampled at the start, and
    an insertion shifts every block after it."""
    t = tmp_path / "s1.jsonl"
    write(t, EIGHT)
    live = LiveSession(str(t))
    live.read(str(t))
    saved = live.files[str(t)]
    data = t.read_bytes()
    at = {"start": 0, "middle": len(data) // 2, "end": len(data) - 40}[where]
    changed = data[:at] + b"X" + data[at:]  # one byte inserted
    t.write_bytes(changed + EIGHT[0].encode() + b"\n")
    assert change_of(str(t), saved) == "rewritten"


def test_append_is_not_a_rewrite(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, EIGHT[:4])
    live = LiveSession(str(t))
    live.read(str(t))
    write(t, EIGHT[4:], "a")
    assert change_of(str(t), live.files[str(t)]) is None


def session_with_two_agents(tmp_path: Path) -> tuple[Path, Path]:
    """A main transcript (3 requests) and two agent files (2 each); the agents' folder."""
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    agents = tmp_path / "s1" / "subagents"
    agents.mkdir(parents=True)
    write(agents / "agent-a1.jsonl", THREE[:2])
    write(agents / "agent-a2.jsonl", THREE[:2])
    return t, agents


def test_unreadable_subagent_costs_only_its_stream(tmp_path: Path, cache_home: Path) -> None:
    """Issue 10: one agent file that cannot be read leaves the main line and the other
    agents as they are; the file is named, and read once it can be."""
    if os.geteuid() == 0:
        pytest.skip("root reads a chmod 000 file")
    t, agents = session_with_two_agents(tmp_path)
    (agents / "agent-a2.jsonl").chmod(0)
    obj = status_json(t, T0 + 1000)
    assert obj["prompt_cache"]["requests"] == 3 and obj["cachediag"]["transcript"] == "read"
    assert obj["cachediag"]["subagents"]["streams"] >= 1
    assert obj["cachediag"]["unreadable_files"] == [str(agents / "agent-a2.jsonl")]
    assert "agent file not read" in (cache_home / "statusline.log").read_text()
    (agents / "agent-a2.jsonl").chmod(0o600)
    obj = status_json(t, T0 + 1000)
    assert obj["cachediag"]["unreadable_files"] == []
    assert obj["cachediag"]["subagents"]["requests"] == 4


def test_subagent_that_is_no_file_costs_only_its_stream(tmp_path: Path, cache_home: Path) -> None:
    """The same when the agent "file" cannot be read for another reason (here a FIFO:
    never opened blocking), as root too; once it is a file it is read."""
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    agents = tmp_path / "s1" / "subagents"
    agents.mkdir(parents=True)
    write(agents / "agent-a1.jsonl", THREE[:2])
    os.mkfifo(agents / "agent-a2.jsonl")
    obj = status_json(t, T0 + 1000)
    assert obj["prompt_cache"]["requests"] == 3
    assert obj["cachediag"]["subagents"]["requests"] == 2  # the FIFO is no transcript
    os.unlink(agents / "agent-a2.jsonl")
    write(agents / "agent-a2.jsonl", THREE[:2])
    obj = status_json(t, T0 + 1000)
    assert obj["cachediag"]["unreadable_files"] == []
    assert obj["cachediag"]["subagents"]["requests"] == 4


@pytest.mark.parametrize("name", ["compaction_1_0_expected", "compaction_1_0_past_ttl"])
def test_status_line_and_analyze_agree_on_a_1_0_compaction(
    tmp_path: Path, cache_home: Path, name: str
) -> None:
    """Issue 10: the 1.0.x compaction (a summary line, no boundary) is read by the
    incremental reader as by the batch one, whole or in pieces."""
    source = RULES / f"{name}.jsonl"
    expected = analyze_json(source, T0)["prompt_cache"]
    assert expected["expected_rebuilds"] == (1 if name.endswith("expected") else 0)
    t = tmp_path / "s.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    for n in range(1, len(lines) + 1):  # one line at a time, as Claude Code writes
        t.write_bytes(b"".join(lines[:n]))
        got = status_json(t, T0)["prompt_cache"]
    assert got == expected


def test_agent_file_failing_to_read_as_root_too(
    tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """chmod 000 does not stop root (CI runs as root): the same failure, simulated."""
    from cachediag.follow import live_session

    t, agents = session_with_two_agents(tmp_path)
    real_open = live_session.open_regular_fd

    def denied(path: str) -> int:
        if path.endswith("agent-a2.jsonl"):
            raise PermissionError(13, "Permission denied")
        return real_open(path)

    monkeypatch.setattr(live_session, "open_regular_fd", denied)
    obj = status_json(t, T0 + 1000)
    assert obj["prompt_cache"]["requests"] == 3
    assert obj["cachediag"]["subagents"]["requests"] == 2
    assert obj["cachediag"]["unreadable_files"] == [str(agents / "agent-a2.jsonl")]
    line = run_line({"transcript_path": str(t)}, "--no-color", "--now", str(T0 + 1000))
    assert "cache 32%" in line and "agents 1" in line
    monkeypatch.setattr(live_session, "open_regular_fd", real_open)
    os.utime(agents / "agent-a2.jsonl")  # changed: tried again
    obj = status_json(t, T0 + 1000)
    assert obj["cachediag"]["unreadable_files"] == []
    assert obj["cachediag"]["subagents"]["requests"] == 4
