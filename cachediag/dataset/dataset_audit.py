"""``cachediag audit`` over datasets: the library calls behind its dataset path."""

from __future__ import annotations

from pathlib import Path

from cachediag.analysis.group_keys import GroupBy
from cachediag.dataset.dialect import Dialect, Window
from cachediag.dataset.query import run_audit
from cachediag.dataset.sql import audit_sql
from cachediag.errors import CachediagError
from cachediag.pipeline_audit import AuditOptions, AuditRun


def dataset_sql(by: GroupBy, options: AuditOptions, dialect: str) -> str:
    window = Window(options.since, options.until, options.zone)
    return audit_sql(by, window, Dialect(dialect), options.top)


def dataset_audit(
    paths: list[Path], by: GroupBy, options: AuditOptions, *, session_lines: bool = True
) -> AuditRun[None]:
    """``session_lines``: the output lists every session (``--json``'s
    ``whatif_by_session``); tables and CSV only count them."""
    if options.pricing_file is not None:
        raise CachediagError(
            "--pricing does not apply to a dataset: its rows were priced at export "
            "(run cachediag export --pricing FILE into a new folder)"
        )
    window = Window(options.since, options.until, options.zone)
    result = run_audit(paths, by, window, top=options.top, session_lines=session_lines)
    run: AuditRun[None] = AuditRun(
        result.audit, result.pricing_source, sessions_read=result.sessions
    )
    return run
