"""The status line before the session's first response, and after a miss nobody could name.

Claude Code runs the status line before it has written the session's transcript (the
payload names ``<session_id>.jsonl``, which is not there yet, and nothing was spent):
that is no failure, and the line says so instead of ``cache ?``. A miss whose cause is
unknown (``last_miss_cause`` null) shows ``last: unknown`` rather than no ``last:`` at all.
Both the Python line and the bash + jq script.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cachediag.statusline import fast, render
from tests.conftest import ROOT
from tests.statusline_support import T0, assistant, cache_home, run_line, write

SCRIPTS = ROOT / "statusline"
SID = "0b6f3c1e-5a44-4a8e-9d0e-7f1c2a3b4c5d"
NOT_YET = "cache: no response yet"

pytestmark = pytest.mark.usefixtures(cache_home.__name__)
needs_jq = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("jq") is None, reason="needs bash and jq"
)


def _payload(transcript: Path, spent: float = 0.0) -> dict[str, Any]:
    # The fields Claude Code sends before its first response (formats.md §4, §8).
    return {
        "session_id": SID,
        "transcript_path": str(transcript),
        "cwd": str(transcript.parent),
        "model": {"id": "claude-sonnet-4-6", "display_name": "Sonnet 4.6"},
        "version": "2.1.332",
        "cost": {"total_cost_usd": spent, "total_duration_ms": 1984, "total_api_duration_ms": 0},
        "context_window": {"total_input_tokens": 0, "current_usage": None, "used_percentage": None},
        "effort": {"level": "medium"},
        "thinking": {"enabled": True},
    }


def _script(stdin: dict[str, Any]) -> str:
    result = subprocess.run(
        ["bash", str(SCRIPTS / "prompt-cache.sh")],
        input=json.dumps(stdin).encode(),
        capture_output=True,
        env=dict(os.environ),
        timeout=30,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    return result.stdout.decode()


@pytest.mark.parametrize("name", [f"{SID}.jsonl", "new.jsonl"])
def test_before_the_first_response_the_line_says_so(tmp_path: Path, name: str) -> None:
    payload = _payload(tmp_path / "projects" / "-app" / name)
    assert run_line(payload, "--no-color") == NOT_YET
    obj = json.loads(run_line(payload, "--json"))
    assert obj["prompt_cache"] is None and obj["cachediag"]["transcript"] == "not_written_yet"
    # Nothing is wrong: --check passes and nothing goes to a terminal's stderr.
    out = io.StringIO()
    assert fast.run(["--check"], io.BytesIO(json.dumps(payload).encode()), out) == 0
    assert "result      ok" in out.getvalue() and f"line        {NOT_YET}" in out.getvalue()


def test_a_transcript_with_the_prompt_but_no_answer_yet(tmp_path: Path) -> None:
    t = tmp_path / f"{SID}.jsonl"
    prompt = {"type": "user", "uuid": "u0", "sessionId": SID, "timestamp": "2026-01-02T00:00:00Z"}
    t.write_text(json.dumps(prompt) + "\n")
    assert run_line(_payload(t), "--no-color") == NOT_YET
    write(t, [json.dumps(prompt), assistant(1, T0, inp=10, read=0, write=20000)])
    # Claude Code's model and cost first (it spent nothing yet), then the cache.
    line = run_line(_payload(t), "--no-color", "--now", str(T0 + 10))
    assert line.startswith("Sonnet 4.6 · $0.00 · cache 0%")


def test_a_missing_transcript_after_money_was_spent_is_a_problem(tmp_path: Path) -> None:
    payload = _payload(tmp_path / f"{SID}.jsonl", spent=1.5)
    assert run_line(payload, "--no-color") == f"Sonnet 4.6 · $1.50 · {render.FALLBACK}"
    assert run_line(payload, "--no-color", "--preset", "cache") == render.FALLBACK
    # Without a session named, a missing transcript is no first response either.
    payload = {k: v for k, v in _payload(tmp_path / f"{SID}.jsonl").items() if k != "session_id"}
    assert run_line(payload, "--no-color").endswith(render.FALLBACK)


def test_an_unnamed_last_miss_reads_unknown(tmp_path: Path) -> None:
    sent = {"hit_ratio": 0.5, "requests": 4, "misses": 2, "last_miss_cause": None}
    assert (
        run_line({"prompt_cache": sent}, "--no-color")
        == "cache 50% · cold · 2 misses · last: unknown"
    )
    # Before any miss there is nothing to say.
    sent = {**sent, "misses": 0}
    assert run_line({"prompt_cache": sent}, "--no-color") == "cache 50% · cold · 0 misses"
    # From a transcript: 60 s idle, same model, nothing read: no cause can be named.
    t = tmp_path / "s1.jsonl"
    write(
        t,
        [
            assistant(1, T0, inp=10, read=0, write=20000),
            assistant(2, T0 + 60, inp=10, read=0, write=20500),
        ],
    )
    line = run_line({"transcript_path": str(t)}, "--no-color", "--now", str(T0 + 100))
    assert line == "m-1 · cache 0% · warm 4:20 · 1 miss · last: unknown"


@needs_jq
def test_the_jq_script_says_the_same(tmp_path: Path) -> None:
    assert _script(_payload(tmp_path / f"{SID}.jsonl")) == NOT_YET + "\n"
    assert _script(_payload(tmp_path / f"{SID}.jsonl", spent=2.0)) == "cache ?\n"
    t = tmp_path / f"{SID}.jsonl"
    t.write_text("")
    assert _script(_payload(t)) == "cache ?\n"  # jq alone cannot read the transcript
    enriched = {"prompt_cache": None, "cachediag": {"transcript": "not_written_yet"}}
    assert _script(enriched) == NOT_YET + "\n"
    sent = {"hit_ratio": 0.5, "requests": 4, "misses": 2, "last_miss_cause": None}
    assert _script({"prompt_cache": sent}) == "cache 50% · cold · 2 misses · last: unknown\n"
    assert _script({"prompt_cache": {**sent, "misses": 0}}) == "cache 50% · cold · 0 misses\n"


# Claude Code 2.1.332 after a /model switch: its own object counts the miss, names no cause.
SENT = {"hit_ratio": 0, "requests": 2, "misses": 1, "last_miss_at": 1796174007,
        "last_miss_cause": None, "expires_at": 1796174308}  # fmt: skip
NAMED = {"misses": 1, "last_miss_at": 1796174007.43,
         "last_miss_cause": {"causes": ["model_changed", "effort_changed"]}}  # fmt: skip


def test_claude_codes_unnamed_miss_takes_the_cause_cachediag_named() -> None:
    view = {"source": "claude-code", "prompt_cache": SENT, "computed": NAMED, "now": 0.0}
    line = render.render_line(view)
    assert line.endswith("1 miss · last: model_changed+effort_changed")
    # Another miss (another time, or other counts) keeps Claude Code's word: unknown.
    for other in ({**NAMED, "last_miss_at": 1796173000.0}, {**NAMED, "misses": 2}):
        assert render.render_line({**view, "computed": other}).endswith("last: unknown")


@needs_jq
def test_the_jq_script_takes_it_too() -> None:
    stdin = {"prompt_cache": SENT, "cachediag": {"computed": NAMED}}
    assert _script(stdin).endswith("1 miss · last: model_changed+effort_changed\n")
    stdin = {"prompt_cache": SENT, "cachediag": {"computed": {**NAMED, "misses": 0}}}
    assert _script(stdin).endswith("1 miss · last: unknown\n")
