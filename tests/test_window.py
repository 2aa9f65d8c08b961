"""--since / --until / --timezone: the forms people type, and days as a person in the zone
counts them (midnight, DST changes in America/Los_Angeles)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.commands.window import Bound, parse_bound, resolve_window
from cachediag.errors import UsageError

LA = ZoneInfo("America/Los_Angeles")
# DST began in Los Angeles on Sunday 2026-03-08 at 02:00 PST (10:00 UTC).
TIMES = [
    "2026-03-07T07:30:00Z",  # Fri 03-06 23:30 PST
    "2026-03-07T08:30:00Z",  # Sat 03-07 00:30 PST
    "2026-03-08T07:30:00Z",  # Sat 03-07 23:30 PST
    "2026-03-08T08:30:00Z",  # Sun 03-08 00:30 PST
    "2026-03-09T06:30:00Z",  # Sun 03-08 23:30 PDT
    "2026-03-09T07:30:00Z",  # Mon 03-09 00:30 PDT (23:30 on 03-08 at a fixed -8h)
]


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def write_session(path: Path, times: list[str], session_id: str = "s1") -> Path:
    lines = []
    for i, at in enumerate(times):
        lines.append(
            {
                "type": "assistant",
                "sessionId": session_id,
                "uuid": f"{session_id}-u{i}",
                "requestId": f"{session_id}-r{i}",
                "timestamp": at,
                "message": {
                    "id": f"{session_id}-m{i}",
                    "model": "claude-sonnet-4-5-20250929",
                    "usage": {
                        "input_tokens": 10,
                        "cache_read_input_tokens": 5000 * i,
                        "cache_creation_input_tokens": 5000,
                        "output_tokens": 5,
                    },
                },
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def audit_groups(*args: str) -> dict[str, int]:
    result = run("audit", "--json", "--no-progress", *args)
    assert result.exit_code == 0, result.output
    return {g["key"]: g["requests"] for g in json.loads(result.stdout)["groups"]}


@pytest.fixture
def dst(tmp_path: Path) -> Path:
    return write_session(tmp_path / "s1.jsonl", TIMES)


def test_days_split_at_midnight_in_the_zone_across_the_dst_change(dst: Path) -> None:
    la = audit_groups("--by", "day", "--timezone", "America/Los_Angeles", str(dst))
    assert la == {"2026-03-06": 1, "2026-03-07": 2, "2026-03-08": 2, "2026-03-09": 1}
    utc = audit_groups("--by", "day", "--timezone", "UTC", str(dst))
    assert utc == {"2026-03-07": 2, "2026-03-08": 2, "2026-03-09": 2}


def test_iso_weeks_and_months_in_the_zone(dst: Path, tmp_path: Path) -> None:
    # Monday 03-09 00:30 PDT opens ISO week 11; in UTC both Monday requests do.
    assert audit_groups("--by", "week", "--timezone", "America/Los_Angeles", str(dst)) == {
        "2026-W10": 5,
        "2026-W11": 1,
    }
    assert audit_groups("--by", "week", "--timezone", "UTC", str(dst)) == {
        "2026-W10": 4,
        "2026-W11": 2,
    }
    # 2026-04-01 05:00 UTC is still March 31 in Los Angeles.
    edge = write_session(tmp_path / "m.jsonl", ["2026-03-31T20:00:00Z", "2026-04-01T05:00:00Z"])
    assert audit_groups("--by", "month", "--timezone", "America/Los_Angeles", str(edge)) == {
        "2026-03": 2
    }
    assert audit_groups("--by", "month", "--timezone", "UTC", str(edge)) == {
        "2026-03": 1,
        "2026-04": 1,
    }


def test_ccusage_dates_start_at_midnight_in_the_zone(dst: Path) -> None:
    # 20260307 in Los Angeles begins at 08:00 UTC: the 07:30 UTC request is the day before.
    la = audit_groups(
        "--since",
        "20260307",
        "--until",
        "2026-03-08",
        "--by",
        "day",
        "--timezone",
        "America/Los_Angeles",
        str(dst),
    )
    assert la == {"2026-03-07": 2, "2026-03-08": 2}
    utc = audit_groups(
        "--since", "20260307", "--until", "20260307", "--by", "day", "--timezone", "UTC", str(dst)
    )
    assert utc == {"2026-03-07": 2}


def test_relative_spans_count_back_from_now(dst: Path) -> None:
    now = epoch("2026-03-09T08:00:00Z")
    assert sum(audit_groups("--since", "2h", "--now", str(now), str(dst)).values()) == 2
    assert sum(audit_groups("--since", "1d", "--now", str(now), str(dst)).values()) == 3
    assert sum(audit_groups("--since", "1w", "--now", str(now), str(dst)).values()) == 6
    # --until 1h: before 07:00, so not the 07:30 one; --until 90m ends at 06:30, exclusive.
    assert sum(audit_groups("--until", "1h", "--now", str(now), str(dst)).values()) == 5
    assert sum(audit_groups("--until", "90m", "--now", str(now), str(dst)).values()) == 4


def test_iso_date_times_with_and_without_offset(dst: Path) -> None:
    # Without an offset, a date-time is in --timezone.
    local = audit_groups(
        "--since", "2026-03-08T23:00", "--timezone", "America/Los_Angeles", "--by", "day", str(dst)
    )
    assert local == {"2026-03-08": 1, "2026-03-09": 1}
    assert sum(audit_groups("--since", "2026-03-09T07:00:00Z", str(dst)).values()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "20260230"], "no such date"),
        (["--since", "2026-13-01"], "no such date"),
        (["--since", "yesterday"], "not a date"),
        (["--since", "0d"], "longer than zero"),
        (["--since", "2026-03-09", "--until", "2026-03-08"], "window is empty"),
        (["--since", "1h", "--until", "2h"], "window is empty"),
        (["--timezone", "Mars/Olympus"], "not a known time zone"),
    ],
)
@pytest.mark.parametrize("command", ["analyze", "audit", "explain"])
def test_bad_windows_are_usage_errors(
    dst: Path, command: str, args: list[str], message: str
) -> None:
    result = run(command, *args, str(dst))
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_analyze_picks_the_sessions_of_the_window(tmp_path: Path) -> None:
    write_session(tmp_path / "old.jsonl", ["2026-02-01T10:00:00Z"], "old")
    write_session(tmp_path / "new.jsonl", ["2026-03-01T10:00:00Z"], "new")
    result = run("analyze", "--jq", ".session_id", "--since", "20260215", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert result.stdout == "new\n"
    result = run("analyze", "--until", "20260215", str(tmp_path))
    assert "Session old" in result.stdout and "Session new" not in result.stdout
    result = run("analyze", "--since", "20260401", str(tmp_path))
    assert result.stdout == "" and "No sessions in that window." in result.stderr


def test_times_shown_in_the_zone_json_unchanged(dst: Path) -> None:
    result = run("analyze", "--timezone", "America/Los_Angeles", str(dst))
    assert "2026-03-06 23:30 - 2026-03-09 00:30 PST" in result.stdout
    plain = run("analyze", "--json", "--now", "0", str(dst)).stdout
    zoned = run("analyze", "--json", "--now", "0", "--timezone", "Asia/Tokyo", str(dst)).stdout
    assert plain == zoned
    result = run("explain", "--request", "5", "--timezone", "America/Los_Angeles", str(dst))
    assert "2026-03-09 00:30:00 PDT" in result.stdout


def test_resolve_window_units() -> None:
    zone = ZoneInfo("UTC")
    w = resolve_window(parse_bound("2026-03-08"), parse_bound("20260308"), 0.0, zone)
    assert (w.since, w.until) == (epoch("2026-03-08T00:00:00Z"), epoch("2026-03-09T00:00:00Z"))
    assert w.holds(epoch("2026-03-08T23:59:59Z")) and not w.holds(epoch("2026-03-09T00:00:00Z"))
    now = datetime(2026, 3, 9, tzinfo=UTC).timestamp()
    assert parse_bound("30m").resolve(now, zone, end=False) == now - 1800
    assert parse_bound("2w").resolve(now, zone, end=False) == now - 14 * 86400
    assert isinstance(parse_bound("2026-03-08T10:00:00+01:00"), Bound)
    with pytest.raises(UsageError):
        resolve_window(parse_bound("1h"), parse_bound("1h"), now, zone)


def test_watch_once_reports_the_window_alone(dst: Path) -> None:
    args = ["watch", "--once", "--json", "--since", "2026-03-08", "--timezone", "UTC"]
    result = run(*args, str(dst))
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    requests = [e for e in events if e["event"] == "request"]
    assert [e["at"] for e in requests] == [epoch(t) for t in TIMES[2:]]
    # The session line comes before its first event in the window; the summary counts the
    # window's requests only.
    assert events[0]["event"] == "session"
    assert events[-1]["event"] == "summary" and events[-1]["requests"] == 4
    people = run("watch", "--once", "--timezone", "America/Los_Angeles", str(dst)).stdout
    assert "23:30:00 s1" in people and "00:30:00 s1" in people
    live = run("watch", "--since", "1h", str(dst))
    assert live.exit_code == 2 and "need --once or --from-start" in live.stderr


def test_watch_once_names_files_that_are_not_logs(tmp_path: Path, dst: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\x7fELF\x00\x01\x02\n")
    result = run("watch", "--once", "--json", str(empty), str(binary), str(dst))
    assert result.exit_code == 1
    assert f"Error: {empty}: empty, no log lines" in result.stderr
    assert f"Error: {binary}: binary data, not a JSON Lines log" in result.stderr
    # The readable one is still reported.
    assert sum(1 for line in result.stdout.splitlines() if '"request"' in line) == 6
