"""``cachediag schema``: JSON Schemas of what cachediag reads and writes."""

from __future__ import annotations

import json

import click


@click.command()
@click.option(
    "--output",
    "which",
    flag_value="analyze",
    help="The schema of 'cachediag analyze --json' output instead.",
)
@click.option(
    "--prompt",
    "which",
    flag_value="prompt",
    help="The schema of 'cachediag prompt --json' output instead.",
)
def schema(which: str | None) -> None:
    """Print the JSON Schema of the normalised request log (one object per line).

    Convert any log to these records and every cachediag command reads it. With
    --output, print the schema of one line of 'cachediag analyze --json' instead.
    """
    if which == "prompt":
        from cachediag.report.prompt_contract import prompt_schema

        click.echo(json.dumps(prompt_schema(), indent=2))
        return
    if which == "analyze":
        from cachediag.report.contract import analyze_schema

        click.echo(json.dumps(analyze_schema(), indent=2))
        return
    from cachediag.ingest.records import json_schema

    click.echo(json.dumps(json_schema(), indent=2))
