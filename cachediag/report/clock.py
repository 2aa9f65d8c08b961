"""Times as people read them: in the display zone (``--timezone``), labelled with it.

JSON never goes through here: it keeps epoch seconds, whatever the zone.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo


def local_time(at: float, zone: tzinfo = UTC) -> datetime:
    return datetime.fromtimestamp(at, zone)


def format_clock(at: float, zone: tzinfo = UTC) -> str:
    """``20:19:04``."""
    return local_time(at, zone).strftime("%H:%M:%S")


def format_minute(at: float | None, zone: tzinfo = UTC) -> str:
    """``2026-02-12 20:19``; ``-`` when there is no time."""
    return "-" if at is None else local_time(at, zone).strftime("%Y-%m-%d %H:%M")


def zone_label(zone: tzinfo = UTC, at: float | None = None) -> str:
    """The zone's short name at ``at`` (``UTC``, ``PST``, ``CEST``), or its offset."""
    moment = local_time(0.0 if at is None else at, zone)
    name = moment.tzname()
    if name and not name.startswith(("+", "-")):
        return name
    offset = moment.strftime("%z")
    return f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
