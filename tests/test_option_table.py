"""The fast paths' option table (``commands.options``) against click's own definitions.

``analyze --json``, ``audit --json`` and the status line parse their arguments from the
table, without click; the click commands parse the same options from their decorators.
Each flag of the table must be, in the click command: the same parameter, the same kind,
the same range and the same default. A table that no longer says what click says is
reported, flag and field; the last tests show the check catching a mismatched copy.
"""

from __future__ import annotations

import enum
from pathlib import Path

import click
import pytest

from cachediag import quick, quick_audit
from cachediag.cli.analyze import analyze
from cachediag.cli.audit import audit, one_by
from cachediag.cli.common import FiniteFloat
from cachediag.cli.statusline import statusline
from cachediag.commands import options
from cachediag.commands.options import CHOICE, FLAG, FLOAT, INT, TEXT, Option
from cachediag.statusline import fast, render

COMMANDS: dict[str, click.Command] = {
    "analyze": analyze,
    "audit": audit,
    "statusline": statusline,
}


def _default(param: click.Parameter) -> object:
    """What an absent option gives the command: click's default (an unset one is None);
    for an option taken many times (``--by``), what the command makes of none."""
    if param.multiple:
        assert param.name == "by"
        return one_by(())
    value = param.default
    if isinstance(value, enum.Enum) and value.name == "UNSET":
        return None
    return value


def _kind_and_range(param: click.Parameter) -> tuple[str, float | None, float | None]:
    kind = param.type
    if isinstance(param, click.Option) and param.is_flag:
        return FLAG, None, None
    if isinstance(kind, click.IntRange):
        return INT, kind.min, kind.max
    if kind is click.INT:
        return INT, None, None
    if isinstance(kind, FiniteFloat):
        return FLOAT, kind.low, kind.high
    if isinstance(kind, click.FloatRange):
        return FLOAT, kind.min, kind.max
    if kind is click.FLOAT:
        return FLOAT, None, None
    if isinstance(kind, click.Choice):
        return CHOICE, None, None
    if kind is click.STRING:
        return TEXT, None, None
    return f"other ({kind!r})", None, None


def mismatches(table: dict[str, tuple[Option, ...]]) -> list[str]:
    """Every way ``table`` differs from the click commands, one line each."""
    found = []
    for command, declared in table.items():
        params = {
            flag: p
            for p in COMMANDS[command].params
            for flag in (*p.opts, *p.secondary_opts)
            if isinstance(p, click.Option)
        }
        for option in declared:
            where = f"{command} {option.flag}"
            param = params.get(option.flag)
            if param is None:
                found.append(f"{where}: no such click option")
                continue
            kind, low, high = _kind_and_range(param)
            said = {
                "name": (option.name, param.name),
                "kind": (option.kind, kind),
                "low": (option.low, low),
                "high": (option.high, high),
                "default": (option.default, _default(param)),
            }
            if option.kind == CHOICE:
                assert isinstance(param.type, click.Choice)
                said["choices"] = (option.choices, tuple(param.type.choices))
            found += [
                f"{where}: {field} is {ours!r} here, {theirs!r} in click"
                for field, (ours, theirs) in said.items()
                if ours != theirs
            ]
    return found


def test_the_table_says_what_click_says() -> None:
    assert mismatches(options.TABLE) == []


def test_the_status_line_table_holds_every_option_of_its_command() -> None:
    """The status line runs every option without click: none may be missing."""
    table = {o.flag for o in options.STATUSLINE}
    click_flags = {
        flag
        for p in statusline.params
        if isinstance(p, click.Option)
        for flag in (*p.opts, *p.secondary_opts)
    }
    assert click_flags - {"-h", "--help"} == table


def _ends(option: Option) -> list[tuple[str, str]]:
    """Each end of ``option``'s range as typed, and a value just past it."""
    ends = []
    for end, step in ((option.low, -1), (option.high, 1)):
        if end is None:
            continue
        if option.kind == INT:
            ends.append((str(int(end)), str(int(end) + step)))
        else:
            ends.append((repr(float(end)), repr(float(end) + step * max(abs(end), 1) * 1e-3)))
    return ends


