"""docs/architecture.md names only modules and tests that exist.

The page is the map a new engineer follows ("a new cause goes in ..."); a path that was
renamed or deleted sends them to nothing. Every ``cachediag/...`` and ``tests/...`` path
it names, a file or a folder, must exist in the checkout; the check is also run on a
deliberately wrong page, so it can fail.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"

# A path starts at a word boundary with one of the two roots and runs over path
# characters; a sentence's full stop or comma after it is not part of it.
_PATH = re.compile(r"(?<![\w./-])((?:cachediag|tests)/[\w./-]*)")


def named_paths(text: str) -> list[str]:
    """Every ``cachediag/...`` or ``tests/...`` path in ``text``, in order, once each."""
    seen: dict[str, None] = {}
    for match in _PATH.finditer(text):
        seen.setdefault(match.group(1).rstrip(".,-"), None)
    return list(seen)


def missing(paths: list[str], root: Path) -> list[str]:
    return [p for p in paths if not (root / p).exists()]


def test_every_named_path_exists() -> None:
    paths = named_paths(DOC.read_text(encoding="utf-8"))
    assert missing(paths, ROOT) == []


def test_the_page_names_the_rooms_and_the_guards() -> None:
    # A page that named nothing would pass the check above: hold it to naming the
    # reader's map, each compiled extension and the tests that keep the rules.
    paths = set(named_paths(DOC.read_text(encoding="utf-8")))
    for expected in (
        "cachediag/ingest/stages.py",
        "cachediag/ingest/_scan.c",
        "cachediag/ingest/_fields.c",
        "cachediag/ingest/_walk.c",
        "cachediag/commands/options.py",
        "tests/test_imports.py",
        "tests/test_option_table.py",
        "tests/test_stages.py",
    ):
        assert expected in paths


def test_the_pattern_reads_paths_as_written() -> None:
    text = (
        "See `cachediag/ingest/stages.py`. The rooms are cachediag/ingest/ and "
        "cachediag/cli/, kept by tests/test_imports.py, (tests/test_stages.py); "
        "not mycachediag/x.py nor docs/cachediag/y.py."
    )
    assert named_paths(text) == [
        "cachediag/ingest/stages.py",
        "cachediag/ingest/",
        "cachediag/cli/",
        "tests/test_imports.py",
        "tests/test_stages.py",
    ]


def test_a_renamed_module_is_reported() -> None:
    text = "The reader is cachediag/ingest/reader.py; the scan cachediag/ingest/scan_old.py."
    assert missing(named_paths(text), ROOT) == ["cachediag/ingest/scan_old.py"]
