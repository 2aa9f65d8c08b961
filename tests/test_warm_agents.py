"""``cachediag warm`` on other agents' recorded homes: each session by its provider's
retention (OpenAI: the model's, Gemini: the implicit cache's), and a cold resume priced
at the input price (neither charges a cache write)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.analysis.costs import PER_TOKEN
from cachediag.analysis.ledgers import analyze_log
from cachediag.analysis.openai_cache import readable_prefix
from cachediag.cli import main
from cachediag.ingest.agents import read_logs
from cachediag.model import RequestRecord
from cachediag.pricing import price_function

DATA = Path(__file__).parent / "data"


def home(tmp_path: Path, name: str) -> Path:
    """A copy of a recorded home, its files dated as written (the last request's time):
    warm reads only files written to within a day of --now."""
    copy = tmp_path / name
    shutil.copytree(DATA / name, copy)
    return copy


def last_request(agent: str, path: Path) -> RequestRecord:
    (log,) = [log for log in read_logs(agent, path) if log.streams]
    a = analyze_log(log, 0.0)
    return a.main.entries[-1].record


def warm_json(*args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["warm", "--json", *args])
    assert result.exit_code == 0, result.output
    sessions: list[dict[str, Any]] = json.loads(result.stdout)["sessions"]
    return sessions


def only_file(folder: Path, pattern: str) -> Path:
    (found,) = folder.rglob(pattern)
    os.utime(found, None)
    return found


def test_codex_a_miss_still_leaves_its_prefix_for_the_model_retention(tmp_path: Path) -> None:
    folder = home(tmp_path, "codex_home_pause")
    rollout = only_file(folder, "rollout-*.jsonl")
    last = last_request("codex", rollout)
    # The last request came after a 310 s pause and read nothing (a miss), yet OpenAI
    # kept what it sent: warm for gpt-5.5's 5 minutes after it.
    assert last.cache_read_tokens == 0 and last.ttl == "5m"
    (row,) = warm_json("--now", str(last.at + 60), str(folder))
    assert "agent" not in row  # one agent read: the rows keep their shape
    assert (row["ttl"], row["seconds_left"], row["expires_at"]) == ("5m", 240.0, last.at + 300)
    prices = price_function(None)(last)
    assert prices is not None
    tokens = last.total_tokens
    assert row["prompt_tokens"] == tokens
    # No write charge: cold, the whole prompt at the input price; warm, the part OpenAI
    # can read (1,024 tokens, then 128-token steps) at the cached-input price.
    assert row["rebuild_usd"] == round(tokens * prices.input_mtok * PER_TOKEN, 6)
    cached = readable_prefix(tokens)
    assert 0 < cached < tokens
    resume = (cached * prices.cache_read_mtok + (tokens - cached) * prices.input_mtok) * PER_TOKEN
    assert row["resume_usd"] == round(resume, 6)
    assert warm_json("--now", str(last.at + 300), str(folder)) == []


def test_codex_gpt_5_6_keeps_for_30_minutes(tmp_path: Path) -> None:
    folder = home(tmp_path, "codex_home_changes")
    last = last_request("codex", only_file(folder, "rollout-*.jsonl"))
    assert last.ttl == "30m"
    # Past Claude's 5 minutes and inside OpenAI's 30: still warm.
    (row,) = warm_json("--now", str(last.at + 1700), str(folder))
    assert (row["ttl"], row["seconds_left"]) == ("30m", 100.0)
    assert warm_json("--now", str(last.at + 1800), str(folder)) == []


def test_gemini_by_its_retention_priced_at_input(tmp_path: Path) -> None:
    folder = home(tmp_path, "gemini_home")
    for chat in folder.rglob("session-*.jsonl"):
        os.utime(chat, None)
    chat = sorted(folder.rglob("session-*.jsonl"))[0]
    last = last_request("gemini", chat)
    (row,) = warm_json("--now", str(last.at + 60), str(folder))
    assert (row["ttl"], row["seconds_left"]) == ("5m", 240.0)
    prices = price_function(None)(last)
    assert prices is not None
    p = prices.tier_for(last.total_tokens)
    assert row["rebuild_usd"] == round(last.total_tokens * p.input_mtok * PER_TOKEN, 6)
    assert row["resume_usd"] == round(last.total_tokens * p.cache_read_mtok * PER_TOKEN, 6)
    assert warm_json("--now", str(last.at + 300), str(folder)) == []


@pytest.mark.parametrize(
    ("name", "cold_price"),
    [("opencode_home_changes", "input_mtok"), ("opencode_home_anthropic", "cache_write_5m_mtok")],
)
def test_opencode_by_the_provider_of_its_rows(tmp_path: Path, name: str, cold_price: str) -> None:
    folder = home(tmp_path, name)
    db = only_file(folder, "opencode.db")
    logs = [log for log in read_logs("opencode", db) if log.streams]
    last = max((analyze_log(log, 0.0).main.entries[-1].record for log in logs), key=lambda r: r.at)
    rows = warm_json("--now", str(last.at + 10), str(folder))
    assert rows[0]["ttl"] == "5m" and rows[0]["seconds_left"] == pytest.approx(290.0)
    prices = price_function(None)(last)
    assert prices is not None
    expected = last.total_tokens * getattr(prices, cold_price) * PER_TOKEN
    assert rows[0]["rebuild_usd"] == round(expected, 6)
    assert warm_json("--now", str(last.at + 300), str(folder)) == []


def test_several_agents_name_theirs_and_agent_picks_one(tmp_path: Path) -> None:
    codex = home(tmp_path, "codex_home_changes")
    gemini = home(tmp_path, "gemini_home")
    for f in [*codex.rglob("*.jsonl"), *gemini.rglob("*.jsonl")]:
        os.utime(f, None)
    at = last_request("codex", next(codex.rglob("rollout-*.jsonl"))).at
    # Gemini's last request came later: both warm a minute after it.
    g_at = last_request("gemini", sorted(gemini.rglob("session-*.jsonl"))[0]).at
    now = str(max(at, g_at) + 60)
    both = warm_json("--now", now, str(codex), str(gemini))
    assert sorted(r["agent"] for r in both) == ["codex", "gemini"]
    assert all(next(iter(r)) == "agent" for r in both)  # first, as in analyze's lines
    (one,) = warm_json("--now", now, "--agent", "codex", str(codex), str(gemini))
    assert "agent" not in one and one["ttl"] == "30m"
    named = warm_json("--now", now, "--agent", "all", str(codex))
    assert [r["agent"] for r in named] == ["codex"]
    table = CliRunner().invoke(main, ["warm", "--now", now, str(codex), str(gemini)])
    assert table.exit_code == 0, table.output
    assert "agent" in table.stdout.splitlines()[1]
    assert "sent again at the input price" in table.stdout
