"""The transcript reader as a pipeline, and what each stage hands the next: the map.

Every input (a file, with the size the folder walk saw; or stdin) goes through five
stages, each entered once, in this order::

    input ── sniff ──> Sniffed ── detect ──> Detected ── scan ──> ScannedLines
          ── pick ──> PickedLines ── parse ──> the session's streams (-> analysis)

    stage   module                entry                       hands on
    sniff   ingest/sniff.py       sniff_file, sniff_stream    Sniffed
    detect  ingest/detect.py      detect                      Detected
    scan    ingest/lines.py       scan                        ScannedLines
    pick    ingest/fields.py      pick_fields                 PickedLines
    parse   ingest/transcript.py  parse                       items, into a Sink

- **sniff** opens the input and reads its first ``SNIFF_LINES`` lines; a small file is
  read whole in one call and those lines found where they lie.
- **detect** names the format from those lines alone (or says why it is not a log) and,
  from the versions and spelling they show, the needles the scan looks for. A log of
  another format (a capture, usage, OpenTelemetry, records) leaves the pipeline here:
  ``Sniffed.lines`` goes to its reader (``ingest.requestlog``).
- **scan** finds, by byte search, the lines holding a needle, and every line not shaped
  like a JSON object (so that it is counted as bad, not passed over).
- **pick** reads each such line's ``LineFields`` (the compiled picker, or a whole parse
  where it declines); a line that is not a JSON object becomes a skipped-line issue
  (file, line, what was wrong).
- **parse** turns the fields into request records and announced rebuilds in the
  session's streams (a ``Sink``: a file's reader, or stdin's, split by session), once per
  response however many copies of it the input holds; a line whose content is wrong (an
  assistant line without usage) becomes an issue.

``ingest.reader`` is the one module that runs the stages. A stage module imports this
module and the leaves (``jsonl``, ``needles``, ``native``, ``anthropic``, ``files``),
never another stage, so no stage walks back into one before it; the only exceptions are
one-call helpers for callers outside the reader (``sniff.open_file``: sniff and detect;
``TranscriptReader.feed_line``: pick and parse one line), which the reader never uses.
tests/test_stages.py holds all of it: the order, once each, for a file and for stdin,
and the imports.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, Final, Protocol

from cachediag.errors import NotALogError
from cachediag.ingest.anthropic import ReasonCode, UsageFields
from cachediag.model import LineIssue

SNIFF_LINES = 20
"""How many first lines sniff reads and detect judges."""
SSE_STARTS = (b"event:", b"data:")
"""How the lines of an event stream start."""


@dataclass(slots=True)
class Sniffed:
    """sniff -> detect: an input opened (``fp``, closed by whoever sniffed it) and its
    first lines read.

    Either ``data`` holds the whole input and ``block`` its first lines, with what one
    pass over them found (``plain``: no NUL byte, no line starting as an event stream's
    do; ``v2``: every Claude Code version they name is 2 or later); or ``fp`` is
    streamed and ``head`` holds its first lines, already read from it (one longer than
    ``needles.MAX_LINE_BYTES`` stands as ``jsonl.OVERLONG``)."""

    source: str
    fp: IO[bytes]
    head: list[bytes]
    data: bytes | None = None
    block: bytes = b""
    plain: bool = False
    v2: bool = False

    def lines(self) -> Iterable[bytes]:
        """Every line from the first: what a reader of another format reads."""
        if self.data is None:
            return itertools.chain(self.head, self.fp)
        return io.BytesIO(self.data)


@dataclass(slots=True)
class Detected:
    """detect -> scan: the input's format (``fmt``) or why it is not a log (``error``:
    then ``fmt`` is ``None``), and the needles a line must hold to matter when it is read
    as a transcript (``ingest.needles``)."""

    sniffed: Sniffed
    fmt: str | None
    error: NotALogError | None
    needles: tuple[bytes, ...] = ()

    @property
    def fp(self) -> IO[bytes]:
        """The open input (``Sniffed.fp``)."""
        return self.sniffed.fp


ScannedLines = Iterator[tuple[int, bytes]]
"""scan -> pick: ``(line number, raw line)`` of each line that can matter, in order."""

MessageFields = tuple[str | None, str | None, UsageFields | None, ReasonCode, int]
"""An assistant message: model, id, usage (``None``: not an object), what its
diagnostics say (``anthropic.reason_code``), its count of applied context edits."""

LineFields = tuple[
    str | None,  # type
    str | None,  # uuid
    Any,  # parentUuid: a str, None (null or missing) or False (any other value)
    bool,  # isSidechain is true
    str | None,  # agentId (non-empty)
    Any,  # timestamp, as written
    float | None,  # the timestamp's epoch seconds, when the picker read them
    str | None,  # requestId
    bool,  # isApiErrorMessage is true
    str | None,  # subtype
    bool,  # isCompactSummary is true
    str | None,  # cwd (non-empty)
    str | None,  # sessionId (non-empty)
    MessageFields | None,  # message (None: not an object)
]
"""A transcript line's fields, in the compiled picker's order (``ingest.fields``): a str
field that is not a str is ``None``."""

# Where each field is (Final: mypy then knows each one's type).
TYPE: Final = 0
UUID: Final = 1
PARENT: Final = 2
SIDECHAIN: Final = 3
AGENT: Final = 4
TIMESTAMP: Final = 5
AT: Final = 6
CWD: Final = 11
SESSION: Final = 12

PickedLines = Iterator[tuple[int, LineFields]]
"""pick -> parse: ``(line number, fields)`` of each line that is a JSON object."""


class Sink(Protocol):
    """What parse feeds: a file's one ``TranscriptReader``, or stdin's sessions."""

    def take(self, f: LineFields, line: int) -> object:
        """Read one line's fields (``BadLine`` when its content is wrong)."""

    def issues_of(self, f: LineFields) -> list[LineIssue]:
        """Where a wrong line of these fields is reported: its session's issues."""
