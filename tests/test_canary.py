"""The escape-sequence canary never reaches stdout, of any command, in any mode (issue 11).

A transcript tree with ``ESC [ 31 m EVIL ESC ] 0 ; pwned BEL`` in every place a log or a
file name can put text that cachediag shows: model names, agent ids, subagent file names,
project folder names, the server's cache-miss reason, a price file's ``source``. Every
command runs on it in every output mode; stdout must never hold the sequence (JSON
escapes it as ``\\u001b``; tables, lines and raw ``--jq`` strings show ``?``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.statusline_support import T0, cache_home, run_line

__all__ = ["cache_home"]

CANARY = "\x1b[31mEVIL\x1b]0;pwned\x07"


def _line(n: int, at: float, *, read: int, write: int, **extra: Any) -> str:
    message = {
        "id": f"msg_{n}",
        "model": CANARY,
        "content": [{"type": "text", "text": "x"}],
        "stop_reason": CANARY,
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_5m_input_tokens": write},
            "output_tokens": 5,
        },
    }
    if n == 3:
        message["diagnostics"] = {"cache_miss_reason": {"type": CANARY}}
    obj = {
        "type": "assistant",
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n > 1 else None,
        "sessionId": f"s-{CANARY}",
        "version": "2.1.0",
        "cwd": f"/home/{CANARY}",
        "gitBranch": CANARY,
        "slug": CANARY,
        "timestamp": datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z"),
        "requestId": f"req_{n}",
        "message": message,
        **extra,
    }
    return json.dumps(obj) + "\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    project = tmp_path / "projects" / f"-home-{CANARY}"
    project.mkdir(parents=True)
    main_lines = [
        _line(1, T0, read=0, write=20000),
        _line(2, T0 + 60, read=20000, write=500),
        _line(3, T0 + 1000, read=0, write=21000),
        _line(4, T0 + 1010, read=0, write=30000, isSidechain=True, agentId=CANARY),
        _line(5, T0 + 1020, read=0, write=40000, isSidechain=True, agentId=CANARY),
    ]
    session = project / "sess.jsonl"
    session.write_text("".join(main_lines))
    agents = project / "sess" / "subagents"
    agents.mkdir(parents=True)
    agent = [_line(10 + i, T0 + 2000 * i, read=0, write=9000) for i in range(3)]
    (agents / f"agent-a{CANARY}.jsonl").write_text("".join(agent))
    (agents / f"agent-a{CANARY}.meta.json").write_text(
        json.dumps({"agentType": CANARY, "description": CANARY})
    )
    return tmp_path


def price_file(tmp_path: Path) -> Path:
    path = tmp_path / "prices.json"
    rates = {
        "input_mtok": 5,
        "cache_write_5m_mtok": 6.25,
        "cache_write_1h_mtok": 10,
        "cache_read_mtok": 0.5,
        "output_mtok": 25,
    }
    path.write_text(json.dumps({"source": CANARY, "models": {"\x1b[31mEVIL": rates}}))
    return path


def assert_clean(text: str, what: str) -> None:
    assert CANARY not in text, what
    assert "\x1b]" not in text and "\x07" not in text and "\x1b[31mEVIL" not in text, what


COMMANDS = [
    ["analyze"],
    ["analyze", "--json"],
    ["analyze", "--requests"],
    ["analyze", "--jq", ".. | strings"],
    ["audit"],
    ["audit", "--by", "model"],
    ["audit", "--by", "session"],
    ["audit", "--by", "project"],
    ["audit", "--by", "cause"],
    ["audit", "--by", "stream-kind"],
    ["audit", "--json"],
    ["audit", "--csv"],
    ["audit", "--jq", ".. | strings"],
    ["explain"],
    ["explain", "--json"],
    ["watch", "--once"],
    ["watch", "--once", "--json"],
    ["watch", "--once", "--misses-only"],
    ["report", "--output", "-"],
]


@pytest.mark.parametrize("prices", [False, True], ids=["default-prices", "price-file"])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_canary_never_reaches_stdout(
    tree: Path, cache_home: Path, args: list[str], prices: bool
) -> None:
    session = next((tree / "projects").glob("*/sess.jsonl"))
    paths = [str(tree / "projects")] if args[0] in ("audit", "report") else [str(session)]
    extra = ["--pricing", str(price_file(tree))] if prices else []
    result = CliRunner().invoke(main, [*args, *extra, *paths])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert_clean(result.stdout, f"stdout of {args}")
    assert_clean(result.stderr, f"stderr of {args}")


@pytest.mark.parametrize("mode", [[], ["--color"], ["--json"], ["--format", "{last} {source}"]])
def test_canary_never_reaches_the_status_line(
    tree: Path, cache_home: Path, mode: list[str]
) -> None:
    session = next((tree / "projects").glob("*/sess.jsonl"))
    cc = {
        "hit_ratio": 0.5,
        "misses": 1,
        "requests": 3,
        "last_miss_cause": {"causes": [CANARY], "tools_added": 1},
        "miss_causes": {CANARY: 1},
        "ttl": CANARY,
    }
    for payload in (
        {"transcript_path": str(session), "model": {"id": CANARY, "display_name": CANARY}},
        {"transcript_path": str(session), "prompt_cache": cc, "session_id": CANARY},
    ):
        assert_clean(run_line(payload, *mode, "--now", str(T0)), f"statusline {mode}")
