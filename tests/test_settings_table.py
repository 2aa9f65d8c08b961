"""The one table of request settings (analysis.dimensions) and its two readers.

Every field of ``Fingerprint`` must be declared exactly once, as a setting or as not
one, so a new field cannot reach one of ``causes`` and ``explain`` and not the other;
the checks are run on deliberately mismatched copies too, so they can fail.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest

from cachediag.analysis.causes import Cause, diff_fingerprints
from cachediag.analysis.compare import explain_request
from cachediag.analysis.dimensions import NOT_SETTINGS, SETTINGS, SHOWN, Setting
from cachediag.analysis.ledger import Outcome, run_ledger
from cachediag.model import Fingerprint, RequestRecord

FIELDS = tuple(f.name for f in dataclasses.fields(Fingerprint))


def coverage_problems(
    table: Iterable[Setting], exempt: frozenset[str], fields: tuple[str, ...]
) -> list[str]:
    """What is wrong with how ``table`` and ``exempt`` cover ``fields``."""
    declared = Counter(s.field for s in table)
    declared.update(exempt)
    problems = [
        f"{name}: declared {declared[name]} times" for name in fields if declared[name] != 1
    ]
    problems += [f"{name}: not a Fingerprint field" for name in declared if name not in fields]
    return problems


def column_problems(table: tuple[Setting, ...]) -> list[str]:
    """Explain's columns: a label exactly when a place, places 0..n-1, labels unique."""
    problems = [s.field for s in table if (s.label is None) != (s.shown_at is None)]
    places = sorted(s.shown_at for s in table if s.shown_at is not None)
    if places != list(range(len(places))):
        problems.append(f"places {places}")
    labels = [s.label for s in table if s.label is not None]
    if len(set(labels)) != len(labels):
        problems.append(f"labels {labels}")
    fields = {s.field for s in table}
    problems += [s.field for s in table if s.yields_to is not None and s.yields_to not in fields]
    return problems


def test_every_fingerprint_field_is_declared_exactly_once() -> None:
    assert coverage_problems(SETTINGS, NOT_SETTINGS, FIELDS) == []


def test_explain_columns_are_consistent() -> None:
    assert column_problems(SETTINGS) == []
    assert [field for field, _ in SHOWN] == [
        s.field for s in sorted(SETTINGS, key=lambda s: s.shown_at or 0) if s.label is not None
    ]


_ROW = Setting("verbosity", Cause.VERBOSITY_CHANGED, "verbosity", 10)
_OTHERS = tuple(s for s in SETTINGS if s.field != "verbosity")


@pytest.mark.parametrize(
    ("table", "exempt", "fields", "culprit"),
    [
        # A field added to Fingerprint and to neither declaration.
        (SETTINGS, NOT_SETTINGS, (*FIELDS, "new_setting"), "new_setting"),
        # A setting dropped from the table.
        (_OTHERS, NOT_SETTINGS, FIELDS, "verbosity"),
        # Declared twice in the table, or as a setting and as not one.
        ((*SETTINGS, _ROW), NOT_SETTINGS, FIELDS, "verbosity"),
        (SETTINGS, NOT_SETTINGS | {"verbosity"}, FIELDS, "verbosity"),
        # A row naming a field the fingerprint does not have.
        (
            (*SETTINGS, Setting("verbosty", Cause.VERBOSITY_CHANGED, None)),
            NOT_SETTINGS,
            FIELDS,
            "verbosty",
        ),
    ],
)
def test_a_mismatched_copy_is_caught(
    table: tuple[Setting, ...], exempt: frozenset[str], fields: tuple[str, ...], culprit: str
) -> None:
    problems = coverage_problems(table, exempt, fields)
    assert problems and all(p.startswith(f"{culprit}:") for p in problems)


@pytest.mark.parametrize(
    "table",
    [
        (*_OTHERS, dataclasses.replace(_ROW, shown_at=None)),  # a label and no place
        (*_OTHERS, dataclasses.replace(_ROW, shown_at=0)),  # two settings in one place
        (*_OTHERS, dataclasses.replace(_ROW, label="model")),  # one label for two
        (*_OTHERS, dataclasses.replace(_ROW, yields_to="verbose")),  # yields to nothing
    ],
)
def test_a_mismatched_column_is_caught(table: tuple[Setting, ...]) -> None:
    assert column_problems(table) != []


def _values(name: str) -> tuple[object, object]:
    """Two different values of the type a Fingerprint field holds."""
    hint = typing.get_type_hints(Fingerprint)[name]
    (kind,) = [t for t in typing.get_args(hint) if t is not types.NoneType]
    base = typing.get_origin(kind) or kind
    samples: dict[type, tuple[object, object]] = {
        str: ("one", "two"),
        bool: (False, True),
        tuple: (("one",), ("two",)),
    }
    return samples[base]


def _print(values: dict[str, Any]) -> Fingerprint:
    return Fingerprint(**values)


def _explain(prev: Fingerprint, cur: Fingerprint) -> tuple[tuple[Cause, ...], list[str]]:
    """Causes and explain's setting labels for a miss from ``prev`` to ``cur``."""
    records = [
        RequestRecord(at=0.0, input_tokens=10, cache_read_tokens=0, cache_creation_tokens=4000,
                      output_tokens=5, model="m", fingerprint=prev),
        RequestRecord(at=10.0, input_tokens=10, cache_read_tokens=0, cache_creation_tokens=4000,
                      output_tokens=5, model="m", fingerprint=cur),
    ]  # fmt: skip
    entries = run_ledger(records)[1]
    assert entries[1].outcome is Outcome.MISS
    explanation = explain_request("main", entries, 1, None)
    assert explanation.changed is not None
    return explanation.changed.causes, [c.field for c in explanation.settings]


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.field)
def test_each_setting_names_its_cause_and_its_label(setting: Setting) -> None:
    before, after = _values(setting.field)
    prev, cur = _print({setting.field: before}), _print({setting.field: after})
    causes, labels = _explain(prev, cur)
    assert causes == (setting.cause,)
    assert labels == ([] if setting.label is None else [setting.label])
    # A value the log did not show is no change.
    assert diff_fingerprints(Fingerprint(), cur).causes == ()


def test_a_setting_yields_to_the_one_it_follows() -> None:
    (follower,) = [s for s in SETTINGS if s.yields_to is not None]
    leader = next(s for s in SETTINGS if s.field == follower.yields_to)
    prev = {name: _values(name)[0] for name in (follower.field, leader.field)}
    cur = {name: _values(name)[1] for name in (follower.field, leader.field)}
    causes, labels = _explain(_print(prev), _print(cur))
    assert causes == (leader.cause,)
    assert sorted(labels) == sorted(s.label for s in (leader, follower) if s.label)
