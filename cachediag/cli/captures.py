"""``--captures DIR``: the capture proxy's records joined to the transcripts a command reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from cachediag.commands.captures import capture_join

__all__ = ["capture_join", "captures_option"]

F = TypeVar("F", bound=Callable[..., Any])


def captures_option(fn: F) -> F:
    fn = click.option(
        "--no-captures",
        is_flag=True,
        help="Do not join capture records, even from the proxy's default folder.",
    )(fn)
    return click.option(
        "--captures",
        "captures_dir",
        type=click.Path(path_type=Path, file_okay=False),
        metavar="DIR",
        help="Join the records of 'cachediag proxy' in DIR to the transcripts read, for "
        "exact causes (default: ~/.local/state/cachediag/captures when it exists).",
    )(fn)
