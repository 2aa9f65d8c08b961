"""JSON Lines, read leniently: a bad line is counted with its number, never fatal."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

try:  # orjson parses the big transcript lines several times faster; json is the fallback.
    from orjson import JSONDecodeError as _DecodeError
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - exercised only without orjson
    from json import JSONDecodeError as _DecodeError  # type: ignore[assignment]
    from json import loads as _loads  # type: ignore[assignment]

from cachediag.model import LineIssue

JsonObject = dict[str, Any]
LineFilter = Callable[[bytes], bool]


class BadLine(ValueError):
    """A line that cannot be used; the message says why without quoting it."""


def parse_line(raw: bytes) -> JsonObject:
    try:
        obj = _loads(raw)
    except UnicodeDecodeError as exc:
        raise BadLine("not valid UTF-8") from exc
    except _DecodeError as exc:
        # orjson reports bad UTF-8 as a decode error; say which, it is the likelier fix.
        reason = "not valid UTF-8" if "UTF-8" in str(exc) else "not valid JSON"
        raise BadLine(reason) from exc
    except RecursionError as exc:
        raise BadLine("JSON nested too deeply") from exc
    if not isinstance(obj, dict):
        raise BadLine(f"a JSON {type(obj).__name__}, not an object")
    return obj


def iter_objects(
    stream: Iterable[bytes],
    source: str,
    issues: list[LineIssue],
    want: LineFilter | None = None,
) -> Iterator[tuple[int, JsonObject]]:
    """Yield ``(line_number, object)`` for every line ``want`` accepts.

    ``want`` sees raw bytes so that lines which cannot matter are never parsed; that is
    most of a transcript (tool output, progress) and most of the time spent.
    """
    number = 0
    for number, raw in enumerate(stream, start=1):
        if want is not None and not want(raw):
            continue
        if not raw.strip():
            continue
        try:
            yield number, parse_line(raw)
        except BadLine as exc:
            reason = str(exc)
            if not raw.endswith(b"\n"):
                reason = f"incomplete last line ({reason})"
            issues.append(LineIssue(source, number, reason))
