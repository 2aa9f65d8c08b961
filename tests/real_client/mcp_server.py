"""A tiny stdio MCP server (JSON-RPC, one message a line) with two tools, for the suite.

Claude Code starts it from ``--mcp-config``; adding it between turns changes the tools
the model is offered (deferred behind ToolSearch by default, in ``tools`` with
``ENABLE_TOOL_SEARCH=false``)."""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [
    {
        "name": "fake_lookup",
        "description": "Look a word up in the test dictionary.",
        "inputSchema": {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
    },
    {
        "name": "fake_count",
        "description": "Count the letters of a word.",
        "inputSchema": {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
    },
]


def reply(msg_id: Any, result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, msg_id = msg.get("method"), msg.get("id")
        if msg_id is None:
            continue  # a notification
        if method == "initialize":
            version = (msg.get("params") or {}).get("protocolVersion", "2025-06-18")
            reply(
                msg_id,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "realclient-fake", "version": "1.0"},
                },
            )
        elif method == "tools/list":
            reply(msg_id, {"tools": TOOLS})
        elif method == "tools/call":
            reply(msg_id, {"content": [{"type": "text", "text": "fake result"}]})
        else:
            sys.stdout.write(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": msg_id,
                        "error": {"code": -32601, "message": "method not found"},
                    }
                )
                + "\n"
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
