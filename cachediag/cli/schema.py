"""``cachediag schema``: the JSON Schema of cachediag's normalised request record."""

from __future__ import annotations

import json

import click


@click.command()
def schema() -> None:
    """Print the JSON Schema of the normalised request log (one object per line).

    Convert any log to these records and every cachediag command reads it.
    """
    from cachediag.ingest.records import json_schema

    click.echo(json.dumps(json_schema(), indent=2))
