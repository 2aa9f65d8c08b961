"""A group none of whose requests had a price shows ``unpriced``, never ``$0.00`` (issue
24): in ``analyze``'s cost line and total, in ``audit``'s tables, in ``watch``'s summary
(``price unknown``, its word for it) and in the HTML page (its browser check is in
test_report_browser.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.statusline_support import T0, assistant

RATES = {
    "input_mtok": 3,
    "cache_write_5m_mtok": 3.75,
    "cache_write_1h_mtok": 6,
    "cache_read_mtok": 0.3,
    "output_mtok": 15,
}


def _line(session: str, n: int, at: float, *, read: int, write: int, model: str) -> str:
    obj = json.loads(assistant(n, at, inp=10, read=read, write=write, model=model))
    obj["sessionId"] = session
    obj["requestId"] = f"req_{session}_{n}"
    obj["message"]["id"] = f"msg_{session}_{n}"
    return json.dumps(obj) + "\n"


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, Path]:
    """Two sessions: one of a priced model, one of a model the price file lacks."""
    project = tmp_path / "projects" / "-home-me-app"
    project.mkdir(parents=True)
    for name, model, start in (("priced", "m-priced", T0), ("free", "m-unknown", T0 + 9000)):
        lines = [
            _line(name, 1, start, read=0, write=5000, model=model),
            _line(name, 2, start + 30, read=5000, write=100, model=model),
            _line(name, 3, start + 900, read=0, write=5200, model=model),
        ]
        (project / f"{name}.jsonl").write_text("".join(lines))
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"source": "test prices", "models": {"m-priced": RATES}}))
    return tmp_path / "projects", prices


def _run(*args: str) -> str:
    result = CliRunner(env={"COLUMNS": "160"}).invoke(main, [*args, "--now", str(T0 + 20000)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_analyze_says_unpriced_for_a_session_without_prices(history: tuple[Path, Path]) -> None:
    folder, prices = history
    out = _run("analyze", "--pricing", str(prices), str(folder / "-home-me-app" / "free.jsonl"))
    assert "Cost: unpriced · re-cache cost unpriced" in out
    assert "$0.00" not in out
    assert "3 request(s) unpriced, not counted" in out


def test_analyze_keeps_dollars_when_some_requests_are_priced(history: tuple[Path, Path]) -> None:
    folder, prices = history
    out = _run("analyze", "--pricing", str(prices), str(folder))
    priced, free = out.split("Session free")[0], out.split("Session free")[1]
    assert "Cost: $" in priced
    assert "Cost: unpriced" in free.split("Total:")[0]
    total = out.split("Total:")[1]
    assert "cost $" in total and "3 requests unpriced, not counted" in total


def test_audit_by_model_shows_the_unpriced_group_as_unpriced(history: tuple[Path, Path]) -> None:
    folder, prices = history
    out = _run("audit", "--no-progress", "--by", "model", "--pricing", str(prices), str(folder))
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("m-")}
    assert "unpriced" in rows["m-unknown"] and "$" not in rows["m-unknown"], rows
    assert "$" in rows["m-priced"] and "unpriced" not in rows["m-priced"], rows
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert "*" in total and "unpriced" not in total
    # The unpriced session's miss, in the table of the most expensive ones.
    miss = next(line for line in out.splitlines() if "│ free " in line)
    assert miss.split("│")[0].strip() == "unpriced", miss


def test_audit_of_nothing_priced_says_so(history: tuple[Path, Path]) -> None:
    folder, prices = history
    free = str(folder / "-home-me-app" / "free.jsonl")
    out = _run("audit", "--no-progress", "--pricing", str(prices), free)
    assert "$0.00" not in out
    summary = out.splitlines()[1]
    assert summary.startswith("3 requests · unpriced · re-cache cost unpriced"), out


@pytest.mark.parametrize(
    ("unpriced", "shown"),
    [
        (3, "price unknown"),
        (1, "re-cache cost $1.50 (1 requests unpriced)"),
        (0, "re-cache cost $1.50"),
    ],
)
def test_watch_summary_of_an_unpriced_session(unpriced: int, shown: str) -> None:
    from cachediag.follow.events import SessionRef, Tally
    from cachediag.report.watch_view import summary_line

    tally = Tally(
        SessionRef("s1", None, "s1.jsonl"),
        requests=3,
        outcomes={"miss": 1},
        reprocessed_tokens=5110,
        miss_cost_usd=0.0 if unpriced == 3 else 1.5,
        unpriced_requests=unpriced,
    )
    line = summary_line(tally).plain
    assert line.endswith(f"5,110 re-processed · {shown}"), line
