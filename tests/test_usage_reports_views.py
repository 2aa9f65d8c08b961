"""The usage reports as people and scripts use them: jq scripts written for ccusage,
tables within 80 columns, the blocks rule on its edges, errors that say what is wrong."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.usage.blocks import identify_blocks, limit_status, projection
from cachediag.usage.rows import RequestRow
from tests.conftest import FIXTURES, ROOT

DATA = ROOT / "tests" / "data"
FIXTURE_TREE = [FIXTURES / "real" / "spotter", FIXTURES / "real" / "claude-code-viewer"]
LATER = str(datetime(2027, 6, 1, tzinfo=UTC).timestamp())

DAILY_JQ = (
    '(.daily[] | "\\(.date) \\(.inputTokens) \\(.outputTokens) \\(.cacheReadTokens) '
    '\\(.totalTokens) \\((.totalCost * 100) | round) \\(.modelsUsed | join(","))"), '
    '(.totals | "total \\(.totalTokens) \\((.totalCost * 100) | round)")'
)
"""What a ccusage user's script reads from ``daily --json``: days, tokens, cents."""
ACTIVE_JQ = (
    '.blocks[] | select(.isActive) | "\\(.id) \\(.entries) \\(.totalTokens) '
    "\\(.burnRate.tokensPerMinute | floor) \\((.burnRate.costPerHour * 100) | round) "
    "\\(.projection.totalTokens) \\(.projection.remainingMinutes) "
    '\\(.tokenLimitStatus.status // "none") \\(.tokenLimitStatus.percentUsed // 0 | floor)"'
)
"""A quota watcher's script on ``blocks --active --json``."""


def jq(program: str, document: Any) -> str:
    exe = shutil.which("jq")
    if exe is None:
        pytest.skip("jq not installed")
    done = subprocess.run(
        [exe, "-r", program], input=json.dumps(document), capture_output=True, text=True, check=True
    )
    return done.stdout


