"""The opencode reader and its ledgers on databases the real opencode 1.18.33 wrote
(tests/real_agents, scenarios ``changes``: chat completions, and ``anthropic``: Messages),
against the fake's ground truth of those runs and ccusage 20.0.24's ``opencode session
--json`` on the same homes."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from cachediag.analysis.costs import request_cost_usd
from cachediag.analysis.openai_cache import analyze_openai_session
from cachediag.analysis.session_analysis import SessionAnalysis, analyze_session
from cachediag.ingest import opencode
from cachediag.ingest.opencode_db import OpencodeDbError, default_databases
from cachediag.model import RequestRecord, SessionLog
from cachediag.pricing import lookup_prices

DATA = Path(__file__).parent / "data"
NAMES = ("changes", "anthropic", "compact")
REASONING_TOKENS = 5
"""What the chat-completions fake reports per call (tests/real_agents/opencode_fake.py,
not imported: it needs aiohttp); the truth files say the same."""


def _home(name: str) -> Path:
    return DATA / f"opencode_home_{name}"


def _db(name: str) -> Path:
    return _home(name) / "opencode" / "opencode.db"


def _truth(name: str) -> list[dict[str, Any]]:
    return list(json.loads((DATA / f"opencode_truth_{name}.json").read_text()))


def _ccusage(name: str) -> dict[str, Any]:
    return dict(json.loads((DATA / f"ccusage20_opencode_{name}.json").read_text()))


def _log(name: str) -> SessionLog:
    (log,) = opencode.read_database(_db(name))
    return log


def _analyze(log: SessionLog) -> SessionAnalysis:
    if log.format == opencode.FORMAT:
        return analyze_session(log, 0.0)
    return analyze_openai_session(log, 0.0)


def _requests(log: SessionLog) -> list[RequestRecord]:
    return [r for s in log.streams.values() for r in s.requests]


@pytest.mark.parametrize("name", NAMES)
def test_every_served_request_with_its_tokens(name: str) -> None:
    truth = _truth(name)
    log = _log(name)
    assert log.issues == [] and log.session_id.startswith("ses_")
    # opencode never stores its title call (the small model, on the first turn).
    assert [t["n"] for t in truth if t["title"]] == [0]
    for stream, summary in (("main", False), ("compaction", True)):
        served = [t for t in truth if not t["title"] and t.get("compaction", False) is summary]
        found = log.streams.get(stream)
        got = [(r.model, r.input_tokens, r.cache_read_tokens, r.cache_creation_tokens,
                r.output_tokens) for r in (found.requests if found else [])]  # fmt: skip
        want = [(t["model"], t["prompt_tokens"] - t["read_tokens"] - t["write_tokens"],
                 t["read_tokens"], t["write_tokens"], t["output_tokens"])
                for t in served]  # fmt: skip
        assert got == want


def test_provider_forms_pick_the_ledger() -> None:
    assert _log("changes").format == opencode.AUTO_FORMAT  # cached-only, no write charge
    assert _log("anthropic").format == opencode.FORMAT  # read/write split


def _said(name: str) -> list[tuple[str, list[str], str, list[str]]]:
    truth = [t for t in _truth(name) if not (t["title"] or t.get("compaction"))]
    entries = _analyze(_log(name)).main.entries
    out = []
    for t, e in zip(truth, entries, strict=True):
        causes = [c.value for c in e.diagnosis.causes] if e.diagnosis else []
        out.append((t["outcome"], t["changed"], e.outcome.value, causes))
    return out


def test_changes_outcomes_and_causes_match_the_fake() -> None:
    assert _said("changes") == [
        ("cold", [], "cold", []),
        ("hit", [], "hit", []),
        # AGENTS.md went into the system prompt: the database holds no trace of it.
        ("miss", ["system"], "miss", ["unknown"]),
        ("hit", [], "hit", []),  # the tool call...
        ("hit", [], "hit", []),  # ...and the answer after its result
        ("hit", [], "hit", []),  # the MCP server's tools: under 2,000 tokens reprocessed
        # The system prompt names the model, so it changed too; the model is the evidence.
        ("miss", ["model", "system"], "miss", ["model_changed"]),
        # The fake's 40 s retention ran out, inside OpenAI's 5 minutes: nothing to name.
        ("miss", ["expired"], "miss", ["unknown"]),
        ("hit", [], "hit", []),
    ]


def test_anthropic_outcomes_and_causes_match_the_fake() -> None:
    assert _said("anthropic") == [
        ("cold", [], "cold", []),
        ("hit", [], "hit", []),
        ("miss", ["model", "system"], "miss", ["model_changed"]),
        ("miss", ["expired"], "miss", ["ttl_expired_5m"]),  # a real 305 s pause
    ]


def test_compaction_is_its_own_stream_and_an_announced_rebuild() -> None:
    """Each long answer overflowed the 9,000-token window: opencode summarised without
    tools (the compaction stream), then continued on the summary (main, announced)."""
    analysis = _analyze(_log("compact"))
    (summaries,) = analysis.others
    assert summaries.log.id == "compaction" and len(summaries.entries) == 3
    announced = [e.announced is not None for e in analysis.main.entries]
    assert announced == [False, True, False, True, False, True]
    assert [s[2] for s in _said("compact")] == ["cold"] + ["hit"] * 5


@pytest.mark.parametrize("name", (*NAMES, "subagent"))
def test_tokens_and_costs_equal_ccusage_per_session(name: str) -> None:
    """ccusage 20.0.24 counts every call (summary and subagent calls too; a subagent's
    child session is a session of its own), prices cached input at its own price and
    reasoning at the output price, but reports ``outputTokens`` without the reasoning
    tokens: cachediag's records include them in the output and hold them apart
    (docs/agents-opencode.md)."""
    logs = opencode.read_database(_db(name))
    rows = {row["sessionId"]: row for row in _ccusage(name)["sessions"]}
    assert sorted(rows) == sorted(log.session_id for log in logs)
    for log in logs:
        records, row = _requests(log), rows[log.session_id]
        assert sum(r.input_tokens for r in records) == row["inputTokens"]
        assert sum(r.cache_read_tokens for r in records) == row["cacheReadTokens"]
        assert sum(r.cache_creation_tokens for r in records) == row["cacheCreationTokens"]
        # The chat-completions fake reports REASONING_TOKENS per call, the Messages one none.
        said = {t["reasoning_tokens"] for t in _truth(name) if t["wire"] == "openai"}
        assert said <= {REASONING_TOKENS}
        reasoning = 0 if log.format == opencode.FORMAT else REASONING_TOKENS * len(records)
        assert sum(r.output_tokens for r in records) - reasoning == row["outputTokens"]
        # Kept apart in the record, so the usage reports leave it out as ccusage does.
        assert sum(getattr(r, "reasoning_tokens", 0) for r in records) == reasoning
        cost = 0.0
        for r in records:
            prices = lookup_prices(r.model or "", r.at)
            assert prices is not None, r.model
            cost += request_cost_usd(r, prices)
        assert cost == pytest.approx(row["totalCost"], rel=1e-9)


def test_subagent_child_session_is_its_own() -> None:
    """The ``task`` tool's subagent runs in a child session (``parent_id``): its own log;
    together the two sessions hold every call the fake served but the title call."""
    logs = opencode.read_database(_db("subagent"))
    assert len(logs) == 2
    calls = sorted((r for log in logs for r in _requests(log)), key=lambda r: r.at)
    served = [t for t in _truth("subagent") if not t["title"]]
    assert [(r.input_tokens + r.cache_read_tokens, r.cache_read_tokens) for r in calls] == [
        (t["prompt_tokens"], t["read_tokens"]) for t in served
    ]
    child = next(log for log in logs if len(_requests(log)) == 1)
    assert _requests(child)[0].at == calls[2].at  # the subagent's call, between the two
    conn = sqlite3.connect(f"file:{_db('subagent')}?mode=ro", uri=True)
    parent = conn.execute("SELECT parent_id FROM session WHERE id = ?", (child.session_id,))
    assert parent.fetchone()[0] in {log.session_id for log in logs}
    conn.close()


def test_discovery_xdg_home_and_opencode_db(tmp_path: Path) -> None:
    home = _home("changes")
    assert default_databases({"XDG_DATA_HOME": str(home)}) == [_db("changes")]
    user = tmp_path / "u"
    shutil.copytree(home, user / ".local" / "share")
    found = default_databases({"HOME": str(user)})
    assert found == [user / ".local/share/opencode/opencode.db"]
    # OPENCODE_DB: absolute, or relative to opencode's data folder.
    other = tmp_path / "elsewhere.db"
    shutil.copy(_db("anthropic"), other)
    assert default_databases({"HOME": str(user), "OPENCODE_DB": str(other)}) == [other]
    rel = {"HOME": str(user), "OPENCODE_DB": "opencode.db"}
    assert default_databases(rel) == found
    assert default_databases({"HOME": str(tmp_path / "none")}) == []
    logs = opencode.read_default({"XDG_DATA_HOME": str(home)})
    assert [log.session_id for log in logs] == [_log("changes").session_id]


def test_not_an_opencode_database(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# not a database\n" * 20)
    with pytest.raises(OpencodeDbError, match=r"README\.md: not an opencode database"):
        opencode.read_database(readme)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(OpencodeDbError, match="no session, message, part table"):
        opencode.read_database(other)
    with pytest.raises(OpencodeDbError, match="cannot read"):
        opencode.read_database(tmp_path / "gone.db")


def test_read_only_never_writes(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    shutil.copy(_db("changes"), db)
    before = (db.read_bytes(), sorted(p.name for p in tmp_path.iterdir()))
    os.chmod(db, 0o400)
    try:
        (log,) = opencode.read_database(db)
    finally:
        os.chmod(db, 0o600)
    assert log.streams["main"].requests
    assert (db.read_bytes(), sorted(p.name for p in tmp_path.iterdir())) == before


def test_snapshot_while_the_agent_writes(tmp_path: Path) -> None:
    """A WAL database read while another connection holds a write transaction open:
    the reader sees the last commit, is not blocked, and blocks no writer."""
    db = tmp_path / "opencode.db"
    shutil.copy(_db("changes"), db)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("DELETE FROM part")
    try:
        (log,) = opencode.read_database(db)
        writer.execute("COMMIT")
    finally:
        writer.close()
    assert len(log.streams["main"].requests) == len(_log("changes").streams["main"].requests)


def test_busy_database_is_a_clear_error(tmp_path: Path) -> None:
    """A rollback-journal database under an exclusive lock cannot be read: one line."""
    db = tmp_path / "opencode.db"
    shutil.copy(_db("changes"), db)
    holder = sqlite3.connect(db, isolation_level=None, timeout=0)
    holder.execute("PRAGMA journal_mode=DELETE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(OpencodeDbError, match="database is busy"):
            opencode.read_database(db)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_bad_rows_counted_and_unpriced_model_flagged(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    shutil.copy(_db("changes"), db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE message SET data = replace(data, '\"gpt-5.4\"', '\"fake-nobody-1\"')")
    first = conn.execute(
        "SELECT id FROM part WHERE data LIKE '%step-finish%' ORDER BY time_created LIMIT 1"
    ).fetchone()[0]
    conn.execute("UPDATE part SET data = '{not json' WHERE id = ?", (first,))
    conn.commit()
    conn.close()
    (log,) = opencode.read_database(db)
    assert [i.reason for i in log.issues] == [f"part {first}: data is not a JSON object"]
    requests = log.streams["main"].requests
    # The first message's only step lost: its own tokens (its last step's) stand in.
    assert [r.total_tokens for r in requests] == [
        r.total_tokens for r in _requests(_log("changes"))
    ]
    models = [r.model for r in requests]
    assert models.count("fake-nobody-1") == 3
    assert lookup_prices("fake-nobody-1", 0.0) is None
    # Counted unpriced in the session's cost, never priced at $0 or guessed.
    from cachediag.pricing import price_function, pricing_source
    from cachediag.report.serialize import session_dict

    cost = session_dict(
        _analyze(log), requests=True, price_of=price_function(None),
        pricing_source=pricing_source(None),
    )["cost"]  # fmt: skip
    assert cost["unpriced_requests"] == 3
    priced = [r for r in requests if r.model != "fake-nobody-1"]
    want = 0.0
    for r in priced:
        prices = lookup_prices(r.model or "", r.at)
        assert prices is not None
        want += request_cost_usd(r, prices)
    assert cost["cost_usd"] == pytest.approx(want, rel=1e-6)


def test_event_sourced_session_messages(tmp_path: Path) -> None:
    """1.18.33 already migrates ``session_message`` (its event-sourced runner: one
    ``assistant`` row per call, ``model`` {id, providerID, variant}, the same ``tokens``),
    though its default runner leaves it empty. Built here from the recorded run's rows (the
    shape is the 1.18.33 binary's projection, not a run seen): the same calls are read."""
    db = tmp_path / "opencode.db"
    shutil.copy(_db("changes"), db)
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT id, session_id, time_created, time_updated, data FROM message"
        " WHERE json_extract(data, '$.role') = 'assistant' ORDER BY time_created"
    ).fetchall()
    for seq, (mid, sid, created, updated, data) in enumerate(rows):
        msg = json.loads(data)
        v2 = {"agent": msg["agent"], "tokens": msg["tokens"], "finish": msg["finish"],
              "model": {"id": msg["modelID"], "providerID": msg["providerID"]},
              "time": msg["time"], "content": [], "cost": 0}  # fmt: skip
        conn.execute(
            "INSERT INTO session_message VALUES (?, ?, 'assistant', ?, ?, ?, ?)",
            (mid, sid, seq, created, updated, json.dumps(v2)),
        )
    conn.execute("DELETE FROM part")
    conn.execute("DELETE FROM message")
    conn.commit()
    conn.close()
    (log,) = opencode.read_database(db)
    got = [(r.model, r.provider, r.input_tokens, r.cache_read_tokens, r.output_tokens)
           for r in log.streams["main"].requests]  # fmt: skip
    want = [(r.model, r.provider, r.input_tokens, r.cache_read_tokens, r.output_tokens)
            for r in _log("changes").streams["main"].requests]  # fmt: skip
    assert got == want and log.format == opencode.AUTO_FORMAT


