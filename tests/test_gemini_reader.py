"""Gemini CLI chats read into normalised records, and the Gemini ledger's causes.

tests/data/gemini_home is what Gemini CLI 0.61.0 wrote against tests/real_agents' fake
(tests/real_agents/gemini_scenario.py: a flash turn with a tool call in yolo mode, flash,
pro twice, a GEMINI.md change, an MCP server added, a pause past the fake's 8 s retention
into a new minute), with the temporary folder renamed /home/dev. The CLI wrote three
files for the one session: the resumes in a new minute left only a header and the session
context in a file of their own and appended everything else to the first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachediag.analysis.gemini_cache import analyze_gemini_session, minimum_tokens
from cachediag.ingest.gemini import GeminiRequest, read_chat_lines
from cachediag.ingest.gemini_files import (
    chat_files,
    gemini_base,
    read_chat,
    read_gemini_home,
)
from cachediag.model import RebuildAnnounced

HOME = Path(__file__).parent / "data" / "gemini_home"
CHAT = sorted((HOME / ".gemini/tmp/work/chats").glob("*.jsonl"))[0]


def _lines() -> list[bytes]:
    return CHAT.read_bytes().splitlines()


def _requests(log: object) -> list[GeminiRequest]:
    from cachediag.model import SessionLog

    assert isinstance(log, SessionLog)
    out = log.streams["main"].requests
    assert all(isinstance(r, GeminiRequest) for r in out)
    return out  # type: ignore[return-value]


def test_one_request_per_gemini_message_with_its_tokens() -> None:
    [log] = read_gemini_home(HOME)
    reqs = _requests(log)
    # Resumes rewrite the history in $set.messages (later ones with tokens): none is
    # counted again, nor the tool-call message written again once its call was done.
    assert len(reqs) == 8
    assert log.issues == []
    assert log.session_id == "76b3096b-142e-43b8-879b-1a14c6e51636"
    assert log.cwd == "/home/dev/work" and log.project == "work"
    raw = [json.loads(x) for x in _lines()]
    firsts = list({o["id"]: o for o in reversed(raw) if o.get("type") == "gemini"}.values())
    firsts.sort(key=lambda o: o["timestamp"])
    for rec, obj in zip(reqs, firsts, strict=True):
        t = obj["tokens"]
        assert rec.cache_read_tokens == t["cached"]
        assert rec.input_tokens + rec.cache_read_tokens == t["input"] + t["tool"]
        assert rec.output_tokens == t["output"] + t["thoughts"]
        assert rec.thoughts_tokens == t["thoughts"]
        assert rec.model == obj["model"] and rec.message_id == obj["id"]
        assert rec.cache_creation_tokens == 0
    assert [r.model for r in reqs] == ["gemini-2.5-flash"] * 3 + ["gemini-2.5-pro"] * 5


def test_causes_named_only_from_what_the_file_holds() -> None:
    [log] = read_gemini_home(HOME)
    analysis = analyze_gemini_session(log, now=2e9, retention_s=8.0)
    got = [
        (e.outcome.value, e.diagnosis.causes[0].value if e.diagnosis else None)
        for e in analysis.main.entries
    ]
    assert got == [
        ("cold", None),
        ("hit", None),  # the tool call's answer, in the same process
        # The resume resends the tool response twice (its own <id>_response beside the
        # stored one); yolo's tools and system instruction left too, unseen in the file.
        ("miss", "messages_rewritten"),
        ("miss", "model_changed"),
        ("hit", None),
        ("miss", "system_prompt_changed"),  # GEMINI.md, in the first user content
        ("miss", "unknown"),  # an MCP server added: tools are not in the file
        ("miss", "ttl_expired_5m"),  # 61 s pause past the fake's 8 s
    ]


def test_default_retention_does_not_call_a_short_pause_expired() -> None:
    [log] = read_gemini_home(HOME)
    last = analyze_gemini_session(log, now=2e9).main.entries[-1]
    assert last.diagnosis is not None and last.diagnosis.causes[0].value == "unknown"


def test_a_resume_in_a_new_minute_is_the_same_session(tmp_path: Path) -> None:
    lines = _lines()
    heads = [i for i, x in enumerate(lines) if json.loads(x).get("startTime")]
    cut = heads[2]
    chats = tmp_path / ".gemini/tmp/work/chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-12-02T04-38-d0440baa.jsonl").write_bytes(b"\n".join(lines[:cut]) + b"\n")
    second = chats / "session-2026-12-02T04-39-d0440baa.jsonl"
    second.write_bytes(b"\n".join(lines[cut:]) + b"\n")
    logs = read_gemini_home(tmp_path)
    assert len(logs) == 1 and len(_requests(logs[0])) == 8
    assert len(_requests(read_chat(second))) == 8
    assert len(chat_files(tmp_path)) == 2


def test_bad_lines_are_counted_and_skipped() -> None:
    lines = _lines()
    bad = [b"{not json", b"[1,2]", b'{"type":"gemini","id":"x","timestamp":"nope","tokens":{}}',
           b'{"type":"gemini","id":"y","timestamp":"2026-12-02T04:38:19Z","tokens":{"input":-3}}',
           b'{"type":"gemini","id":"z","timestamp":"2026-12-02T04:38:19Z","tokens":{"input":1,"cached":9}}',
           b'{"type":"mystery"}']  # fmt: skip
    log = read_chat_lines([("chat.jsonl", lines[:6] + bad + lines[6:])])
    assert len(_requests(log)) == 8
    assert [i.line for i in log.issues] == [7, 8, 9, 10, 11, 12]
    assert all(i.source == "chat.jsonl" and i.reason for i in log.issues)


def test_home_discovery_honours_gemini_cli_home(tmp_path: Path) -> None:
    assert gemini_base({"HOME": "/h"}) == Path("/h")
    assert gemini_base({"HOME": "/h", "GEMINI_CLI_HOME": str(tmp_path)}) == tmp_path
    assert read_gemini_home(tmp_path) == []


def test_minimums() -> None:
    assert minimum_tokens("gemini-2.5-flash") == 1024
    assert minimum_tokens("gemini-2.5-pro") == 4096
    assert minimum_tokens("gemini-3-pro-preview") == 4096


def _history() -> tuple[dict[str, object], list[dict[str, object]]]:
    """The fixture's session as one header and its messages, first copies only."""
    raw = [json.loads(x) for x in _lines()]
    head = raw[0]
    messages: dict[str, dict[str, object]] = {}
    for obj in raw:
        if obj.get("type") in ("user", "gemini"):
            messages.setdefault(obj["id"], obj)
    return head, list(messages.values())


