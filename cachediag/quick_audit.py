"""``cachediag audit --json PATH...`` without click (as ``quick`` runs ``analyze``):
argument recognition and dispatch.

The quick path takes paths and the options of ``commands.options.AUDIT``: ``--json``,
``--by`` (any grouping a transcript has), ``--top``, ``--now``, ``--jobs``,
``--no-captures`` and ``--progress``/``--no-progress`` (captures are joined from the
proxy's default folder, as ``analyze`` joins them); anything else, and paths that are
all datasets (``cachediag export``), goes to click. The run is ``commands.audit``'s.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cachediag.commands.options import AUDIT, BY, BY_CHOICES, BY_DEFAULT, FLAG, TOP_DEFAULT, by_flag
from cachediag.console import plain_streams, run_guarded
from cachediag.quick import add_path, paths_click_takes, read_value

if TYPE_CHECKING:
    from cachediag.pipeline_audit import AuditRun

_QUICK_BY = frozenset(BY_CHOICES) - {"host", "user"}
"""What ``--by`` the quick path takes: host and user need a dataset."""
_AUDIT = by_flag(AUDIT)


@dataclass(slots=True)
class QuickAudit:
    """What ``audit`` arguments the quick path takes say (defaults: the command's)."""

    paths: list[Path]
    by: str = BY_DEFAULT
    top: int = TOP_DEFAULT
    now: float | None = None
    jobs: int | None = None
    progress: bool | None = None
    no_captures: bool = False


def audit_args(args: list[str]) -> QuickAudit | None:
    """What ``audit`` arguments say when ``--json`` is given with paths and only the
    options the quick path takes (the last of a repeated option counts, but for ``--by``,
    which click refuses twice); ``None`` for anything else."""
    taken = QuickAudit([])
    as_json = False
    by_given = False
    given = iter(args)
    for arg in given:
        option = _AUDIT.get(arg)
        if option is None:
            if not add_path(arg, taken.paths):
                return None
        elif option.name == "as_json":
            as_json = True
        elif option.name == "progress":
            taken.progress = arg == "--progress"
        elif option.kind == FLAG:
            setattr(taken, option.name, True)
        elif option is BY:
            # A second --by is click's usage error (one grouping per audit), not the last.
            if by_given:
                return None
            by_given = True
            taken.by = next(given, "")
            if taken.by not in _QUICK_BY:
                return None
        elif (value := read_value(option, next(given, ""))) is None:
            return None
        else:
            setattr(taken, option.name, value)
    if not as_json or not paths_click_takes(taken.paths):
        return None
    from cachediag.dataset.schema import is_dataset

    if all(is_dataset(p) for p in taken.paths):
        return None
    return taken


def audit(args: QuickAudit) -> None:
    """``cli.audit.audit`` for the arguments ``audit_args`` takes."""
    from cachediag.analysis.rollup import GroupBy
    from cachediag.commands.audit import AuditInputs, audit_report
    from cachediag.console import echo_bytes, finish_reading
    from cachediag.report.audit_report import report_json

    inputs = AuditInputs(
        tuple(args.paths),
        None,
        None,
        None,
        args.now,
        args.top,
        None,
        args.progress,
        args.jobs,
        no_captures=args.no_captures,
    )
    window, display = inputs.window()
    run: AuditRun[None] = inputs.read(window, display)
    echo_bytes(report_json(audit_report(run, GroupBy(args.by), window)))
    finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)


def main(args: list[str]) -> None:
    """Run ``cachediag audit ARGS`` here and exit when click is not needed for them;
    return (having done nothing) when it is."""
    taken = audit_args(args[1:]) if args[:1] == ["audit"] and plain_streams() else None
    if taken is not None:
        sys.exit(run_guarded(lambda: audit(taken)))
