"""Skipped lines counted, not kept: a few examples with their place, and how many.

A log of endless bad lines (``cat s.jsonl; yes``) made one ``LineIssue`` per line, all
kept to the end of the run: 600 MB in 20 s. ``Skipped`` is the list readers append
them to: it counts every one, and keeps the first ``KEEP`` of each kind (whole files
passed over, line 0; single lines) with their file and line number, for the note on
stderr. Its ``len`` is how many were skipped (what every ``len(log.issues)`` reads:
``skipped_lines`` in the JSON, the tables' note); iterating it gives the examples kept,
``examples`` copies them (``list(skipped)`` would first make room for ``len`` items).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import SupportsIndex

from cachediag.model import LineIssue

KEEP = 100
"""Examples kept of each kind: more than any note shows (``output.MAX_LISTED_ISSUES``)."""


class Skipped(list[LineIssue]):
    """``LineIssue``s counted, the first ``KEEP`` files and ``KEEP`` lines kept."""

    def __init__(self, issues: Iterable[LineIssue] = ()) -> None:
        super().__init__()
        self.files = 0
        """Whole files passed over (``line`` 0), kept or not."""
        self.lines = 0
        """Single lines skipped, kept or not."""
        self.extend(issues)

    def __len__(self) -> int:
        return self.files + self.lines

    def __reduce__(self) -> tuple[object, ...]:
        # A list subclass would be rebuilt by appending its items, counting them again.
        return (_rebuilt, (self.examples(), self.files, self.lines))

    def append(self, issue: LineIssue) -> None:
        if issue.line == 0:
            self.files += 1
            if self.files > KEEP:
                return
        else:
            self.lines += 1
            if self.lines > KEEP:
                return
        super().append(issue)

    def extend(self, issues: Iterable[LineIssue]) -> None:
        if not isinstance(issues, Skipped):
            for issue in issues:
                self.append(issue)
            return
        files, lines = self.files, self.lines
        for issue in list.__iter__(issues):  # its examples, never sized by its len
            self.append(issue)
        # What the other one counted but did not keep is counted here too.
        self.files = files + issues.files
        self.lines = lines + issues.lines

    def __iadd__(self, issues: Iterable[LineIssue]) -> Skipped:  # type: ignore[override,misc]
        self.extend(issues)
        return self

    def insert(self, index: SupportsIndex, issue: LineIssue) -> None:
        raise TypeError("Skipped keeps issues in the order met: append or extend")

    def examples(self) -> list[LineIssue]:
        """The issues kept, as a plain list."""
        return list(list.__iter__(self))  # list(self) would size itself by len(self)


def _rebuilt(kept: list[LineIssue], files: int, lines: int) -> Skipped:
    skipped = Skipped()
    list.extend(skipped, kept)
    skipped.files, skipped.lines = files, lines
    return skipped


def skipped_counts(issues: list[LineIssue]) -> tuple[int, int]:
    """(files passed over, lines skipped) of any list of issues: a ``Skipped``'s counts,
    else those of the issues it holds."""
    if isinstance(issues, Skipped):
        return issues.files, issues.lines
    files = sum(1 for issue in issues if issue.line == 0)
    return files, len(issues) - files


def issues_first(first: list[LineIssue], then: list[LineIssue]) -> Skipped:
    """``first``'s issues, then ``then``'s, counted as both were."""
    merged = Skipped(first)
    merged.extend(then)
    return merged