def test_a_whole_file_json_chat_and_its_jsonl_copy_are_one_session(tmp_path: Path) -> None:
    head, messages = _history()
    chats = tmp_path / ".gemini/tmp/work/chats"
    chats.mkdir(parents=True)
    legacy = chats / "session-2026-12-02T04-54-76b3096b.json"
    legacy.write_text(json.dumps({**head, "messages": messages}, indent=2))
    [log] = read_gemini_home(tmp_path)
    reqs = _requests(log)
    assert len(reqs) == 8 and log.issues == []
    assert all(r.process_start for r in reqs)  # a history says nothing of processes
    # 0.61 resumes a .json chat by copying it into a .jsonl beside it.
    copy = [json.dumps(head)] + [json.dumps(m) for m in messages]
    (chats / "session-2026-12-02T04-54-76b3096b.jsonl").write_text("\n".join(copy) + "\n")
    [log] = read_gemini_home(tmp_path)
    assert len(_requests(log)) == 8


def test_a_rewind_drops_the_conversation_not_the_calls() -> None:
    lines = _lines()
    raw = [json.loads(x) for x in lines]
    # Rewind to the user message of the second process's turn, just before turn three.
    third_user = [o for o in raw if o.get("type") == "user"][3]["id"]
    at = next(i for i, o in enumerate(raw) if o.get("id") == third_user)
    before = _requests(read_chat_lines([("chat.jsonl", lines[: at + 4])]))[-1]
    after = [
        {"id": "u-new", "timestamp": "2026-12-02T04:54:51Z", "type": "user",
         "content": [{"text": "again"}]},
        {"id": "g-new", "timestamp": "2026-12-02T04:54:52Z", "type": "gemini", "content": "ok",
         "model": "gemini-2.5-flash", "tokens": {"input": 9000, "cached": 0, "output": 2}},
    ]  # fmt: skip
    rewound = [
        *lines[: at + 4],
        json.dumps({"$rewindTo": third_user}).encode(),
        *(json.dumps(m).encode() for m in after),
    ]
    log = read_chat_lines([("chat.jsonl", rewound)])
    assert log.issues == []
    reqs = _requests(log)
    assert len(reqs) == 5  # every call made before the rewind was billed, and the new one
    assert before.fingerprint is not None and reqs[-1].fingerprint is not None
    kept = before.fingerprint.message_hashes
    now = reqs[-1].fingerprint.message_hashes
    assert kept is not None and now is not None
    # The rewound user message is gone; the new one takes its place.
    assert len(now) == len(kept) and now[:-1] == kept[:-1] and now[-1] != kept[-1]


