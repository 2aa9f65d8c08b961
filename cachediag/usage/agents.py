"""Each agent's tokens as ccusage 20 reports them, and its sessions as ccusage names them.

The ledger holds what each provider billed (output with reasoning included, priced at
the output price). ccusage 20.0.24 shows the same tokens differently per agent
(recorded in ``tests/data/ccusage20_all_*.json``):

- Codex: ``inputTokens`` without the cached ones, ``outputTokens`` with the reasoning,
  which it also gives apart as ``reasoningOutputTokens``; a session is the rollout's
  path under ``sessions/`` (``2026/12/02/rollout-...``).
- Gemini CLI: ``outputTokens`` without the thinking (``thoughts``), which its
  ``totalTokens`` and cost still count; a session is the chat's session id, whatever
  files a resume spread it over.
- opencode: a session is the database's session id. Its ``outputTokens`` leave the
  reasoning out as Gemini's leave the thinking; opencode's records do not keep the
  reasoning apart (``ingest.opencode`` adds it to the output), so here it stays in
  ``outputTokens`` (docs/usage.md says so).
"""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import NamedTuple

from cachediag.model import RequestRecord
from cachediag.safefiles import open_regular
from cachediag.usage.stamps import epoch_of_iso

CLAUDE = "claude"
CODEX = "codex"
GEMINI = "gemini"
OPENCODE = "opencode"
NAMES = {CLAUDE: "Claude Code", CODEX: "Codex", GEMINI: "Gemini CLI", OPENCODE: "opencode"}
"""How tables name each agent."""

_REASONING = b'"reasoning_output_tokens"'


def hidden_output(record: RequestRecord) -> int:
    """Output tokens ccusage leaves out of ``outputTokens`` (yet counts in the total and
    the cost): Gemini CLI's thinking, opencode's reasoning."""
    from cachediag.ingest.gemini import GeminiRequest
    from cachediag.ingest.opencode import OpencodeRequest

    if isinstance(record, GeminiRequest):
        return record.thoughts_tokens
    return record.reasoning_tokens if isinstance(record, OpencodeRequest) else 0


def codex_session(source: str, session_id: str) -> str:
    """ccusage's Codex session: the rollout's path under ``sessions/``, without
    ``.jsonl`` (``2026/12/02/rollout-...``); the file's name alone elsewhere."""
    path = PurePath(source)
    if path.suffix != ".jsonl":
        return session_id
    dated = path.parts[-4:-1]
    if len(dated) == 3 and all(p.isdigit() for p in dated):
        return "/".join((*dated, path.stem))
    return path.stem


class CodexUsage(NamedTuple):
    """What ccusage reads of one Codex request besides the reader's tokens."""

    reasoning_tokens: int
    at: float | None
    """When ccusage dates it: the ``token_count`` event that reports the usage (written
    just after the ``token_usage_record``), else ``None`` (the reader's time)."""


def codex_usage(source: str) -> dict[int, CodexUsage]:
    """Per line of a Codex rollout holding a request's usage (a ``token_usage_record``,
    or a ``token_count`` on older rollouts: the line the reader made the request of),
    its reasoning tokens and ccusage's time. A file that cannot be read gives nothing
    (the reader said why)."""
    try:
        with open_regular(source) as fp:
            data = fp.read()
    except OSError:
        return {}
    out: dict[int, CodexUsage] = {}
    pending: int | None = None
    for number, raw in enumerate(data.splitlines(), start=1):
        if _REASONING not in raw:
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        payload = line.get("payload") if isinstance(line, dict) else None
        if not isinstance(payload, dict):
            continue
        at = epoch_of_iso(line.get("timestamp"))
        if line.get("type") == "token_usage_record":
            out[number] = CodexUsage(_reasoning(payload.get("usage")), None)
            pending = number
            continue
        info = payload.get("info")
        if payload.get("type") != "token_count" or not isinstance(info, dict):
            continue
        if pending is not None:
            out[pending] = out[pending]._replace(at=at)
            pending = None
        else:
            out[number] = CodexUsage(_reasoning(info.get("last_token_usage")), at)
    return out


def _reasoning(usage: object) -> int:
    value = usage.get("reasoning_output_tokens") if isinstance(usage, dict) else None
    return value if type(value) is int and value >= 0 else 0
