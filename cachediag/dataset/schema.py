"""The dataset's schema: one row per API request, never any text (docs/teams.md).

Versioned: ``SCHEMA_VERSION`` goes up when a column changes meaning or type; adding a
column does not change it (readers select columns by name). ``_schema.json`` at the
dataset's root records the version and the columns with their Arrow types. The Hive
partition columns ``day`` (UTC, ``YYYY-MM-DD``) and ``host`` live in the folder names,
not in the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SCHEMA_VERSION = 1
SCHEMA_FILE = "_schema.json"
PARTITIONS = ("day", "host")
POLICIES = ("5m", "1h", "keep_alive", "evidence")
"""What-if policies stored per request (``as_happened`` is the request's own cost)."""


@dataclass(slots=True, frozen=True)
class Column:
    name: str
    type: str
    """Arrow type, as ``pyarrow`` spells it."""
    nullable: bool
    description: str


def _whatif_columns() -> list[Column]:
    out: list[Column] = []
    for p in POLICIES:
        out += [
            Column(
                f"whatif_{p}_cost_usd",
                "double",
                False,
                f"what this request (and its keep-alives) would have cost under policy {p}; "
                "0 when unpriced",
            ),
            Column(f"whatif_{p}_misses", "int32", False, f"1 when a miss under policy {p}"),
            Column(
                f"whatif_{p}_unpriced",
                "int32",
                False,
                f"requests of this row (keep-alives included) without a price under {p}",
            ),
        ]
    out.append(
        Column(
            "whatif_keep_alive_requests",
            "int32",
            False,
            "keep-alive requests the keep_alive policy sends in the pause before it",
        )
    )
    return out


COLUMNS: tuple[Column, ...] = (
    Column(
        "request_key",
        "string",
        False,
        "unique id of the request: message id and request id, else session, stream, "
        "index and time; re-exports skip keys already present",
    ),
    Column("message_id", "string", True, "API message id"),
    Column("request_id", "string", True, "API request id"),
    Column("session_id", "string", False, "Claude Code session (or log) id"),
    Column("project", "string", True, "project folder name"),
    Column("source", "string", False, "the file it was read from"),
    Column("source_format", "string", False, "claude-code, claude-code-otel, api-capture, ..."),
    Column("stream_id", "string", False, "main, or one id per subagent / compaction"),
    Column("stream_kind", "string", False, "main, subagent, compaction, sidechain, side_call"),
    Column("request_index", "int32", False, "position of the request in its stream"),
    Column("at", "timestamp[us, tz=UTC]", False, "when the response arrived"),
    Column("at_s", "double", False, "the same, Unix epoch seconds (exact)"),
    Column("gap_s", "double", True, "seconds since the previous request of the stream"),
    Column("model", "string", True, "model id"),
    Column("input_tokens", "int64", False, "uncached input tokens"),
    Column("cache_read_tokens", "int64", False, "tokens read from the cache"),
    Column("cache_creation_tokens", "int64", False, "tokens written to the cache"),
    Column("cache_creation_5m_tokens", "int64", True, "5-minute writes, when the log splits"),
    Column("cache_creation_1h_tokens", "int64", True, "1-hour writes, when the log splits"),
    Column("output_tokens", "int64", False, "output tokens"),
    Column("ttl", "string", False, "TTL of the entry this request left: 5m or 1h"),
    Column(
        "ttl_assumed",
        "bool",
        False,
        "the log could not tell the TTL (OpenTelemetry without bodies): the default was used",
    ),
    Column("outcome", "string", False, "cold, uncached, hit, miss, expected"),
    Column("causes", "list<item: string>", False, "causes of a miss (empty otherwise)"),
    Column(
        "cause_key",
        "string",
        False,
        "audit's --by cause key: causes joined by +, expected_rebuild or no_miss",
    ),
    Column(
        "gap_key",
        "string",
        False,
        "audit's --by gap key: the idle-gap bucket, with the TTL in force when it was 1h",
    ),
    Column("cause_source", "string", True, "server, capture or inferred (misses only)"),
    Column("announced", "string", True, "compaction, microcompaction, context_edit"),
    Column("reprocessed_tokens", "int64", False, "tokens a miss or rebuild processed again"),
    Column("cost_usd", "double", True, "what the request cost; null when its model is unpriced"),
    Column(
        "miss_cost_usd",
        "double",
        True,
        "what a miss or rebuild paid beyond a hit (0 for others); null when unpriced",
    ),
    Column("pricing_source", "string", False, "price source and version used at export"),
    *_whatif_columns(),
    Column("session_skipped_lines", "int32", False, "lines skipped in this request's session"),
    Column("user", "string", True, "user label (--label user=...)"),
    Column("labels", "map<string, string>", False, "every --label key=value of the export"),
    Column("exported_at", "timestamp[us, tz=UTC]", False, "when the row was written"),
    Column("cachediag_version", "string", False, "version that wrote the row"),
)

NAMES = tuple(c.name for c in COLUMNS)


def schema_document() -> dict[str, Any]:
    """The contents of ``_schema.json``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "format": "cachediag request ledger",
        "partitioning": {"style": "hive", "columns": list(PARTITIONS)},
        "columns": [
            {"name": c.name, "type": c.type, "nullable": c.nullable, "description": c.description}
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
