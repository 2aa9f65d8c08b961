"""JSON Lines, read leniently: a bad line is counted with its number, never fatal."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

try:  # orjson parses the big transcript lines several times faster; json is the fallback.
    from orjson import JSONDecodeError as _DecodeError
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - exercised only without orjson
    from json import JSONDecodeError as _DecodeError  # type: ignore[assignment]
    from json import loads as _loads  # type: ignore[assignment]

from cachediag.ingest.needles import wanted_lines
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
    """Yield ``(line_number, object)`` for every line ``want`` accepts."""
    numbered: Iterable[tuple[int, bytes]] = enumerate(stream, start=1)
    if want is not None:
        numbered = ((n, raw) for n, raw in numbered if want(raw))
    return parse_numbered(numbered, source, issues)


def parse_numbered(
    numbered: Iterable[tuple[int, bytes]], source: str, issues: list[LineIssue]
) -> Iterator[tuple[int, JsonObject]]:
    """Parse numbered raw lines; a bad one becomes an issue with its number."""
    for number, raw in numbered:
        if not raw.strip():
            continue
        try:
            yield number, parse_line(raw)
        except BadLine as exc:
            reason = str(exc)
            if not raw.endswith(b"\n"):
                reason = f"incomplete last line ({reason})"
            issues.append(LineIssue(source, number, reason))


CHUNK_BYTES = 1 << 20
_CLOSE, _CR = ord("}"), ord("\r")


def scan_lines(
    stream: IO[bytes], needles: tuple[bytes, ...], first_line: int = 1
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, raw_line)`` for the lines holding any of ``needles``, and for
    every line not ending like a JSON object, so that its parse fails and it is counted.

    Lines that cannot matter (tool output, progress: most of a transcript) are skipped
    by a C-level search over 1 MiB chunks instead of parsing each line; memory stays
    bounded by the chunk and the longest line, not by the file.
    """
    carry = b""
    line = first_line
    while True:
        block = stream.read(CHUNK_BYTES)
        buf = carry + block if carry else block
        if not buf:
            return
        end = len(buf) if not block else buf.rfind(b"\n") + 1
        if end == 0:  # one line longer than a chunk: keep reading
            carry = buf
            continue
        starts = set(wanted_lines(buf, end, needles))
        line_starts, newlines, well_formed = _line_starts(buf, end)
        if not well_formed:
            starts |= _odd_lines(buf, end)
        for start in sorted(starts):
            stop = buf.find(b"\n", start, end)
            number = line + bisect_left(line_starts, start)
            yield number, buf[start : end if stop < 0 else stop + 1]
        line += newlines
        carry = buf[end:]
        if not block:
            return


def _line_starts(buf: bytes, end: int) -> tuple[list[int], int, bool]:
    """Where each line of ``buf[:end]`` starts, how many newlines it holds, and whether
    every line ends with ``}``.

    One ``find`` per line: cheaper than counting newlines and ``}\\n`` pairs in separate
    passes over the whole chunk.
    """
    starts = [0]
    ok = True
    pos = newlines = 0
    find = buf.find
    while (nl := find(b"\n", pos, end)) >= 0:
        newlines += 1
        if nl > pos:
            last = buf[nl - 1]
            if last != _CLOSE and not (last == _CR and nl - 1 > pos and buf[nl - 2] == _CLOSE):
                ok = False
        pos = nl + 1
        starts.append(pos)
    if pos < end and not buf[pos:end].rstrip().endswith(b"}"):
        ok = False
    return starts, newlines, ok


def _odd_lines(buf: bytes, end: int) -> set[int]:
    """Starts of the lines of ``buf[:end]`` that are not blank and not ``{...}``."""
    odd: set[int] = set()
    start = 0
    while start < end:
        stop = buf.find(b"\n", start, end)
        stop = end if stop < 0 else stop
        text = buf[start:stop].strip()
        if text and not (text.startswith(b"{") and text.endswith(b"}")):
            odd.add(start)
        start = stop + 1
    return odd
