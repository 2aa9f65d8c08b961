"""The dataset's schema: one row per API request, never any text (docs/teams.md).

Versioned: ``SCHEMA_VERSION`` goes up when a column changes meaning or type; adding a
column does not change it (readers select columns by name). ``_schema.json`` at the
dataset's root records the version and the columns with their Arrow types. The Hive
partition columns ``day`` (UTC, ``YYYY-MM-DD``) and ``host`` live in the folder names,
not in the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
SCHEMA_FILE = "_schema.json"
PARTITIONS = ("day", "host")
POLICIES = ("5m", "1h", "keep_alive", "evidence")
"""What-if policies stored per request (``as_happened`` is the request's own cost)."""


def is_dataset(path: Path) -> bool:
    """A folder ``cachediag export`` wrote (or any Parquet file or Hive-partitioned folder)."""
    if path.is_file():
        return path.suffix == ".parquet"
    return path.is_dir() and (
        (path / SCHEMA_FILE).is_file() or any(True for _ in path.glob("day=*"))
    )


@dataclass(slots=True, frozen=True)
class Column:
    name: str
    type: str
    """Arrow type, as ``pyarrow`` spells it."""
    nullable: bool
    description: str


_NAME, _TYPE = 28, 52
"""Where the type and the description begin on a line of the tables below."""


def _table(text: str, **fill: str) -> list[Column]:
    """Columns from a table of fixed-width fields: name, Arrow type (``?``: nullable) and
    description, which goes on over the next lines that leave name and type blank;
    ``{key}`` in a name or description is filled from ``fill``."""
    rows: list[list[str]] = []
    for line in text.strip("\n").splitlines():
        name, type_, words = line[:_NAME].strip(), line[_NAME:_TYPE].strip(), line[_TYPE:]
        if name:
            rows.append([name, type_, words.strip()])
        else:
            rows[-1][2] += " " + words.strip()
    return [
        Column(name.format(**fill), t.removesuffix("?"), t.endswith("?"), words.format(**fill))
        for name, t, words in rows
    ]


# One line a column (and its description's continuation): name, Arrow type, meaning.
_REQUEST = """
request_key                 string                  unique id of the request: message id and request
                                                    id, else session, stream, index and time;
                                                    re-exports skip keys already present
message_id                  string?                 API message id
request_id                  string?                 API request id
session_id                  string                  Claude Code session (or log) id
project                     string?                 the project's path (the transcripts' cwd), else
                                                    its folder's name
source                      string                  the file it was read from
source_format               string                  claude-code, claude-code-otel, api-capture, ...
agent                       string                  the coding agent whose log it is: claude, codex,
                                                    gemini, opencode (from source_format; rows
                                                    written before it was added lack it)
stream_id                   string                  main, or one id per subagent / compaction
stream_kind                 string                  main, subagent, compaction, sidechain, side_call
request_index               int32                   position of the request in its stream
at                          timestamp[us, tz=UTC]   when the response arrived
at_s                        double                  the same, Unix epoch seconds (exact)
gap_s                       double?                 seconds since the previous request of the stream
model                       string?                 model id
input_tokens                int64                   uncached input tokens
cache_read_tokens           int64                   tokens read from the cache
cache_creation_tokens       int64                   tokens written to the cache
cache_creation_5m_tokens    int64?                  5-minute writes, when the log splits
cache_creation_1h_tokens    int64?                  1-hour writes, when the log splits
output_tokens               int64                   output tokens
ttl                         string                  TTL of the entry this request left: 5m or 1h
ttl_assumed                 bool                    the log could not tell the TTL (OpenTelemetry
                                                    without bodies): the default was used
outcome                     string                  cold, uncached, hit, miss, expected
causes                      list<item: string>      causes of a miss (empty otherwise)
cause_key                   string                  audit's --by cause key: causes joined by +,
                                                    expected_rebuild or no_miss
gap_key                     string                  audit's --by gap key: the idle-gap bucket, with
                                                    the TTL in force when it was 1h
cause_source                string?                 server, capture or inferred (misses only)
announced                   string?                 compaction, microcompaction, context_edit
reprocessed_tokens          int64                   tokens a miss or rebuild processed again
cost_usd                    double?                 what the request cost; null when its model is
                                                    unpriced
miss_cost_usd               double?                 what a miss or rebuild paid beyond a hit (0 for
                                                    others); null when unpriced
pricing_source              string                  price source and version used at export
"""
_WHATIF = """
whatif_{p}_cost_usd         double                  what this request (and its keep-alives) would
                                                    have cost under policy {p}; 0 when unpriced
whatif_{p}_misses           int32                   1 when a miss under policy {p}
whatif_{p}_unpriced         int32                   requests of this row (keep-alives included)
                                                    without a price under {p}
"""
"""Three columns a policy ``{p}``."""
_AFTER_WHATIF = """
whatif_keep_alive_requests  int32                   keep-alive requests the keep_alive policy sends
                                                    in the pause before it
session_skipped_lines       int32                   lines skipped in this request's session
user                        string?                 user label (--label user=...)
labels                      map<string, string>     every --label key=value of the export
exported_at                 timestamp[us, tz=UTC]   when the row was written
cachediag_version           string                  version that wrote the row
"""


COLUMNS: tuple[Column, ...] = (
    *_table(_REQUEST),
    *(c for p in POLICIES for c in _table(_WHATIF, p=p)),
    *_table(_AFTER_WHATIF),
)

NAMES = tuple(c.name for c in COLUMNS)


def schema_document() -> dict[str, Any]:
    """The contents of ``_schema.json``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "format": "cachediag request ledger",
        "partitioning": {"style": "hive", "columns": list(PARTITIONS)},
        "columns": [
            {
                "name": c.name,
                "type": c.type,
                "nullable": c.nullable,
                "description": c.description,
            }
            for c in COLUMNS
        ]
        + [
            {
                "name": "day",
                "type": "string (partition)",
                "nullable": False,
                "description": "UTC day of the request, YYYY-MM-DD",
            },
            {
                "name": "host",
                "type": "string (partition)",
                "nullable": False,
                "description": "host label (--label host=..., default: this machine's name)",
            },
        ],
    }


def arrow_schema() -> Any:
    """The ``pyarrow.Schema`` of the files (without the partition columns)."""
    from cachediag.dataset import require

    pa = require("pyarrow")
    types = {
        "string": pa.string(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "double": pa.float64(),
        "bool": pa.bool_(),
        "timestamp[us, tz=UTC]": pa.timestamp("us", tz="UTC"),
        "list<item: string>": pa.list_(pa.string()),
        "map<string, string>": pa.map_(pa.string(), pa.string()),
    }
    return pa.schema([pa.field(c.name, types[c.type], nullable=c.nullable) for c in COLUMNS])
