"""The advice table's data: each cause's entry and the Claude Code knobs it may name.

``cachediag.analysis.advice`` fits an entry to one miss and is the module to import;
this one only holds the words (split off so each module stays small).
Pure, standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from cachediag.analysis.dimensions import Cause

DOCS = "https://docs.claude.com/en/docs"
SETTINGS_URL = f"{DOCS}/claude-code/settings"
SUBAGENTS_URL = f"{DOCS}/claude-code/sub-agents"
MCP_URL = f"{DOCS}/claude-code/mcp"
CLI_URL = f"{DOCS}/claude-code/cli-reference"
MODEL_URL = f"{DOCS}/claude-code/model-config"
MEMORY_URL = f"{DOCS}/claude-code/memory"
CHECKPOINT_URL = f"{DOCS}/claude-code/checkpointing"
CACHING_URL = f"{DOCS}/build-with-claude/prompt-caching"
OPENROUTER_URL = "https://openrouter.ai/docs/features/provider-routing"


@dataclass(slots=True, frozen=True)
class Knob:
    """A setting, flag or environment variable of Claude Code that acts on caching."""

    name: str
    """As advice names it (``experimental.cacheTtl``, ``--system-prompt-snapshot``)."""
    kind: str
    """``setting`` (settings.json), ``frontmatter`` (an agent's file), ``env``, ``flag``."""
    since: str
    """The first Claude Code version that has it."""
    needle: str
    """What the CLI's bundle holds when it has the knob (checked by a test)."""
    doc: str


KNOBS: dict[str, Knob] = {
    # Versions from issue 28 (the release notes) where it gives one; otherwise the
    # oldest release the real-client suite runs (tests/real_client/versions.txt) and
    # found the knob in, since an older bundle was never checked.
    "promptCacheTtl": Knob("promptCacheTtl", "setting", "2.1.243", "promptCacheTtl", SETTINGS_URL),
    "subagentPromptCacheTtl": Knob(
        "subagentPromptCacheTtl", "setting", "2.1.243", "subagentPromptCacheTtl", SETTINGS_URL
    ),
    "experimental.cacheTtl": Knob(
        "experimental.cacheTtl", "frontmatter", "2.1.248", "cacheTtl", SUBAGENTS_URL
    ),
    "ENABLE_TOOL_SEARCH": Knob(
        # 2.1.332: the release it was seen to act in (docs/real-client.md); 2.1.260 did
        # not defer MCP tools, and an unknown variable is ignored, so it proves nothing.
        "ENABLE_TOOL_SEARCH",
        "env",
        "2.1.332",
        "ENABLE_TOOL_SEARCH",
        MCP_URL,
    ),
    "--system-prompt-snapshot": Knob(
        "--system-prompt-snapshot", "flag", "2.1.260", "system-prompt-snapshot", CLI_URL
    ),
}


@dataclass(slots=True, frozen=True)
class Entry:
    """One cause's row of the table."""

    cause: Cause
    produced_by: str
    """What usually produces it in Claude Code."""
    action: str
    """What to do; names no knob (those come from ``knobs`` and ``advice_for``)."""
    doc: str | None
    knobs: tuple[str, ...] = ()
    """Keys of ``KNOBS`` the action may name, in the order they are offered."""
    actionable: bool = True
    """False: nothing the user does avoids it, and the action says so."""


NO_ACTION = "Nothing to do: no setting or habit avoids it."
"""The action of a cause nothing avoids."""

_TTL_5M = Entry(
    Cause.TTL_EXPIRED_5M,
    "A pause of more than 5 minutes between requests while the 5-minute TTL was in force "
    "(the default for API keys and cloud providers; subscriptions default to 1 hour).",
    "If pauses of 5 to 60 minutes recur, choose the 1-hour TTL (a write costs 2x the "
    "input price instead of 1.25x); `cachediag tune` weighs it on your history.",
    SETTINGS_URL,
    ("promptCacheTtl", "subagentPromptCacheTtl", "experimental.cacheTtl"),
)

TABLE: dict[Cause, Entry] = {
    e.cause: e
    for e in (
        _TTL_5M,
        Entry(
            Cause.TTL_EXPIRED_1H,
            "A pause of more than an hour between requests (the 1-hour TTL was in force).",
            "Nothing keeps a cache past an hour: the first request after such a pause "
            "always writes the prompt again.",
            CACHING_URL,
            actionable=False,
        ),
        Entry(
            Cause.TTL_EXPIRED_30M,
            "A pause longer than the 30-minute TTL the client asked for (not Claude Code).",
            "No Claude Code setting applies; the client that sent it chooses this TTL.",
            None,
            actionable=False,
        ),
        Entry(
            Cause.TTL_EXPIRED_24H,
            "A pause longer than a 24-hour retention (not Claude Code).",
            NO_ACTION,
            None,
            actionable=False,
        ),
        Entry(
            Cause.SYSTEM_PROMPT_CHANGED,
            "CLAUDE.md or the output style edited during the session, an MCP server's "
            "instructions changing, --append-system-prompt changed on a resume, or a "
            "Claude Code update between turns.",
            "Edit CLAUDE.md and switch output styles between sessions, not during one.",
            MEMORY_URL,
            ("--system-prompt-snapshot",),
        ),
        Entry(
            Cause.TOOLS_CHANGED,
            "An MCP server connected, dropped or changed its tools during the session, "
            "or a Claude Code update changed the built-in tools.",
            "Connect MCP servers before the conversation starts and keep them running.",
            MCP_URL,
            ("ENABLE_TOOL_SEARCH",),
        ),
        Entry(
            Cause.MODEL_CHANGED,
            "/model or --model switched models mid-conversation, or Claude Code fell "
            "back to another model; each model has its own cache.",
            "Choose the model when a task starts; a switch mid-conversation writes the "
            "whole prompt again for the new model.",
            MODEL_URL,
        ),
        Entry(
            Cause.FAST_MODE_CHANGED,
            "Fast (priority) mode turned on or off mid-conversation.",
            "Keep the speed setting fixed within a conversation.",
            MODEL_URL,
        ),
        Entry(
            Cause.CACHE_SCOPE_OR_TTL_CHANGED,
            "The TTL or scope on the system prompt changed: the TTL setting edited "
            "during a session, or a login switch between a subscription (1 hour) and "
            "an API key (5 minutes).",
            "Change the TTL setting or the login between sessions, not during one.",
            SETTINGS_URL,
            ("promptCacheTtl",),
        ),
        Entry(
            Cause.BETAS_CHANGED,
            "A feature or model switch that adds or drops an API beta (effort, long "
            "context, thinking).",
            "No setting pins the betas; they follow the model and features: switch "
            "those when a task starts.",
            MODEL_URL,
        ),
        Entry(
            Cause.EFFORT_CHANGED,
            "The reasoning effort changed mid-conversation (through /model).",
            "Choose the effort when a task starts; changing it writes the prompt again.",
            MODEL_URL,
        ),
        Entry(
            Cause.THINKING_MODE_CHANGED,
            "Extended thinking turned on or off mid-conversation.",
            "Keep thinking on or off for the whole conversation.",
            MODEL_URL,
        ),
        Entry(
            Cause.THINKING_DISPLAY_CHANGED,
            "The thinking display option changed with thinking left on.",
            "Keep the thinking display fixed within a conversation.",
            MODEL_URL,
        ),
        Entry(
            Cause.AUTO_MODE_CHANGED,
            "Claude Code changed its internal auto mode between requests.",
            "Nothing to do: it is Claude Code's own state, no setting pins it.",
            None,
            actionable=False,
        ),
        Entry(
            Cause.OVERAGE_CHANGED,
            "The account crossed a usage limit, which Claude Code sends with the request.",
            NO_ACTION,
            None,
            actionable=False,
        ),
        Entry(
            Cause.EXTRA_BODY_CHANGED,
            "Another request field changed (output settings, metadata): usually a "
            "feature toggled or a Claude Code update.",
            "Nothing specific: keep features and the Claude Code version fixed within "
            "a conversation.",
            None,
            actionable=False,
        ),
        Entry(
            Cause.DEFER_LOADING_CHANGED,
            "Tool search turned on or off, so MCP tools moved into or out of the tools list.",
            "Keep tool search the same for the whole session.",
            MCP_URL,
            ("ENABLE_TOOL_SEARCH",),
        ),
        Entry(
            Cause.MESSAGES_REWRITTEN,
            "An earlier message changed: a rewind (/rewind, Esc Esc) or an edited past "
            "prompt, old tool results cleared by Claude Code, or a resumed session "
            "sending its history again in another form.",
            "Prefer a follow-up to editing or rewinding to an early message: "
            "everything after the changed message is written again.",
            CHECKPOINT_URL,
        ),
        Entry(
            Cause.LIKELY_SERVER_SIDE,
            "Nothing visible changed and the pause was inside the TTL: the server lost "
            "or never reused the entry.",
            "Nothing to do on your side: no setting avoids it.",
            CACHING_URL,
            actionable=False,
        ),
        Entry(
            Cause.UNKNOWN,
            "The log does not show enough: a transcript holds no system prompt or tool "
            "list, so a tool or system change cannot be told from a server-side loss.",
            "Run Claude Code through `cachediag proxy` to record what each request "
            "sent; then `cachediag explain` names what changed.",
            None,
        ),
        Entry(
            Cause.PROMPT_CACHE_KEY_CHANGED,
            "The client changed its OpenAI prompt_cache_key (not Claude Code).",
            "No Claude Code setting applies; the client chooses the key.",
            None,
            actionable=False,
        ),
        Entry(
            Cause.TEXT_FORMAT_CHANGED,
            "The client changed its OpenAI text format (not Claude Code).",
            "No Claude Code setting applies.",
            None,
            actionable=False,
        ),
        Entry(
            Cause.VERBOSITY_CHANGED,
            "The client changed its OpenAI verbosity (not Claude Code).",
            "No Claude Code setting applies.",
            None,
            actionable=False,
        ),
        Entry(
            Cause.SERVICE_TIER_CHANGED,
            "The client changed its OpenAI service tier (not Claude Code).",
            "No Claude Code setting applies.",
            None,
            actionable=False,
        ),
        Entry(
            Cause.PROVIDER_CHANGED,
            "OpenRouter served the request from another provider (a fallback), which "
            "holds none of the conversation's cache.",
            "Pin the provider in OpenRouter's provider routing (an order with "
            "allow_fallbacks off), accepting errors when it is down.",
            OPENROUTER_URL,
        ),
    )
}
