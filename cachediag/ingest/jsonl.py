"""JSON Lines, read leniently: a bad line is counted with its number, never fatal.

A leaf every reader shares (detection, the transcript pipeline's field picker, the
request-log readers, the proxy's indexes): it belongs to no stage of ``ingest.stages``,
so a stage that parses a line does not walk into another stage to do it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

try:  # orjson parses the big transcript lines several times faster; json is the fallback.
    from orjson import JSONDecodeError as _DecodeError
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - exercised only without orjson
    from json import JSONDecodeError as _DecodeError  # type: ignore[assignment]
    from json import loads as _loads  # type: ignore[assignment]

from cachediag.ingest.needles import MAX_LINE_BYTES
from cachediag.model import LineIssue

JsonObject = dict[str, Any]
LineFilter = Callable[[bytes], bool]


class BadLine(ValueError):
    """A line that cannot be used; the message says why without quoting it."""


_BOM = b"\xef\xbb\xbf"

OVERLONG = b"\x00 a line longer than MAX_LINE_BYTES \x00"
"""What a reader yields in place of a line it skipped for its length (never held)."""


def parse_line(raw: bytes) -> JsonObject:
    if raw[:3] == _BOM:  # an editor's UTF-8 byte order mark before line 1
        raw = raw[3:]
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
    """Yield ``(line_number, object)`` for every line ``want`` accepts."""
    numbered: Iterable[tuple[int, bytes]] = enumerate(stream, start=1)
    if want is not None:
        numbered = ((n, raw) for n, raw in numbered if want(raw))
    return parse_numbered(numbered, source, issues)


def parse_numbered(
    numbered: Iterable[tuple[int, bytes]], source: str, issues: list[LineIssue]
) -> Iterator[tuple[int, JsonObject]]:
    """Parse numbered raw lines; a bad one becomes an issue with its number."""
    return parsed_lines(numbered, source, issues, parse_line)


Parsed = TypeVar("Parsed")


def parsed_lines(
    numbered: Iterable[tuple[int, bytes]],
    source: str,
    issues: list[LineIssue],
    parse: Callable[[bytes], Parsed],
) -> Iterator[tuple[int, Parsed]]:
    """``parse`` each numbered raw line (blank ones are passed over); a line it finds bad
    (``BadLine``) becomes an issue with its number."""
    for number, raw in numbered:
        if raw is OVERLONG:
            issues.append(LineIssue(source, number, f"line longer than {MAX_LINE_BYTES >> 20} MiB"))
            continue
        if raw[:1] != b"{" and not raw.strip():  # a line starting with "{" is not blank
            continue
        try:
            yield number, parse(raw)
        except BadLine as exc:
            reason = str(exc)
            if not raw.endswith(b"\n"):
                reason = f"incomplete last line ({reason})"
            issues.append(LineIssue(source, number, reason))
