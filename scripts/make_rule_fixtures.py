"""Write the small hand-built transcripts in fixtures/rules/ (one per accounting rule).

Each fixture is a Claude Code 2.1-style transcript with only the lines that matter:
user prompts, assistant responses (one line per content block, usage repeated), and
compaction boundaries. The expected results live beside each file in
``<name>.expected.json`` and are written by hand, not by this script.

Run: python scripts/make_rule_fixtures.py
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
SESSION = "00000000-0000-4000-8000-000000000000"
OPUS = "claude-opus-4-6"
SONNET = "claude-sonnet-4-5-20250929"


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Builder:
    def __init__(self, version: str = "2.1.39") -> None:
        self.lines: list[dict[str, Any]] = []
        self.n = 0
        self.parent: str | None = None
        self.version = version

    def _uuid(self) -> str:
        self.n += 1
        return f"00000000-0000-4000-8000-{self.n:012d}"

    def _envelope(self, t: float, kind: str, sidechain: bool = False) -> dict[str, Any]:
        uuid = self._uuid()
        line = {
            "parentUuid": self.parent,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": "/home/USER/project",
            "sessionId": SESSION,
            "version": self.version,
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": iso(t),
        }
        self.parent = uuid
        return line

    def user(self, t: float) -> None:
        line = self._envelope(t, "user")
        line["message"] = {"role": "user", "content": "(prompt text)"}
        self.lines.append(line)

    def response(
        self,
        t: float,
        inp: int,
        read: int,
        create: int,
        out: int = 10,
        *,
        model: str = OPUS,
        one_hour: bool = False,
        blocks: int = 1,
        diagnostics: Any = "absent",
        msg: str | None = None,
        sidechain: bool = False,
        request: str | None = None,
    ) -> str:
        """One API response, written as ``blocks`` lines whose output count grows."""
        self.user(t - 2)
        msg = msg or f"msg_{self.n:04d}"
        for b in range(blocks):
            line = self._envelope(t + b * 0.5, "assistant", sidechain)
            line["requestId"] = request or f"req_{msg}"
            split = {
                "ephemeral_5m_input_tokens": 0 if one_hour else create,
                "ephemeral_1h_input_tokens": create if one_hour else 0,
            }
            message: dict[str, Any] = {
                "id": msg,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": "(answer)"}],
                "stop_reason": None if b < blocks - 1 else "end_turn",
                "usage": {
                    "input_tokens": inp,
                    "cache_creation_input_tokens": create,
                    "cache_read_input_tokens": read,
                    "cache_creation": split,
                    "output_tokens": out * (b + 1),
                    "service_tier": "standard",
                },
            }
            if diagnostics != "absent":
                message["diagnostics"] = diagnostics
            line["message"] = message
            self.lines.append(line)
        return msg

    def compact(self, t: float, subtype: str = "compact_boundary") -> None:
        line = self._envelope(t, "system")
        line.update(
            subtype=subtype,
            content="Conversation compacted",
            compactMetadata={"trigger": "auto", "preTokens": 150000},
        )
        line["parentUuid"] = None
        self.lines.append(line)

    def compact_summary(self, t: float) -> None:
        """Claude Code 1.0.x's compaction: no boundary line, only the summary, which
        starts a new chain."""
        line = self._envelope(t, "user")
        line.update(isCompactSummary=True, parentUuid=None)
        line["message"] = {"role": "user", "content": "(summary of the conversation)"}
        self.lines.append(line)

    def api_error(self, t: float) -> None:
        line = self._envelope(t, "assistant")
        line.update(requestId=None, isApiErrorMessage=True)
        line["message"] = {
            "id": "err",
            "model": "<synthetic>",
            "role": "assistant",
            "content": [{"type": "text", "text": "API Error"}],
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        self.lines.append(line)

    def write(self, name: str) -> None:
        path = OUT / f"{name}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in self.lines))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)

    b = Builder()  # cold first request, then hits; one response split over 3 lines
    b.response(T0, 3, 10000, 20000, blocks=3)
    b.response(T0 + 10, 1, 30000, 500, blocks=2)
    b.response(T0 + 20, 1, 30500, 700)
    b.write("hit")

    b = Builder()  # no cache tokens ever
    b.response(T0, 5000, 0, 0)
    b.response(T0 + 10, 5200, 0, 0)
    b.write("uncached")

    b = Builder()  # caching appears only on the second request
    b.response(T0, 5000, 0, 0)
    b.response(T0 + 10, 3, 0, 5300)
    b.write("cold_after_uncached")

    b = Builder()  # 6m40s pause under the 5m TTL
    b.response(T0, 3, 10000, 20000)
    b.response(T0 + 400, 3, 0, 30500)
    b.write("ttl_expired_5m")

    b = Builder()  # 1h writes, then a pause of 1h06m40s
    b.response(T0, 3, 0, 30000, one_hour=True)
    b.response(T0 + 4000, 3, 0, 30500, one_hour=True)
    b.write("ttl_expired_1h")

    b = Builder()  # 1h entry inherited by a request that wrote nothing; 20-min pause
    b.response(T0, 3, 0, 30000, one_hour=True)
    b.response(T0 + 10, 3, 30000, 0)
    b.response(T0 + 1210, 3, 30000, 600)
    b.write("ttl_inherited_1h_hit")

    b = Builder()  # inherited 1h TTL: a miss 20 minutes later is not an expiry
    b.response(T0, 3, 0, 30000, one_hour=True)
    b.response(T0 + 10, 3, 30000, 0)
    b.response(T0 + 1210, 3, 0, 30600)
    b.write("unknown")

    b = Builder()
    b.response(T0, 3, 0, 30000)
    b.response(T0 + 30, 3, 0, 30500, model=SONNET)
    b.write("model_changed")

    b = Builder()  # read falls back to the tools+system prefix 5 s later
    b.response(T0, 3, 20000, 60000)
    b.response(T0 + 5, 3, 21500, 59000)
    b.write("messages_rewritten")

    b = Builder()  # the API says why
    b.response(T0, 3, 0, 30000)
    b.response(
        T0 + 20,
        3,
        0,
        30500,
        diagnostics={
            "cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 30000}
        },
    )
    b.write("tools_changed")

    b = Builder()  # the server compared and found no divergence, inside the TTL
    b.response(T0, 3, 0, 30000)
    b.response(T0 + 20, 3, 0, 30500, diagnostics=None)
    b.write("likely_server_side")

    b = Builder()  # compaction 2 s before the rebuild: expected; then a later rebuild-free hit
    b.response(T0, 3, 140000, 2000)
    b.compact(T0 + 60)
    b.response(T0 + 62, 3, 21500, 12000)
    b.response(T0 + 70, 3, 33500, 400)
    b.write("compaction_expected")

    b = Builder()  # user waits past the TTL after compacting: a miss
    b.response(T0, 3, 140000, 2000)
    b.compact(T0 + 60)
    b.response(T0 + 60 + 400, 3, 0, 33500)
    b.write("compaction_past_ttl")

    b = Builder()  # manual /compact after a long pause: the compaction touched the cache
    b.response(T0, 3, 140000, 2000)
    b.compact(T0 + 1000)
    b.response(T0 + 1100, 3, 21500, 12000)
    b.write("compaction_after_pause")

    b = Builder()  # clearing of old tool results announced by a microcompact boundary
    b.response(T0, 3, 80000, 2000)
    b.compact(T0 + 30, "microcompact_boundary")
    b.response(T0 + 31, 3, 21500, 40000)
    b.write("microcompaction_expected")

    b = Builder("1.0.98")  # 1.0.x: the summary line is the compaction; rebuild 2 s later
    b.response(T0, 3, 140000, 2000)
    b.compact_summary(T0 + 60)
    b.response(T0 + 62, 3, 21500, 12000)
    b.response(T0 + 70, 3, 33500, 400)
    b.write("compaction_1_0_expected")

    b = Builder("1.0.98")  # 1.0.x: the user waits past the TTL after compacting
    b.response(T0, 3, 140000, 2000)
    b.compact_summary(T0 + 60)
    b.response(T0 + 60 + 400, 3, 0, 33500)
    b.write("compaction_1_0_past_ttl")

    b = Builder()  # compaction at the very end: the rebuild is still pending
    b.response(T0, 3, 140000, 2000)
    b.compact(T0 + 60)
    b.write("compaction_pending")

    b = Builder()  # small shortfalls are hits: under 2,000 tokens, or >= 95% read
    b.response(T0, 3, 0, 30000)
    b.response(T0 + 10, 3, 28500, 2000)  # re-processed 1,500 < 2,000
    b.response(T0 + 20, 3, 0, 1000)  # prompt of 1,003: re-processed 1,000 < 2,000
    b.write("below_threshold")

    b = Builder()  # an API error line and a sidechain replay of a parent message
    b.response(T0, 3, 10000, 20000)
    b.api_error(T0 + 5)
    b.response(T0 + 10, 1, 30000, 500, msg="msg_shared")
    # The replay carries another request id: the message id alone identifies the response.
    b.response(T0 + 11, 1, 30000, 500, msg="msg_shared", sidechain=True, request="req_replay")
    b.write("dedup_errors_replays")


if __name__ == "__main__":
    main()