def test_a_subagent_chat_is_a_stream_of_its_own(tmp_path: Path) -> None:
    chats = tmp_path / ".gemini/tmp/work/chats"
    chats.mkdir(parents=True)
    (chats / CHAT.name).write_bytes(CHAT.read_bytes())
    sub = chats / "76b3096b-142e-43b8-879b-1a14c6e51636" / "sub-1.jsonl"
    sub.parent.mkdir()
    head = {"sessionId": "sub-1", "startTime": "2026-12-02T04:54:45Z", "kind": "subagent"}
    call = {
        "id": "g-sub",
        "timestamp": "2026-12-02T04:54:46Z",
        "type": "gemini",
        "content": "x",
        "model": "gemini-2.5-flash",
        "tokens": {"input": 3000, "cached": 0, "output": 5},
    }
    sub.write_text(json.dumps(head) + "\n" + json.dumps(call) + "\n{bad\n")
    [log] = read_gemini_home(tmp_path)
    assert len(_requests(log)) == 8
    [stream] = [s for sid, s in log.streams.items() if sid != "main"]
    assert stream.kind.value == "subagent" and stream.id == "sub-1"
    assert [r.input_tokens for r in stream.requests] == [3000]
    assert [(i.source, i.line) for i in log.issues] == [(str(sub), 3)]


def _msg(i: str, kind: str, sec: int, **extra: object) -> dict[str, object]:
    content: object = [{"text": f"m{i}"}] if kind == "user" else f"a{i}"
    stamp = f"2026-12-02T05:00:{sec:02d}Z"
    return {"id": i, "timestamp": stamp, "type": kind, "content": content, **extra}


def _tokens(prompt: int, cached: int) -> dict[str, int]:
    return {"input": prompt, "cached": cached, "output": 3, "thoughts": 0, "tool": 0}


def _read(objs: list[dict[str, object]]) -> list[GeminiRequest]:
    return _requests(read_chat_lines([("c.jsonl", [json.dumps(o).encode() for o in objs])]))


HEAD = {"sessionId": "s-1", "startTime": "2026-12-02T05:00:00Z", "kind": "main"}


