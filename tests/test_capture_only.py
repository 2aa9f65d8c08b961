"""``/compact`` as the real Claude Code makes it, and the requests only the captures hold.

fixtures/proxy/compact-<version>/ hold one run of the real CLI (2.1.332, and 2.1.260: the
release that introduced the miss-cause diagnostic) through ``cachediag proxy`` against
the real-client suite's fake API: turns, a tool call, ``/compact``, one more turn. Each
holds the proxy's day file, the session's transcript (its bulky ``api-request-blob`` and
attachment lines left out) and ``truth.json``, what the fake served, derived from the
bodies it received. 2.1.332 merges its summary request into the final user message it
last sent; the request after it starts over from the summary, with a new billing header
(the first system block). It writes no transcript for the compaction call: the
transcript holds 4 of the 5 requests.
"""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.ingest.threads import name_threads, split_threads
from cachediag.model import (
    BlockPrint,
    Fingerprint,
    RebuildAnnounced,
    RequestRecord,
    SessionLog,
    StreamKind,
)
from cachediag.proxy.missing import add_missing
from cachediag.statusline import fast
from tests.conftest import FIXTURES

VERSIONS = ("2.1.332", "2.1.260")
COMPACT = {v: FIXTURES / "proxy" / f"compact-{v}" for v in VERSIONS}


