"""What to do about each cause of a miss: one table, read by every view.

Every cause of the closed set (prompt-cache.md §4) has one ``Entry``: what usually
produces it in Claude Code and the action, which may name a Claude Code setting, flag
or environment variable (a ``Knob``, with the first version that has it). ``advice_for``
turns an entry into the words for one miss, using what the log showed: the Claude Code
version the session ran (a knob that version lacks is never named), the TTL in force,
the kind of stream, whether tool search deferred tools. Where nothing the user can do
avoids a cause, the entry says so (``actionable`` False) instead of inventing a remedy.
tests/test_advice_bundles.py checks every knob against the installed Claude Code bundles;
docs/advice.md is this table, written by ``python -m cachediag.analysis.advice_doc``.
Pure, standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cachediag.analysis.advice_table import KNOBS as KNOBS
from cachediag.analysis.advice_table import NO_ACTION, Entry, Knob
from cachediag.analysis.advice_table import TABLE as TABLE
from cachediag.analysis.dimensions import Cause


@dataclass(slots=True, frozen=True)
class AdviceContext:
    """What the log showed about the request that missed; ``None``: not shown."""

    version: str | None = None
    """The Claude Code version the session ran (its transcript's ``version``)."""
    ttl_in_force: str | None = None
    stream_kind: str | None = None
    """``main``, ``subagent``... (``model.StreamKind`` values)."""
    agent_type: str | None = None
    """A named agent's type, when the log tells it."""
    defer_loading: bool | None = None
    """Whether any tool of the request was deferred (tool search on)."""
    resumed: bool | None = None


@dataclass(slots=True, frozen=True)
class Advice:
    """The words for one cause of one miss."""

    cause: str
    produced_by: str
    action: str
    doc: str | None
    knobs: tuple[str, ...]
    """The knobs the action names (each exists in the session's version, when known)."""
    actionable: bool


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """``2.1.243`` as ``(2, 1, 243)``; ``None`` for anything that is not a version."""
    if text is None:
        return None
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", text.strip())
    return None if m is None else tuple(int(g) for g in m.groups())


def has_knob(version: str | None, knob: Knob) -> bool:
    """Whether the session's Claude Code has the knob; an unknown version may (the advice
    then says from which version)."""
    seen = parse_version(version)
    since = parse_version(knob.since)
    return seen is None or since is None or seen >= since


def advice_for(cause: str, context: AdviceContext | None = None) -> Advice:
    """The advice for one cause (any string: unknown causes read back get a plain
    'no advice'), fitted to what the log showed."""
    ctx = context or AdviceContext()
    try:
        entry = TABLE[Cause(cause)]
    except (ValueError, KeyError):
        return Advice(cause, "A cause cachediag does not know.", NO_ACTION, None, (), False)
    action, knobs = _fitted(entry, ctx)
    return Advice(str(entry.cause), entry.produced_by, action, entry.doc, knobs, entry.actionable)


def _fitted(entry: Entry, ctx: AdviceContext) -> tuple[str, tuple[str, ...]]:
    if entry.cause is Cause.TTL_EXPIRED_5M:
        return _ttl_action(entry, ctx)
    if entry.cause in (Cause.TOOLS_CHANGED, Cause.DEFER_LOADING_CHANGED):
        return _tool_search_action(entry, ctx)
    if entry.cause is Cause.SYSTEM_PROMPT_CHANGED:
        return _snapshot_action(entry, ctx)
    if entry.cause is Cause.LIKELY_SERVER_SIDE and ctx.ttl_in_force:
        # The TTL the log shows in force: the pause was inside it, so no setting helps.
        return (
            f"Nothing to do on your side: the pause was inside the {ctx.ttl_in_force} TTL "
            "in force, and no setting avoids it.",
            (),
        )
    if entry.cause is Cause.MESSAGES_REWRITTEN and ctx.resumed:
        return (
            f"{entry.action} This session was resumed: the resume itself may have sent "
            "the history in another form, which no setting avoids.",
            (),
        )
    if entry.cause is Cause.CACHE_SCOPE_OR_TTL_CHANGED:
        knob = KNOBS["promptCacheTtl"]
        if has_knob(ctx.version, knob):
            return (
                f"Change `{knob.name}`{_since(knob, ctx)} or the login between sessions, "
                "not during one.",
                (knob.name,),
            )
    return entry.action, ()


def _since(knob: Knob, ctx: AdviceContext) -> str:
    """`` (Claude Code 2.1.243+)`` when the session's version is not known."""
    return f" (Claude Code {knob.since}+)" if parse_version(ctx.version) is None else ""


def _ttl_knob(ctx: AdviceContext) -> Knob:
    if ctx.agent_type:
        return KNOBS["experimental.cacheTtl"]
    if ctx.stream_kind not in (None, "main"):
        return KNOBS["subagentPromptCacheTtl"]
    return KNOBS["promptCacheTtl"]


def _ttl_action(entry: Entry, ctx: AdviceContext) -> tuple[str, tuple[str, ...]]:
    knob = _ttl_knob(ctx)
    if not has_knob(ctx.version, knob) and knob.name == "experimental.cacheTtl":
        knob = KNOBS["subagentPromptCacheTtl"]  # an older release still has the agent-wide one
    if not has_knob(ctx.version, knob):
        return (
            f"Claude Code {ctx.version} has no TTL setting; a newer release lets you "
            "choose the 1-hour TTL when pauses of 5 to 60 minutes recur "
            "(`cachediag tune` weighs it on your history).",
            (),
        )
    where = {
        "experimental.cacheTtl": f"in the {ctx.agent_type or 'agent'}'s frontmatter",
        "subagentPromptCacheTtl": "in settings.json (for subagents)",
    }.get(knob.name, "in settings.json")
    named = [knob.name]
    agent = KNOBS["experimental.cacheTtl"]
    if knob.name == "subagentPromptCacheTtl" and has_knob(ctx.version, agent):
        # The log does not say which agent ran: offer the per-agent setting beside it.
        where += f" or `{agent.name}` in one agent's frontmatter"
        named.append(agent.name)
    return (
        f'If pauses of 5 to 60 minutes recur, set `{knob.name}: "1h"` {where}'
        f"{_since(knob, ctx)}; a 1-hour write costs 2x the input price instead of "
        "1.25x, and `cachediag tune` weighs it on your history.",
        tuple(named),
    )


def _tool_search_action(entry: Entry, ctx: AdviceContext) -> tuple[str, tuple[str, ...]]:
    knob = KNOBS["ENABLE_TOOL_SEARCH"]
    if not has_knob(ctx.version, knob):
        return entry.action, ()
    if entry.cause is Cause.DEFER_LOADING_CHANGED:
        return (
            f"Keep `{knob.name}` the same for the whole session{_since(knob, ctx)}.",
            (knob.name,),
        )
    if ctx.defer_loading:
        # Tool search was on: the MCP tools were deferred, so the change was elsewhere.
        return (
            f"{entry.action} Tool search was on (MCP tools deferred), so the change "
            "came from a tool that is always sent, such as a built-in one.",
            (),
        )
    return (
        f"{entry.action} With tool search on{_since(knob, ctx)}, MCP tools stay out "
        f"of the tools list: leave `{knob.name}` unset, not false.",
        (knob.name,),
    )


def _snapshot_action(entry: Entry, ctx: AdviceContext) -> tuple[str, tuple[str, ...]]:
    knob = KNOBS["--system-prompt-snapshot"]
    if not has_knob(ctx.version, knob):
        return entry.action, ()
    lead = "This session was resumed: on" if ctx.resumed else "On"
    return (
        f"{entry.action} {lead} --resume, keep `{knob.name}` on (the default) so the "
        f"recorded prompt is reused{_since(knob, ctx)}.",
        (knob.name,),
    )


def table_rows() -> list[Advice]:
    """Every cause's advice with nothing known of the session: the table docs show."""
    return [advice_for(str(c)) for c in Cause]


def policy_how(policy: str, version: str | None = None) -> str | None:
    """How to put the audit's best TTL policy (``whatif.Policy`` values) into effect in
    Claude Code; ``None`` when nothing needs doing (what happened was best) or nothing can
    (a keep-alive: ``KEEP_ALIVE_HOW``)."""
    main, sub = KNOBS["promptCacheTtl"], KNOBS["subagentPromptCacheTtl"]
    if not has_knob(version, main):
        if policy in ("5m", "1h", "evidence"):
            return f"Claude Code {version} has no TTL setting; a newer release has one."
        return None
    since = _since(main, AdviceContext(version=version))
    ttl = f'`{main.name}: "1h"` and `{sub.name}: "1h"` in settings.json{since}'
    if policy == "1h":
        return f"Set {ttl}."
    if policy == "5m":
        five = f'`{main.name}: "5m"` and `{sub.name}: "5m"` in settings.json{since}'
        return f"Set {five}: a subscription's default is 1 hour, an API key's 5 minutes."
    if policy == "evidence":
        return (
            f"Set {ttl} for the kinds of request whose pauses an hour covers "
            "(`cachediag tune` picks them)."
        )
    return None


KEEP_ALIVE_HOW = (
    "Claude Code sends no keep-alive requests and has no setting for them: another "
    "client would have to re-send the prompt every 4.5 minutes of a pause."
)
"""What the audit says when a keep-alive would have been cheapest."""
