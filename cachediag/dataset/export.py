"""From logs to the dataset: the library call behind ``cachediag export``.

Sessions are read as ``audit`` reads them (``pipeline.Run``: same discovery, the same
deduplication and worker processes, each response once: ``rendered_once``); each worker
sends back its session's rows.
"""

from __future__ import annotations

import getpass
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cachediag.dataset.rows import RowRender
from cachediag.dataset.write import DatasetWriter, ExportStats, host_lock
from cachediag.model import LineIssue, SessionLog
from cachediag.pipeline import Run
from cachediag.pipeline_audit import rendered_once


def default_labels() -> dict[str, str]:
    """``host`` is this machine's name and ``user`` the login name, unless labelled."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return {"host": socket.gethostname() or "unknown", "user": user}


@dataclass(slots=True)
class ExportRun:
    stats: ExportStats
    sessions_read: int = 0
    errors: list[str] = field(default_factory=list)
    issues: list[LineIssue] = field(default_factory=list)
    unreadable: list[LineIssue] = field(default_factory=list)
    """Files and folders that could not be read, as ``pipeline.Run`` reports them."""
    nothing_read: bool = False


def export_dataset(
    paths: list[Path],
    output: Path,
    labels: dict[str, str],
    *,
    pricing_file: Path | None = None,
    workers: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    enrich: Callable[[SessionLog], SessionLog] | None = None,
    agents: frozenset[str] | None = None,
) -> ExportRun:
    """Add the requests under ``paths`` that ``output`` does not hold yet; ``enrich``
    (the captures' join, as ``run_audit`` takes it) runs on each session first."""
    merged = {**default_labels(), **labels}
    writer = DatasetWriter(output, merged["host"], merged)
    writer.open()
    reading = Run(jobs=workers, on_progress=on_progress, enrich=enrich, agents=agents)
    run = ExportRun(writer.stats)
    with host_lock(output, writer.host):
        for rows in rendered_once(reading, paths, None, RowRender(pricing_file)):
            run.sessions_read += 1
            writer.add(rows)
        writer.flush()
    run.errors.extend(reading.errors)
    run.issues.extend(reading.issues)
    run.unreadable.extend(reading.unreadable)
    run.nothing_read = reading.nothing_read
    return run
