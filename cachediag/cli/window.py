"""``--since``/``--until``/``--timezone`` for every command: click's side of the windows.

What the bounds and zones mean is ``cachediag.commands.window``'s; these types turn an
impossible date or an unknown zone into click's usage error.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from datetime import tzinfo
from typing import Any, TypeVar

import click

from cachediag.commands.window import BOUND_HELP, Bound, local_zone, parse_bound, usable

# Where cli/watch.py still looks for them (the others import cachediag.commands.window):
from cachediag.commands.window import resolve_window as resolve_window
from cachediag.commands.window import zone_or_local as zone_or_local


class BoundType(click.ParamType):  # type: ignore[type-arg]
    """A click type for ``--since`` / ``--until``: an impossible date is a usage error."""

    name = "WHEN"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Bound:
        if isinstance(value, Bound):
            return value
        text = str(value).strip()
        try:
            bound = parse_bound(text)
        except ValueError as exc:
            self.fail(f"{text!r}: {exc} (expected {BOUND_HELP})", param, ctx)
        if not usable(bound, _time.time()):
            self.fail(
                f"{text!r}: outside the dates cachediag can use (years 1 to 9998)", param, ctx
            )
        return bound


class ZoneType(click.ParamType):  # type: ignore[type-arg]
    """An IANA zone name (``America/Los_Angeles``, ``UTC``) or ``local``."""

    name = "TZ"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tzinfo:
        if isinstance(value, tzinfo):
            return value
        text = str(value).strip()
        if text.lower() == "local":
            return local_zone()
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            return ZoneInfo(text)
        except (ZoneInfoNotFoundError, ValueError):
            self.fail(
                f"{text!r}: not a known time zone (an IANA name such as "
                "America/Los_Angeles, Europe/Paris or UTC)",
                param,
                ctx,
            )


F = TypeVar("F", bound=Callable[..., Any])


def window_options(func: F) -> F:
    """``--since``, ``--until`` and ``--timezone``, in that order on ``--help``."""
    decorators = [
        click.option(
            "--since",
            type=BoundType(),
            help=f"Only from this moment on: {BOUND_HELP}. A date starts at midnight "
            "in --timezone.",
        ),
        click.option(
            "--until",
            type=BoundType(),
            help="Only up to this moment (same forms; a date includes that whole day).",
        ),
        zone_option,
    ]
    for decorate in reversed(decorators):
        func = decorate(func)
    return func


zone_option = click.option(
    "--timezone",
    "zone",
    type=ZoneType(),
    metavar="TZ",
    help="Time zone for the times shown and for days, weeks and months: an IANA name "
    "(America/Los_Angeles, UTC); default: this machine's zone.",
)