def run(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_jq_script_for_ccusage_daily_reads_ours_the_same() -> None:
    theirs = json.loads((DATA / "ccusage20_daily_fixtures.json").read_text())["output"]
    mine = json.loads(run("daily", *map(str, FIXTURE_TREE), "-z", "UTC", "-j").stdout)
    answer = jq(DAILY_JQ, theirs)
    assert answer.count("\n") == len(theirs["daily"]) + 1
    assert jq(DAILY_JQ, mine) == answer


@pytest.mark.parametrize("extra", [[], ["--token-limit", "10000"]])
def test_jq_script_for_ccusage_active_block_reads_ours_the_same(extra: list[str]) -> None:
    rec = json.loads((DATA / "ccusage20_blocks_active.json").read_text())
    theirs = rec["outputs"]["limit" if extra else "plain"]
    tree = str(DATA / "ccusage20_active")
    mine = json.loads(
        run("blocks", tree, "--active", "-j", "-z", "UTC", "--now", str(rec["now"]), *extra).stdout
    )
    answer = jq(ACTIVE_JQ, theirs)
    assert answer.strip() and ("exceeds" in answer) == bool(extra)
    assert jq(ACTIVE_JQ, mine) == answer


def row(at: float, tokens: int = 100, cost: float = 0.01) -> RequestRow:
    return RequestRow(
        at=at,
        session_id="s",
        project="p",
        cwd=None,
        model="claude-opus-4-6",
        input_tokens=tokens,
        output_tokens=0,
        cache_creation_tokens=0,
        cache_read_tokens=0,
        cost_usd=cost,
        outcome="hit",
        recache_usd=0.0,
        cause=None,
    )


H = 3600.0
T0 = datetime(2026, 3, 1, 10, 17, tzinfo=UTC).timestamp()


def test_blocks_start_at_the_hour_and_a_long_idle_makes_a_gap() -> None:
    rows = [row(T0), row(T0 + 4 * H), row(T0 + 4.9 * H), row(T0 + 11 * H)]
    blocks = identify_blocks(rows, now=T0 + 100 * H)
    # 10:17 -> block 10:00-15:00; 14:17 fits; 15:11 is past the block's end (started a
    # new one at 15:00, no gap: 54 min idle); 21:17 comes 6.1 h after: gap, then a block.
    assert [(b.is_gap, b.bucket.entries) for b in blocks] == [
        (False, 2),
        (False, 1),
        (True, 0),
        (False, 1),
    ]
    assert blocks[0].id == "2026-03-01T10:00:00.000Z"
    assert blocks[1].id == "2026-03-01T15:00:00.000Z"
    gap = blocks[2]
    assert gap.start_ms == round((T0 + 4.9 * H + 5 * H) * 1000) and gap.end_ms == round(
        (T0 + 11 * H) * 1000
    )
    assert not any(b.is_active for b in blocks)


def test_session_length_changes_the_blocks() -> None:
    rows = [row(T0), row(T0 + 1.5 * H)]
    assert len(identify_blocks(rows, now=T0, session_hours=5)) == 1
    assert [b.is_gap for b in identify_blocks(rows, now=T0, session_hours=1)] == [
        False,
        True,
        False,
    ]


def test_active_block_projects_to_its_end_and_warns_past_the_limit() -> None:
    rows = [row(T0, 1000, 1.0), row(T0 + 0.5 * H, 1000, 1.0)]
    now = T0 + 0.75 * H  # 10:17 + 45 min = 11:02; the block ends at 15:00
    (block,) = identify_blocks(rows, now=now)
    assert block.is_active
    proj = projection(block, now)
    assert proj is not None and proj.remaining_minutes == 238
    # 2000 tokens in 30 min: 66.67/min for 238 more minutes.
    assert proj.total_tokens == round(2000 + 2000 / 30 * 238)
    assert proj.total_cost_usd == round(2 + 4 * 238 / 60, 2)
    status = limit_status(10_000, proj)
    assert status is not None and status.status == "exceeds"
    assert limit_status(20_000, proj) is not None and limit_status(20_000, proj).status == "warning"  # type: ignore[union-attr]


@pytest.mark.parametrize("report", ["daily", "weekly", "monthly", "session", "blocks"])
@pytest.mark.parametrize("flags", [[], ["-b"]])
def test_tables_fit_80_columns(report: str, flags: list[str]) -> None:
    result = CliRunner().invoke(
        main,
        [report, *map(str, FIXTURE_TREE), "-z", "UTC", "--now", LATER, *flags],
        env={"COLUMNS": "80"},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) > 3 and max(len(line) for line in lines) <= 80
    assert "Total" in result.stdout and "Hit" in result.stdout and "$" in result.stdout


def test_active_table_says_burn_rate_projection_and_limit() -> None:
    rec = json.loads((DATA / "ccusage20_blocks_active.json").read_text())
    result = CliRunner().invoke(
        main,
        [
            "blocks",
            str(DATA / "ccusage20_active"),
            "--active",
            "-t",
            "10000",
            "-z",
            "UTC",
            "--now",
            str(rec["now"]),
        ],
        env={"COLUMNS": "80"},
        catch_exceptions=False,
    )
    assert result.exit_code == 0
    out = result.stdout
    assert "ACTIVE" in out and "Burn rate" in out and "tokens/min" in out
    assert "Projected" in out and "45,624 tokens" in out
    assert "Token limit 10,000" in out and "exceeds" in out and "past the limit" in out


def test_no_active_block_is_an_empty_list(tmp_path: Path) -> None:
    out = run("blocks", *map(str, FIXTURE_TREE), "--active", "-j", "--now", LATER).stdout
    assert json.loads(out) == {"blocks": []}


def test_bad_token_limit_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["blocks", str(FIXTURE_TREE[0]), "-t", "lots"])
    assert result.exit_code == 2 and "--token-limit" in result.output


def test_offline_is_accepted_and_changes_nothing() -> None:
    a = run("monthly", str(FIXTURE_TREE[0]), "-j", "-z", "UTC").stdout
    assert run("monthly", str(FIXTURE_TREE[0]), "-j", "-z", "UTC", "-O").stdout == a
    help_text = " ".join(run("daily", "--help").stdout.split())
    assert "-O, --offline / --no-offline" in help_text and "changes nothing" in help_text


def test_not_a_log_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_bytes(b"\x00\x01 not json\n")
    result = CliRunner().invoke(main, ["daily", str(bad), "-j"])
    assert result.exit_code == 1 and "x.jsonl" in result.output


