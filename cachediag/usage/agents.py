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
  reasoning out as Gemini's leave the thinking; opencode's records keep it apart
  (``ingest.opencode.OpencodeRequest``), and so it is left out here too.
"""

from __future__ import annotations

from pathlib import PurePath

from cachediag.model import RequestRecord

CLAUDE = "claude"
CODEX = "codex"
GEMINI = "gemini"
OPENCODE = "opencode"
NAMES = {CLAUDE: "Claude Code", CODEX: "Codex", GEMINI: "Gemini CLI", OPENCODE: "opencode"}
"""How tables name each agent."""


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


def codex_extra(record: RequestRecord) -> tuple[int, float | None]:
    """What ccusage reads of a Codex request besides the tokens: its reasoning tokens
    and when it dates it (``None``: the record's own time), as the rollout's reader kept
    them (``ingest.codex.CodexRequest``); (0, ``None``) for any other record."""
    from cachediag.ingest.codex import CodexRequest

    if isinstance(record, CodexRequest):
        return record.reasoning_tokens, record.usage_at
    return 0, None
