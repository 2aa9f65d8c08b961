"""``--captures DIR``: the capture proxy's records joined to the transcripts a command reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from cachediag.errors import InputError

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


def capture_join(captures_dir: Path | None, no_captures: bool) -> Any:
    """The pipeline's ``enrich`` for these options, or ``None``; the index is built now,
    so worker processes inherit it instead of each scanning the folder."""
    if no_captures:
        return None
    if captures_dir is None:
        # The proxy's folder is looked for without importing the index (most runs have
        # no captures): as ``proxy.index.default_captures_dir`` does.
        from cachediag.proxy.logfiles import default_log_dir

        folder = default_log_dir()
        if not folder.is_dir():
            return None
    else:
        folder = captures_dir.expanduser()
        if not folder.is_dir():
            raise InputError(f"--captures {folder}: no such folder")
    from cachediag.proxy.index import CaptureJoin

    join = CaptureJoin(folder)
    join.load()
    return join