def hostile_tree(root: Path) -> Path:
    """A transcript whose prompt and reply hold a canary, and whose model and folder
    names hold terminal escapes and a reordering character."""
    folder = root / "projects" / "evil\u202eproj"
    folder.mkdir(parents=True)
    user = {
        "type": "user",
        "sessionId": "s1",
        "timestamp": "2026-03-01T10:00:00.000Z",
        "uuid": "u0",
        "message": {"role": "user", "content": "CANARY-PROMPT"},
    }
    reply = {
        "type": "assistant",
        "sessionId": "s1",
        "cwd": "/tmp/\x1b]0;x\x07dir",
        "timestamp": "2026-03-01T10:00:01.000Z",
        "uuid": "u1",
        "requestId": "r1",
        "message": {
            "id": "m1",
            "role": "assistant",
            "model": "claude-\x1b[31mred",
            "content": [{"type": "text", "text": "CANARY-REPLY"}],
            "usage": {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        },
    }
    (folder / "s1.jsonl").write_text(
        "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in (user, reply))
    )
    return root / "projects"


@pytest.mark.parametrize("report", ["daily", "weekly", "monthly", "session", "blocks"])
@pytest.mark.parametrize("flags", [[], ["-j"], ["-b", "-i"]])
def test_no_prompt_text_or_escape_reaches_the_terminal(
    report: str, flags: list[str], tmp_path: Path
) -> None:
    if report in ("session", "blocks") and "-i" in flags:
        flags = ["-b"]
    tree = hostile_tree(tmp_path)
    result = CliRunner().invoke(
        main, [report, str(tree), "-z", "UTC", "--now", LATER, *flags], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "CANARY" not in out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    if "-j" in flags:
        json.loads(out)


@pytest.mark.parametrize(
    ("report", "last", "since"),
    [("daily", 2, "20260211"), ("weekly", 2, "20260201"), ("monthly", 1, "20260201")],
)
def test_last_n_periods_counts_back_from_the_clock(report: str, last: int, since: str) -> None:
    """--last N (1: today, this week, this month) is --since the first day of the
    period N-1 before the current one."""
    now = str(datetime(2026, 2, 12, 12, tzinfo=UTC).timestamp())
    tree = [str(p) for p in FIXTURE_TREE]
    by_last = run(report, *tree, "-j", "-z", "UTC", "--now", now, "--last", str(last)).stdout
    by_since = run(report, *tree, "-j", "-z", "UTC", "--now", now, "-s", since).stdout
    assert json.loads(by_last)[report] and by_last == by_since
    everything = json.loads(run(report, *tree, "-j", "-z", "UTC").stdout)[report]
    assert len(everything) > len(json.loads(by_last)[report])


def test_recent_keeps_the_last_three_days_and_the_active_block() -> None:
    tree = [str(p) for p in FIXTURE_TREE]
    later = datetime(2026, 2, 14, 12, tzinfo=UTC).timestamp()
    out = json.loads(run("blocks", *tree, "-j", "-r", "--now", str(later)).stdout)["blocks"]
    every = json.loads(run("blocks", *tree, "-j", "--now", str(later)).stdout)["blocks"]
    cutoff = datetime.fromtimestamp(later - 3 * 86400, UTC).isoformat()[:19]
    assert out == [b for b in every if b["startTime"][:19] >= cutoff]
    assert 0 < len(out) < len(every)


def test_ccusage_display_flags_are_accepted() -> None:
    """--compact keeps a wide terminal's table within 80 columns; --single-thread and
    --no-color change nothing else."""
    tree = [str(p) for p in FIXTURE_TREE]
    wide = CliRunner().invoke(main, ["daily", *tree, "-z", "UTC"], env={"COLUMNS": "160"})
    compact = CliRunner().invoke(
        main,
        ["daily", *tree, "-z", "UTC", "--compact", "--single-thread", "--no-color"],
        env={"COLUMNS": "160"},
    )
    assert wide.exit_code == compact.exit_code == 0
    assert max(map(len, wide.stdout.splitlines())) > 80
    assert max(map(len, compact.stdout.splitlines())) <= 80
    assert "\x1b" not in compact.stdout