def test_agents_table_row_and_non_database(tmp_path: Path) -> None:
    from cachediag.ingest.agents import AGENTS, read_agent_sessions, read_logs, session_files

    env = {"XDG_DATA_HOME": str(_home("changes"))}
    assert session_files("opencode", env) == [_db("changes")]
    assert AGENTS["opencode"].home({"HOME": "/nowhere"}) == Path("/nowhere/.local/share")
    assert [log.session_id for log in read_agent_sessions("opencode", env)] == [
        _log("changes").session_id
    ]
    readme = tmp_path / "README.md"
    readme.write_text("# not a database\n" * 20)
    (log,) = read_logs("opencode", readme)
    assert log.main_unreadable and not log.unreadable
    assert [(i.line, i.reason) for i in log.issues] == [
        (0, "not an opencode database (file is not a database)")
    ]
    (gone,) = read_logs("opencode", tmp_path / "gone.db")
    assert [i.reason for i in gone.unreadable] == ["cannot read: No such file or directory"]


def test_cli_analyze_agent_opencode_reads_the_default_database(tmp_path: Path) -> None:
    """``cachediag analyze --agent opencode --json --requests`` with no path: the database
    under $XDG_DATA_HOME, each call a request with the fake's tokens and the ledger's causes;
    a file that is not a database is one error line and exit 1."""
    import subprocess
    import sys

    def run(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "XDG_DATA_HOME": str(data), "HOME": str(tmp_path)}
        return subprocess.run(
            [sys.executable, "-m", "cachediag", "analyze", "--agent", "opencode", *args],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    done = run("--json", "--requests", data=_home("anthropic"))
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    session = json.loads(line)
    assert session["session_id"] == _log("anthropic").session_id
    got = [(r["cache_read_tokens"], r["cache_creation_tokens"], r["outcome"], r["causes"])
           for r in session["requests"]]  # fmt: skip
    served = [t for t in _truth("anthropic") if not t["title"]]
    assert [g[:2] for g in got] == [(t["read_tokens"], t["write_tokens"]) for t in served]
    assert [g[2:] for g in got] == [
        ("cold", []), ("hit", []), ("miss", ["model_changed"]), ("miss", ["ttl_expired_5m"])
    ]  # fmt: skip
    readme = tmp_path / "README.md"
    readme.write_text("# not a database\n")
    bad = run(str(readme), data=tmp_path)
    assert bad.returncode == 1 and bad.stdout == ""
    assert "README.md: not a" in bad.stderr and "not an opencode database" in bad.stderr
