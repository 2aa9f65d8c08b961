"""Claude Code's OpenTelemetry export (formats.md §5), read from the Collector's files.

Exports are written by scripts/make_otel.py from real transcripts and from the capture
fixtures, as Claude Code would emit them: the prompt_cache numbers must equal the
transcript's, and request bodies (inline events or the raw-body folder) must name the
same causes as the capture they came from.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.analysis.session_analysis import analyze_session
from cachediag.cli import main
from cachediag.ingest.capture import read_capture
from cachediag.ingest.discover import sessions_for_file
from cachediag.ingest.otel import TTL_ENV, attr_value, read_otel, stream_of
from cachediag.ingest.reader import read_session, read_sessions, read_stdin
from cachediag.model import MAIN_STREAM, StreamKind
from cachediag.report.serialize import prompt_cache_dict
from tests.conftest import FIXTURES, REAL, ROOT

NOW = 2_000_000_000.0
CAPTURES = FIXTURES / "captures"
# Everything of the prompt_cache object but the causes: a transcript's causes can rest on
# its message chain, which the events do not carry.
NUMBERS = (
    "warm",
    "caching_observed",
    "ttl",
    "expires_at",
    "requests",
    "misses",
    "expected_rebuilds",
    "hit_ratio",
    "cache_write_tokens",
    "miss_recache_tokens",
    "last_miss_at",
    "recache_tokens_if_cold",
    "hits",
    "cold_starts",
)


@pytest.fixture(scope="module")
def make_otel() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_otel", ROOT / "scripts/make_otel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _export(make_otel: ModuleType, records: list[dict[str, Any]]) -> bytes:
    return "".join(line + "\n" for line in make_otel.export_lines(records)).encode()


def _transcripts(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*.jsonl") if "subagents" not in p.parts and p.parent.name != "x"
    )


def _five_minute(path: Path) -> bool:
    log = read_session(sessions_for_file(path))
    return all(r.ttl == "5m" for s in log.streams.values() for r in s.requests)


def _check_same_numbers(make_otel: ModuleType, path: Path, tmp_path: Path) -> None:
    transcript = analyze_session(read_session(sessions_for_file(path)), NOW)
    out = tmp_path / f"{path.stem}.otel.jsonl"
    out.write_bytes(_export(make_otel, make_otel.from_session(transcript.log)))
    [otel_log] = read_sessions(sessions_for_file(out))
    otel = analyze_session(otel_log, NOW)
    want, got = (
        prompt_cache_dict(transcript.main.prompt_cache),
        prompt_cache_dict(otel.main.prompt_cache),
    )
    assert {k: got[k] for k in NUMBERS} == {k: want[k] for k in NUMBERS}
    assert otel_log.session_id == transcript.log.session_id
    assert otel_log.assumed_ttl == "5m"


@pytest.mark.parametrize(
    "path", [p for p in _transcripts(REAL) if _five_minute(p)], ids=lambda p: p.stem[:12]
)
def test_transcript_as_events_gives_the_same_prompt_cache(
    make_otel: ModuleType, path: Path, tmp_path: Path
) -> None:
    _check_same_numbers(make_otel, path, tmp_path)


def test_corpus_transcripts_as_events(make_otel: ModuleType, corpus: Path, tmp_path: Path) -> None:
    paths = [p for p in _transcripts(corpus / "claude-code") if _five_minute(p)]
    assert len(paths) >= 5
    for path in paths:
        _check_same_numbers(make_otel, path, tmp_path)


def test_compaction_events_announce_rebuilds(make_otel: ModuleType, tmp_path: Path) -> None:
    path = REAL / "spotter" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    log = read_session(sessions_for_file(path))
    data = _export(make_otel, make_otel.from_session(log))
    assert b"claude_code.compaction" in data
    [otel] = read_otel(io.BytesIO(data), "x", "x")
    assert analyze_session(otel, NOW).main.ledger.expected_rebuilds == 1
    kinds = {s.id: s.kind for s in otel.streams.values()}
    assert kinds["compaction-1"] is StreamKind.COMPACTION
    # Without the compaction events the same rebuild is a miss.
    records = [
        r for r in make_otel.from_session(log) if r["body"]["stringValue"].endswith("request")
    ]
    [bare] = read_otel(io.BytesIO(_export(make_otel, records)), "x", "x")
    assert analyze_session(bare, NOW).main.ledger.expected_rebuilds == 0


CAUSE_FIXTURES = sorted(p for p in CAPTURES.glob("*.jsonl") if p.stem != "betas_changed")


def _causes(log: Any) -> tuple[int, int, dict[str, int], set[str | None]]:
    a = analyze_session(log, NOW)
    sources = {e.diagnosis.source for e in a.main.entries if e.diagnosis is not None}
    pc = a.main.prompt_cache
    return pc.misses, pc.expected_rebuilds, dict(pc.miss_causes), sources


@pytest.mark.parametrize("path", CAUSE_FIXTURES, ids=lambda p: p.stem)
@pytest.mark.parametrize("layout", ["events", "folder"])
def test_raw_bodies_give_the_capture_causes(
    make_otel: ModuleType, path: Path, layout: str, tmp_path: Path
) -> None:
    if layout == "folder" and path.stem == "context_edit_rebuild":
        pytest.skip("applied_edits is in the response body, not in the request folder")
    with path.open("rb") as fp:
        want = _causes(read_capture(fp, str(path), path.stem))
    bodies = tmp_path / "bodies" if layout == "folder" else None
    if bodies is not None:
        bodies.mkdir()
    out = tmp_path / "otel.jsonl"
    out.write_bytes(_export(make_otel, make_otel.from_capture(path, bodies)))
    if bodies is not None:
        assert b"api_request_body" not in out.read_bytes()
    [log] = read_sessions(sessions_for_file(out))
    misses, rebuilds, causes, sources = _causes(log)
    assert (misses, rebuilds, causes) == want[:3]
    # Causes named from joined bodies say so; the server's own word stays the server's.
    assert sources <= {"capture", "server"}
    if misses and path.stem != "server_reason":
        assert sources == {"capture"}


def test_betas_need_headers_the_bodies_do_not_carry(make_otel: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "otel.jsonl"
    out.write_bytes(
        _export(make_otel, make_otel.from_capture(CAPTURES / "betas_changed.jsonl", None))
    )
    misses, _, causes, _ = _causes(read_sessions(sessions_for_file(out))[0])
    assert misses == 1 and "betas_changed" not in causes


def test_without_bodies_causes_are_inferred(make_otel: ModuleType, tmp_path: Path) -> None:
    records = make_otel.from_capture(CAPTURES / "system_prompt_changed.jsonl", None)
    plain = [r for r in records if r["body"]["stringValue"] == "claude_code.api_request"]
    [log] = read_otel(io.BytesIO(_export(make_otel, plain)), "x", "x")
    misses, _, causes, sources = _causes(log)
    assert misses == 1 and "system_prompt_changed" not in causes and sources == {"inferred"}


def _line(*records: dict[str, Any], resource: dict[str, Any] | None = None) -> bytes:
    def attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for k, v in d.items():
            if isinstance(v, bool):
                val: dict[str, Any] = {"boolValue": v}
            elif isinstance(v, int):
                val = {"intValue": str(v)}
            else:
                val = {"stringValue": v}
            out.append({"key": k, "value": val})
        return out

    logs = [
        {
            "timeUnixNano": str(int(r.pop("at") * 1e9)),
            "body": {"stringValue": f"claude_code.{r.pop('event')}"},
            "attributes": attrs(r),
        }
        for r in records
    ]
    payload = {
        "resourceLogs": [
            {
                "resource": {"attributes": attrs(resource or {"host.name": "h"})},
                "scopeLogs": [{"scope": {"name": "s"}, "logRecords": logs}],
            }
        ]
    }
    return json.dumps(payload).encode() + b"\n"


def _request(at: float, read: int, write: int, **extra: Any) -> dict[str, Any]:
    return {
        "event": "api_request",
        "at": at,
        "session.id": "s1",
        "model": "claude-sonnet-4-5",
        "input_tokens": 3,
        "output_tokens": 10,
        "cache_read_tokens": read,
        "cache_creation_tokens": write,
        "query_source": "repl_main_thread",
        **extra,
    }


def test_sessions_streams_and_passed_over_records() -> None:
    data = b"".join(
        [
            _line(
                _request(100.0, 0, 20_000, request_id="r1"),
                _request(110.0, 20_000, 500, request_id="r2"),
                {"event": "user_prompt", "at": 105.0, "session.id": "s1", "prompt_length": 5},
                _request(120.0, 0, 9_000, request_id="r3", **{"session.id": "s2"}),
                _request(130.0, 0, 7_000, request_id="r4", query_source="Explore"),
            ),
            b'{"resourceMetrics": [{"scopeMetrics": [{"metrics": [{"name": "m"}]}]}]}\n',
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "t"}]}]}]}\n',
            b"not json\n",
            b'{"something": "else"}\n',
            # The Collector retried an export: the same request again.
            _line(_request(110.0, 20_000, 500, request_id="r2")),
        ]
    )
    s1, s2 = read_otel(io.BytesIO(data), "src", "fallback")
    assert (s1.session_id, s2.session_id) == ("s1", "s2")
    assert [r.request_id for r in s1.streams[MAIN_STREAM].requests] == ["r1", "r2"]
    assert s1.streams["Explore"].kind is StreamKind.SUBAGENT
    assert s1.non_model_calls == 3  # a metric, a span, an unknown event
    assert s1.replayed_responses == 1
    assert [i.line for i in s1.issues] == [4, 5]
    assert s2.streams[MAIN_STREAM].requests[0].cache_creation_tokens == 9_000


def test_default_ttl_is_configurable_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _line(_request(100.0, 0, 20_000), _request(2_000.0, 0, 20_000))
    [log] = read_otel(io.BytesIO(data), "x", "x")
    pc = analyze_session(log, NOW).main.prompt_cache
    assert log.assumed_ttl == "5m" and pc.miss_causes == {"ttl_expired_5m": 1}
    monkeypatch.setenv(TTL_ENV, "1h")
    [log] = read_otel(io.BytesIO(data), "x", "x")
    pc = analyze_session(log, NOW).main.prompt_cache
    # 1,900 s idle under a 1h entry: not an expiry (and usage alone cannot say what was).
    assert log.assumed_ttl == "1h" and (pc.misses, pc.miss_causes) == (1, {})


def test_failed_compaction_announces_nothing() -> None:
    data = _line(
        _request(100.0, 0, 20_000),
        {"event": "compaction", "at": 105.0, "session.id": "s1", "success": False},
        _request(110.0, 0, 9_000),
    )
    [log] = read_otel(io.BytesIO(data), "x", "x")
    assert analyze_session(log, NOW).main.ledger.misses == 1


def test_query_sources() -> None:
    assert stream_of("repl_main_thread", 0) == (MAIN_STREAM, StreamKind.MAIN)
    assert stream_of("repl_main_thread:outputStyle:x", 0) == (MAIN_STREAM, StreamKind.MAIN)
    assert stream_of(None, 0) == (MAIN_STREAM, StreamKind.MAIN)
    assert stream_of("compact", 2) == ("compaction-3", StreamKind.COMPACTION)
    assert stream_of("agent\x1b[31m", 0) == ("agent__31m", StreamKind.SUBAGENT)


def test_attribute_values() -> None:
    assert attr_value({"intValue": "12"}) == 12
    assert attr_value({"doubleValue": 0.5}) == 0.5
    assert attr_value({"boolValue": True}) is True
    assert attr_value({"arrayValue": {"values": [{"stringValue": "a"}]}}) == ["a"]
    assert attr_value({"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "1"}}]}}) == {
        "k": 1
    }
    assert attr_value({"intValue": "x"}) is None


def test_detected_on_stdin_and_from_the_command_line(make_otel: ModuleType, tmp_path: Path) -> None:
    data = _export(make_otel, make_otel.from_capture(CAPTURES / "tools_changed.jsonl", None))
    logs = read_stdin(io.BytesIO(data))
    assert [log.format for log in logs] == ["claude-code-otel"]
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", str(NOW), "-"], input=data)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["prompt_cache"]["miss_causes"] == {"tools_changed": 1}
    # Body text never reaches the output.
    assert "interactive CLI tool" not in result.stdout