def _truth(version: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads((COMPACT[version] / "truth.json").read_text())
    return out


def _analyze(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["analyze", "--json", "--requests", "--now", "0", *args])
    assert result.exit_code == 0, result.output
    obj: dict[str, Any] = json.loads(result.stdout)
    return obj


def _by_stream(obj: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out = {"main": obj["requests"]}
    for s in obj["streams"]:
        out[s["id"]] = s["requests"]
    return out


def _transcript(version: str) -> Path:
    return next((COMPACT[version] / "transcript").glob("*.jsonl"))


@pytest.mark.parametrize("version", VERSIONS)
def test_the_capture_log_alone_sees_the_compaction(version: str) -> None:
    obj = _analyze(str(COMPACT[version] / "captures"))
    truth = _truth(version)
    kinds = {s["id"]: s["kind"] for s in obj["streams"]}
    # The compaction call is a stream of its own, no subagent is made up.
    assert sorted(kinds.values()) == ["compaction"]
    streams = _by_stream(obj)
    (compaction,) = (streams[sid] for sid, kind in kinds.items() if kind == "compaction")
    want = {t["msg_id"]: t for t in truth}
    assert [r["message_id"] for r in compaction] == [
        t["msg_id"] for t in truth if t["kind"] == "compaction"
    ]
    main_ids = [t["msg_id"] for t in truth if t["stream"] == "main"]
    assert [r["message_id"] for r in streams["main"]] == main_ids
    # Every outcome is the fake's: the request after the compaction an expected rebuild.
    for r in streams["main"] + compaction:
        assert r["outcome"] == want[r["message_id"]]["outcome"], r["message_id"]
        assert r["cache_read_tokens"] == want[r["message_id"]]["cache_read_input_tokens"]
    after = streams["main"][-1]
    assert (after["outcome"], after["announced"]) == ("expected", "compaction")
    assert obj["prompt_cache"]["expected_rebuilds"] == 1
    assert obj["totals"]["requests"] == len(truth)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_transcript_joined_counts_the_call_it_lacks(version: str) -> None:
    truth = _truth(version)
    alone = _analyze("--no-captures", str(_transcript(version)))
    assert alone["totals"]["requests"] == len(truth) - 1  # no file for the compaction call
    joined = _analyze("--captures", str(COMPACT[version] / "captures"), str(_transcript(version)))
    assert joined["totals"]["requests"] == len(truth)
    for key, theirs in (
        ("input_tokens", "input_tokens"),
        ("cache_read_tokens", "cache_read_input_tokens"),
        ("cache_creation_tokens", "cache_creation_input_tokens"),
        ("output_tokens", "output_tokens"),
    ):
        assert joined["totals"][key] == sum(t[theirs] for t in truth), key
    (stream,) = joined["streams"]
    (call,) = stream["requests"]
    (served,) = (t for t in truth if t["kind"] == "compaction")
    assert stream["kind"] == "compaction" and call["message_id"] == served["msg_id"]
    # Known from the captures only: the stream's source is the proxy's day file, the
    # request's line its line there.
    day_file = COMPACT[version] / "captures" / "2026-12-02.jsonl"
    assert stream["source"] == str(day_file)
    lines = day_file.read_text().splitlines()
    assert json.loads(lines[call["line"] - 1])["message_id"] == served["msg_id"]
    assert call["captured_only"] is True
    assert not any("captured_only" in r for r in joined["requests"])  # the transcript's
    # Its cost is counted: it read the whole context.
    assert call["cost_usd"] > 0
    assert joined["cost"]["cost_usd"] == pytest.approx(
        alone["cost"]["cost_usd"] + call["cost_usd"], abs=2e-6
    )
    # The main stream is the transcript's, with the boundary's expected rebuild.
    assert [r["outcome"] for r in joined["requests"]] == [
        t["outcome"] for t in truth if t["stream"] == "main"
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_status_line_counts_the_compaction_call(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    captures = tmp_path / "state" / "cachediag" / "captures"
    shutil.copytree(COMPACT[version] / "captures", captures)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    transcript = _transcript(version)
    stdin = json.dumps({"session_id": transcript.stem, "transcript_path": str(transcript)})
    out = io.StringIO()
    assert fast.run(["--json", "--now", "0"], io.BytesIO(stdin.encode()), out) == 0
    obj = json.loads(out.getvalue())
    truth = _truth(version)
    streams = obj["cachediag"]["streams"]
    assert [(s["kind"], s["prompt_cache"]["requests"]) for s in streams] == [("compaction", 1)]
    assert obj["prompt_cache"]["requests"] == sum(t["stream"] == "main" for t in truth)
    assert obj["prompt_cache"]["expected_rebuilds"] == 1


def _fp(messages: list[str], *, tools: str = "t", system: tuple[str, ...] = ("s",)) -> Fingerprint:
    blocks = tuple((BlockPrint(h, 10, "text"),) for h in messages)
    return Fingerprint(
        model="m",
        system_hashes=system,
        system_blocks=tuple(BlockPrint(h, 1000, "text") for h in system),
        tools=((tools, tools),),
        message_hashes=tuple(messages),
        message_roles=tuple("user" if i % 2 == 0 else "assistant" for i in range(len(messages))),
        message_blocks=blocks,
    )


def _req(at: float, fp: Fingerprint, read: int = 0) -> RequestRecord:
    return RequestRecord(at, 10, read, 5000, 100, message_id=f"m{at:g}", fingerprint=fp)


def _streams(records: list[RequestRecord]) -> dict[str, tuple[StreamKind, list[Any]]]:
    return {sid: (kind, items) for sid, kind, items in name_threads(split_threads(records))}


@pytest.mark.parametrize(
    ("tools", "system"),
    [("t", ("s",)), ("none", ("You summarise conversations.",))],
    ids=["same-prefix", "own-prompt-and-tools"],
)
def test_a_summary_request_of_its_own_is_a_compaction_too(
    tools: str, system: tuple[str, ...]
) -> None:
    # The classic shape: the conversation, then a user message asking for the summary,
    # sent with the conversation's own prefix or with a summariser's prompt and tools.
    records = [
        _req(1, _fp(["a"])),
        _req(2, _fp(["a", "b", "c"]), read=5000),
        _req(3, _fp(["a", "b", "c", "d", "SUMMARISE"], tools=tools, system=system), read=10000),
        _req(4, _fp(["SUMMARY", "e"]), read=2000),
    ]
    streams = _streams(records)
    assert sorted(k.value for k, _ in streams.values()) == ["compaction", "main"]
    _, items = streams["main"]
    assert isinstance(items[-2], RebuildAnnounced) and items[-2].at == 3
    assert [i.message_id for i in items if isinstance(i, RequestRecord)] == ["m1", "m2", "m4"]


@pytest.mark.parametrize(
    ("tools", "system", "why"),
    [
        ("other", ("s",), "another tool set: another agent"),
        ("t", ("agent prompt",), "another system prompt: another agent"),
    ],
)
def test_another_agent_starting_fresh_is_no_compaction(
    tools: str, system: tuple[str, ...], why: str
) -> None:
    records = [
        _req(1, _fp(["a"])),
        _req(2, _fp(["a", "b", "c"]), read=5000),
        _req(3, _fp(["task"], tools=tools, system=system)),
    ]
    kinds = Counter(k.value for k, _ in _streams(records).values())
    assert kinds["compaction"] == 0, why
    assert len(_streams(records)["main"][1]) == 2


def _real(scenario: str, version: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    folder = FIXTURES / "proxy" / f"{scenario}-{version}"
    truth: list[dict[str, Any]] = json.loads((folder / "truth.json").read_text())
    return _analyze(str(folder / "captures")), truth


@pytest.mark.parametrize("scenario", ["pause", "model_switch"])
@pytest.mark.parametrize("version", VERSIONS)
def test_every_cause_the_fake_saw_from_the_capture_log_alone(scenario: str, version: str) -> None:
    """Each request's outcome is the fake's and every cause it names is named. Claude Code
    replaces the trailing ``system`` message of every request, and on a model switch folds
    it into the first user message for the other model: neither hides the pause nor splits
    the conversation in two."""
    obj, truth = _real(scenario, version)
    assert obj["streams"] == []  # one conversation
    requests = obj["requests"]
    assert [r["message_id"] for r in requests] == [t["msg_id"] for t in truth]
    for got, want in zip(requests, truth, strict=True):
        assert got["outcome"] == want["outcome"]
        assert set(want["causes"]) <= set(got["causes"]), got["message_id"]
        # Named from the bodies: the clock's cause too, once they showed nothing else.
        assert got["cause_source"] == ("capture" if want["outcome"] == "miss" else None)
    if (scenario, version) == ("pause", "2.1.332"):
        assert requests[1]["causes"] == ["ttl_expired_5m"]


def _session(*streams: tuple[str, StreamKind, list[RequestRecord]]) -> SessionLog:
    log = SessionLog("s", "t.jsonl", "claude-code")
    for sid, kind, records in streams:
        log.stream(sid, kind).items.extend(dataclasses.replace(r, stream=sid) for r in records)
    return log


def test_a_request_the_transcript_lost_goes_back_into_its_stream() -> None:
    lost = _req(2, _fp(["a", "b", "c"]), read=5000)
    other = _req(9, _fp(["a", "b", "c", "d", "e"]), read=5000)  # goes on past the session
    log = _session(
        ("main", StreamKind.MAIN, [_req(1, _fp(["a"])), _req(3, _fp(["a", "b", "c", "d", "e"]))])
    )
    found = [(Path("day.jsonl"), lost), (Path("day.jsonl"), other)]
    assert add_missing(log, found) == 1
    assert [r.message_id for r in log.streams["main"].requests] == ["m1", "m2", "m3"]


def test_a_conversation_nothing_of_the_session_went_on_from_is_not_added() -> None:
    log = _session(("main", StreamKind.MAIN, [_req(1, _fp(["a"])), _req(2, _fp(["a", "b", "c"]))]))
    after = [(Path("day.jsonl"), _req(5, _fp(["a", "b", "c", "x", "y"]), read=5000))]
    stranger = [(Path("day.jsonl"), _req(6, _fp(["q"], tools="other")))]
    assert add_missing(log, after + stranger) == 0
    assert list(log.streams) == ["main"]
