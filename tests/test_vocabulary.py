"""One vocabulary (issue 28): the extra cost of a miss or rebuild beyond a hit is the
"re-cache cost" and the tokens it processed again are "re-processed" tokens, in every
command's text output and ``--help``.

The old names (``redone``, ``re-caching``, "misses and rebuilds", "tokens re-processed",
the audit's ``share`` column) must not come back; where a command shows what misses cost,
the one name must be there. Each command runs on the real spotter sessions (four misses
and an expected rebuild) at 80 columns.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import COMMANDS, main
from tests.conftest import FIXTURES, REAL, SPOTTER_SESSION

SPOTTER = str(REAL / "spotter")
NOW = "1770930400"  # 2026-02-12 21:06:40 UTC: the spotter session's cache still warm
OLD_NAMES = ("redone", "re-caching", "misses and rebuilds", "tokens re-processed")
OLD_SHARE_HEADER = re.compile(r"┃\s*share\s*(┃|$)", re.M)

# Each command, its arguments, and the words its output must hold (the cost of misses
# where it shows one).
RUNS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "analyze": ([SPOTTER], ("re-cache cost", "re-proc", "expected rebuilds $")),
    "audit": (["--no-progress", SPOTTER], ("re-cache", "re-processed", "of spend")),
    "audit-by-cause": (["--no-progress", "--by", "cause", "--tokens", SPOTTER], ("re-cache",)),
    "explain": ([str(SPOTTER_SESSION)], ("re-cache cost", "re-processed tokens")),
    "watch": (["--once", SPOTTER], ("re-cache cost", "re-processed")),
    "warm": (["--now", NOW, SPOTTER], ()),
    "prompt": ([str(FIXTURES / "prompt" / "lookback_exceeded.jsonl")], ()),
    "tune": (["--since", "2026-01-01", SPOTTER], ()),
    # The usage tables' column (cachediag/usage) is headed "Re-cache".
    "daily": ([SPOTTER], ("re-cache",)),
    "weekly": ([SPOTTER], ("re-cache",)),
    "monthly": ([SPOTTER], ("re-cache",)),
    "session": ([SPOTTER], ("re-cache",)),
    "blocks": ([SPOTTER], ()),
}


def _invoke(args: list[str], home: Path) -> str:
    env = {
        "COLUMNS": "80",
        "TZ": "UTC",
        "HOME": str(home),  # tune reads settings.json: never the real one
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    result = CliRunner().invoke(main, args, env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.output


def _no_old_names(text: str, where: str) -> None:
    low = text.lower()
    for old in OLD_NAMES:
        assert old not in low, f"{where}: {old!r} in\n{text}"
    assert not OLD_SHARE_HEADER.search(text), f"{where}: a 'share' column in\n{text}"


@pytest.mark.parametrize("name", sorted(RUNS))
def test_text_output_speaks_one_vocabulary(name: str, tmp_path: Path) -> None:
    args, words = RUNS[name]
    command = name.split("-")[0]
    out = _invoke([command, *args], tmp_path)
    assert out.strip(), f"{name} printed nothing"
    _no_old_names(out, name)
    for word in words:
        assert word in out.lower(), f"{name}: {word!r} missing in\n{out}"


def test_analyze_splits_the_re_cache_cost_where_both_kinds_are_shown(tmp_path: Path) -> None:
    # The long session: 3 misses and 1 expected rebuild; its cost line and the total
    # name both parts, and the parts add up to the re-cache cost shown (to a cent).
    out = _invoke(["analyze", "--now", NOW, SPOTTER], tmp_path)
    flat = " ".join(out.split())
    pattern = re.compile(
        r"re-cache cost \$(\d+\.\d\d) \(misses \$(\d+\.\d\d), expected rebuilds \$(\d+\.\d\d)\)"
    )
    found = pattern.findall(flat)
    assert len(found) == 2, flat  # the session's cost line and the total line
    for total, misses, rebuilds in found:
        assert abs(float(misses) + float(rebuilds) - float(total)) <= 0.011


def test_audit_summary_names_both_parts_of_the_re_cache_cost(tmp_path: Path) -> None:
    out = _invoke(["audit", "--no-progress", SPOTTER], tmp_path)
    flat = " ".join(out.split())
    m = re.search(
        r"re-cache cost \$(\d+\.\d\d) \([\d.]+% of spend\) · \d+ misses \$(\d+\.\d\d) · "
        r"\d+ expected rebuilds? \$(\d+\.\d\d)",
        flat,
    )
    assert m, flat
    total, misses, rebuilds = (float(g) for g in m.groups())
    assert abs(misses + rebuilds - total) <= 0.011


def test_audit_json_recommendation_is_the_text_views(tmp_path: Path) -> None:
    import json

    data = json.loads(_invoke(["audit", "--no-progress", "--json", SPOTTER], tmp_path))
    text = " ".join(_invoke(["audit", "--no-progress", SPOTTER], tmp_path).split())
    assert f"Recommendation: {data['whatif']['recommendation']}" in text


@pytest.mark.parametrize("command", ["", *sorted(COMMANDS)])
def test_help_speaks_one_vocabulary(command: str, tmp_path: Path) -> None:
    out = _invoke([*([command] if command else []), "--help"], tmp_path)
    assert "Usage:" in out
    _no_old_names(out, f"cachediag {command} --help")