def _click_takes(command: str, option: Option, value: str) -> bool:
    param = next(p for p in COMMANDS[command].params if option.flag in p.opts)
    try:
        param.type.convert(value, param, None)
    except click.BadParameter:
        return False
    return True


def _quick_takes(command: str, option: Option, value: str) -> bool:
    if command == "analyze":
        return quick.analyze_args(["--json", option.flag, value, "a"]) is not None
    if command == "audit":
        return quick_audit.audit_args(["--json", option.flag, value, "a"]) is not None
    try:
        fast.parse_args([option.flag, value])
    except render.UsageError:
        return False
    return True


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (command, o)
        for command, declared in options.TABLE.items()
        for o in declared
        if o.kind in (INT, FLOAT)
    ],
    ids=repr,
)
def test_fast_parsers_take_the_values_click_takes(
    command: str, option: Option, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each end of a range is taken by both ways in, what lies just past it by neither;
    an odd value a fast path takes, click takes too (it may leave one to click)."""
    monkeypatch.chdir(tmp_path)  # the path "a" is absent: the pipeline's to report
    for name in ("CACHEDIAG_STATUSLINE_BUDGET", "CACHEDIAG_STATUSLINE_WIDTH"):
        monkeypatch.delenv(name, raising=False)
    for end, past in _ends(option):
        assert _quick_takes(command, option, end), (command, option.flag, end)
        assert _click_takes(command, option, end), (command, option.flag, end)
        assert not _quick_takes(command, option, past), (command, option.flag, past)
        assert not _click_takes(command, option, past), (command, option.flag, past)
    if command == "statusline":
        # Its fast parser is the line's only one (click's command runs for help and
        # install): it reads a width as any number in range, "1e3" too, as it always has.
        return
    for odd in ("nan", "inf", "-1", "1e3", "1_0", "x", "", "007"):
        if _quick_takes(command, option, odd):
            assert _click_takes(command, option, odd), (command, option.flag, odd)


def _changed(
    table: dict[str, tuple[Option, ...]], command: str, flag: str, **what: object
) -> dict[str, tuple[Option, ...]]:
    """A copy of ``table`` whose ``flag`` of ``command`` differs as ``what`` says."""
    copy = dict(table)
    rows = []
    for o in table[command]:
        if o.flag == flag:
            fields = {
                "low": o.low,
                "high": o.high,
                "default": o.default,
                "choices": o.choices,
                **what,
            }
            kind = str(fields.pop("kind", o.kind))
            o = Option(o.flag, o.name, kind, **fields)  # type: ignore[arg-type]
        rows.append(o)
    copy[command] = tuple(rows)
    return copy


@pytest.mark.parametrize(
    ("command", "flag", "what", "field"),
    [
        ("analyze", "--now", {"high": 1e12}, "high"),
        ("statusline", "--now", {"high": 1e10}, "high"),
        ("audit", "--top", {"default": 20}, "default"),
        ("audit", "--top", {"low": 1}, "low"),
        ("audit", "--by", {"default": "day"}, "default"),
        ("audit", "--by", {"choices": ("day", "week")}, "choices"),
        ("audit", "--jobs", {"kind": FLOAT}, "kind"),
        ("statusline", "--budget", {"low": 0.1}, "low"),
        ("statusline", "--width", {"high": 500}, "high"),
        ("analyze", "--requests", {"default": True}, "default"),
    ],
)
def test_a_mismatched_copy_of_the_table_is_reported(
    command: str, flag: str, what: dict[str, object], field: str
) -> None:
    wrong = _changed(options.TABLE, command, flag, **what)
    found = mismatches(wrong)
    assert len(found) == 1, found
    assert found[0].startswith(f"{command} {flag}: {field} is "), found


def test_a_flag_click_does_not_have_is_reported() -> None:
    wrong = dict(options.TABLE)
    wrong["audit"] = (*options.AUDIT, Option("--topp", "top", INT, low=0, default=10))
    assert mismatches(wrong) == ["audit --topp: no such click option"]


def test_the_preset_choices_are_the_presets_the_line_knows() -> None:
    """``--preset``'s choices (the table, hence click's) name exactly the templates
    ``statusline.render.PRESETS`` holds, in its order."""
    assert options.PRESET.choices == tuple(render.PRESETS)
