"""The width planner and the line wrapper behind every human view."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from cachediag.report.layout import Column, compact_count, plan_columns, wrap_parts

WORD = st.text(alphabet="abc_5,:()$.", min_size=1, max_size=30)
PART = st.lists(WORD, min_size=1, max_size=5).map(" ".join)


@given(
    parts=st.lists(PART, min_size=1, max_size=8),
    width=st.integers(min_value=20, max_value=120),
    indent=st.sampled_from(["", "  ", "    "]),
    sep=st.sampled_from([" · ", "; "]),
)
def test_wrapped_lines_fit_and_keep_words_whole(
    parts: list[str], width: int, indent: str, sep: str
) -> None:
    lines = wrap_parts(parts, width, indent=indent, sep=sep)
    assert all(len(line) <= width for line in lines)
    # The words of each line, read back: the separator's mark (no word holds it) and the
    # spaces split them. A substring test would let "ab" pass inside "abc".
    mark = sep.strip()
    words_of = [set(line.replace(mark, " ").split()) for line in lines]
    for part in parts:
        for word in part.split():
            # Only a word longer than a line (a path) may be cut.
            if len(word) <= width - len(indent) - 4:
                assert any(word in words for words in words_of), (word, lines)


def test_a_line_that_fits_is_one_line() -> None:
    assert wrap_parts(["a", "b c"], 80) == ["a · b c"]
    assert wrap_parts(["aaaa", "bbbb"], 10) == ["aaaa ·", "  bbbb"]


def test_columns_give_way_by_importance() -> None:
    wide = Column("count", [["12,387,553"], ["12.4M"]], justify="right")
    extra = Column("share", [["14.8%"]], keep=10)
    name = Column("name", [["messages_rewritten"]], wraps=True)
    assert plan_columns([name, wide, extra], 80) == [name, wide, extra]
    assert wide.chosen == 0
    shown = plan_columns([name, wide, extra], 30)
    assert shown == [name, wide] and wide.chosen == 1


def test_compact_counts() -> None:
    assert [compact_count(n) for n in (812, 1_000, 99_749, 12_387_553, 4_784_048_361)] == [
        "812",
        "1.0k",
        "99.7k",
        "12.4M",
        "4.8B",
    ]


@given(
    folders=st.lists(st.from_regex(r"[a-z][a-z-]{0,20}", fullmatch=True), min_size=2, max_size=9),
    width=st.integers(min_value=30, max_value=100),
)
def test_a_long_path_breaks_between_folder_names(folders: list[str], width: int) -> None:
    """A path longer than a line is cut after a ``/``, so every folder name stays whole
    on one line (the old cut fell at the width, inside a name such as ``a-nested-dir``)."""
    path = "/" + "/".join(folders) + "/s.jsonl"
    lines = wrap_parts(["project x", path, "2026-02-10 21:11"], width, indent="  ")
    assert all(len(line) <= width for line in lines)
    tokens = [set(re.split(r"[/ ·]+", line)) for line in lines]
    for name in folders:
        if len(name) + 6 <= width:
            assert any(name in words for words in tokens), (name, lines)


def test_the_analyze_path_example() -> None:
    path = "/tmp/longp/a-very-long-project-folder-name/and-another-nested-folder/short.jsonl"
    lines = wrap_parts(["project /p", path], 60, indent="  ")
    assert lines == [
        "  project /p ·",
        "    /tmp/longp/a-very-long-project-folder-name/",
        "    and-another-nested-folder/short.jsonl",
    ]
