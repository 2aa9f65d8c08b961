"""``cachediag export``: the request ledger as a Parquet dataset (needs cachediag[fleet])."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cachediag.cli.captures import capture_join, captures_option
from cachediag.cli.common import agent_option, pricing_option
from cachediag.console import Progress, finish_reading

TTL_CHOICES = ["5m", "1h"]


def _labels(values: tuple[str, ...]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for value in values:
        key, sep, label = value.partition("=")
        if not sep or not key.strip() or not label.strip():
            raise click.BadParameter(f"{value!r} is not key=value", param_hint="--label")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # Bytes the terminal's encoding could not decode: a label is stored as text.
            shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            raise click.BadParameter(f"{shown!r} is not UTF-8 text", param_hint="--label") from None
        labels[key.strip()] = label.strip()
    return labels


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Dataset folder (created if missing); a shared folder is fine.",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="KEY=VALUE",
    help="Label every row: host (default: this machine's name), user (default: login "
    "name), or any other key (kept in the labels column). Repeatable.",
)
@pricing_option
@click.option(
    "--otel-ttl",
    type=click.Choice(TTL_CHOICES),
    default=None,
    help="TTL assumed for OpenTelemetry requests whose TTL the export cannot tell "
    "(default: $CACHEDIAG_OTEL_TTL, else 5m).",
)
@captures_option
@agent_option
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes, this one included (default: one per core when 4 MB of the input "
    "lie outside its largest project folder, else 1).",
)
def export(
    paths: tuple[Path, ...],
    output: Path,
    labels: tuple[str, ...],
    pricing_file: Path | None,
    otel_ttl: str | None,
    jobs: int | None,
    captures_dir: Path | None = None,
    no_captures: bool = False,
    agent: str | None = None,
) -> None:
    """Write the per-request ledger of PATHS as a Parquet dataset in --output.

    One row per API request (tokens, outcome, causes, costs, what-if shares; never any
    text), in files DIR/day=YYYY-MM-DD/host=NAME/part-*.parquet with DIR/_schema.json.
    Re-running adds only requests the dataset does not hold yet, so it is safe from cron on
    every laptop into one shared folder. PATHS default to all Claude Code history and each
    other agent's home found (--agent). The proxy's captures are joined as audit joins them
    (--captures), so a dataset holds the requests only they hold and its audit agrees with
    `cachediag audit PATHS`. Needs the fleet extra: pip install '.[fleet]' in cachediag's
    checkout.

    \b
    Examples:
      cachediag export --output /shared/cachediag --label team=payments
      cachediag audit /shared/cachediag --by host
    """
    parsed = _labels(labels)
    enrich = capture_join(captures_dir, no_captures)
    from cachediag.commands.agents import agents_for
    from cachediag.dataset.export import export_dataset
    from cachediag.ingest.otel import TTL_ENV, default_ttl
    from cachediag.pipeline import default_paths

    bar = Progress("sessions") if sys.stderr.isatty() else None
    before = os.environ.get(TTL_ENV)
    if otel_ttl is not None:
        # Through the environment: forked workers read it where the exports are read.
        os.environ[TTL_ENV] = otel_ttl
    try:
        assumed = default_ttl()
        run = export_dataset(
            list(paths) or default_paths(agents_for(agent)),
            output,
            parsed,
            pricing_file=pricing_file,
            workers=jobs,
            on_progress=None if bar is None else bar.update,
            enrich=enrich,
            agents=agents_for(agent),
        )
    finally:
        if bar is not None:
            bar.close()
        if before is None:
            os.environ.pop(TTL_ENV, None)
        else:
            os.environ[TTL_ENV] = before
    s = run.stats
    click.echo(
        f"cachediag: {run.sessions_read} session(s), {s.read:,} request(s) read, {s.written:,} "
        f"new written to {output} in {len(s.files)} file(s)"
        + (f", {s.updated:,} grown since the last export updated" if s.updated else ""),
        err=True,
    )
    if s.assumed_ttl_rows:
        click.echo(
            f"cachediag: {s.assumed_ttl_rows:,} request(s) had no TTL in the log "
            f"(OpenTelemetry): {assumed} assumed (--otel-ttl)",
            err=True,
        )
    # Skipped lines, unreadable paths (a path that does not exist fails the export, as
    # it fails every command), then the errors: as audit reports them.
    finish_reading(run.issues, run.unreadable, run.errors, run.nothing_read)