def test_tokens_written_on_a_later_copy_are_the_same_call() -> None:
    reqs = _read([
        HEAD, _msg("u1", "user", 1), _msg("g1", "gemini", 2, model="gemini-2.5-flash"),
        _msg("g1", "gemini", 2, model="gemini-2.5-flash", tokens=_tokens(9000, 0)),
        _msg("g1", "gemini", 2, model="gemini-2.5-flash", tokens=_tokens(9000, 0)),
    ])  # fmt: skip
    assert [(r.message_id, r.input_tokens) for r in reqs] == [("g1", 9000)]
    fp = reqs[0].fingerprint
    assert fp is not None and fp.message_roles == ("user",)  # not its own answer


def test_a_history_replaced_inside_a_process_announces_a_rebuild() -> None:
    flash = {"model": "gemini-2.5-flash"}
    summary = _msg("s1", "user", 5)
    objs = [
        HEAD, _msg("u1", "user", 1), _msg("g1", "gemini", 2, **flash, tokens=_tokens(30000, 0)),
        _msg("u2", "user", 3), _msg("g2", "gemini", 4, **flash, tokens=_tokens(30100, 30000)),
        # Compression: the CLI writes the new history (its call is not stored).
        {"$set": {"messages": [summary], "lastUpdated": "2026-12-02T05:00:05Z"}},
        _msg("u3", "user", 6), _msg("g3", "gemini", 7, **flash, tokens=_tokens(5000, 0)),
    ]  # fmt: skip
    log = read_chat_lines([("c.jsonl", [json.dumps(o).encode() for o in objs])])
    entries = analyze_gemini_session(log, now=2e9).main.entries
    assert [e.outcome.value for e in entries] == ["cold", "hit", "expected"]
    # The same shortfall without the announcement is a miss.
    objs[5] = {"$set": {"lastUpdated": "2026-12-02T05:00:05Z"}}
    objs[-1] = _msg("g3", "gemini", 7, **flash, tokens=_tokens(31000, 0))
    log = read_chat_lines([("c.jsonl", [json.dumps(o).encode() for o in objs])])
    entries = analyze_gemini_session(log, now=2e9).main.entries
    assert [e.outcome.value for e in entries] == ["cold", "hit", "miss"]
    # A history extended at a resume is no rebuild either (the process just started).
    assert all(not isinstance(i, RebuildAnnounced) for i in log.streams["main"].items)


def test_the_agents_table_finds_the_home_and_reads_whole_sessions() -> None:
    from cachediag.ingest import agents, gemini, gemini_files

    row = agents.AGENTS["gemini"]
    assert row.pattern == gemini_files.PATTERN and row.format == gemini.FORMAT
    files = agents.session_files("gemini", {"HOME": str(HOME)})
    assert files == chat_files(HOME) and len(files) == 3
    logs = agents.read_agent_sessions(
        "gemini", {"HOME": "/nonexistent", "GEMINI_CLI_HOME": str(HOME)}
    )
    assert {len(_requests(log)) for log in logs} == {8}  # each file: its whole session


@pytest.mark.parametrize(("resume", "cause"), [(False, "likely_server_side"), (True, "unknown")])
def test_nothing_visible_changed_is_server_side_only_inside_one_process(
    resume: bool, cause: str
) -> None:
    flash = {"model": "gemini-2.5-flash"}
    objs: list[dict[str, object]] = [
        HEAD, _msg("u1", "user", 1), _msg("g1", "gemini", 2, **flash, tokens=_tokens(30000, 0)),
        _msg("u2", "user", 3), _msg("g2", "gemini", 4, **flash, tokens=_tokens(30100, 0)),
    ]  # fmt: skip
    if resume:
        objs.insert(3, {"$set": {"sessionId": "s-1"}})
    entries = analyze_gemini_session(
        read_chat_lines([("c.jsonl", [json.dumps(o).encode() for o in objs])]), now=2e9
    ).main.entries
    assert [e.outcome.value for e in entries] == ["cold", "miss"]
    diagnosis = entries[1].diagnosis
    assert diagnosis is not None and [c.value for c in diagnosis.causes] == [cause]
    assert diagnosis.source == "inferred"
