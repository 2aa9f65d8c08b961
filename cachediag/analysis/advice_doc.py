"""docs/advice.md from the advice table, so the page cannot drift from the code.

``python -m cachediag.analysis.advice_doc > docs/advice.md`` writes it;
tests/test_advice_doc.py checks the file equals ``render_markdown()``. Pure.
"""

from __future__ import annotations

from cachediag.analysis.advice import table_rows
from cachediag.analysis.advice_table import KNOBS

_HEAD = """# Advice per cause

What cachediag says to do about each cause of a miss (the closed set of the
spec's prompt-cache.md §4): what usually produces it in
Claude Code, and the action. `analyze`, `explain`, `audit`, `watch` and the report show
it. The actions below are the defaults, for a session whose Claude Code version is not
known; for a transcript, the advice names only the settings its version has, picks the
setting for the stream that missed (the main conversation, subagents, a named agent) and
says whether tool search was on. Where nothing avoids a cause, it says so.

This page is generated from `cachediag/analysis/advice_table.py`
(`python -m cachediag.analysis.advice_doc > docs/advice.md`); a test keeps them equal.

## Settings, flags and variables named

| name | kind | since Claude Code | docs |
|---|---|---|---|
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown() -> str:
    lines = [_HEAD.rstrip("\n")]
    for knob in KNOBS.values():
        lines.append(f"| `{knob.name}` | {knob.kind} | {knob.since} | {knob.doc} |")
    lines += ["", "## Causes", "", "| cause | usually produced by | what to do | docs |"]
    lines.append("|---|---|---|---|")
    for a in table_rows():
        doc = a.doc or "-"
        lines.append(f"| `{a.cause}` | {_cell(a.produced_by)} | {_cell(a.action)} | {doc} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
