"""``cachediag tune`` for people: one table within 80 columns, then what each setting
holds, what the evidence says of it, and what ``--apply`` would do. Plain text (every
name in it is a kind, a key or a plain agent name; paths pass through ``sanitize``)."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime, tzinfo

from cachediag.analysis.tune_evidence import AGENT_PREFIX
from cachediag.analysis.whatif import Policy
from cachediag.commands.tune import (
    KindRow,
    Tune,
    agent_file,
    agent_file_ttl,
    agent_name,
    frontmatter,
)
from cachediag.commands.tune_settings import KeyPlan
from cachediag.text import sanitize

_HEADER = ("kind", "reqs", "as run", "5m", "1h", "5m-1h", ">1h", "use", "saved")
_WIDTHS = (19, 6, 8, 8, 8, 5, 4, 3, 8)


def money(usd: float) -> str:
    sign = "-" if usd < -0.005 else ""
    return f"{sign}${abs(usd):,.2f}"


def _label(kind: str, limit: int = 17) -> str:
    if kind.startswith(AGENT_PREFIX):
        name = agent_name(kind)
        return f"  {name[:limit]}" if name else "  (type unknown)"
    return kind.replace("_", " ")


def _cells(row: KindRow) -> tuple[str, ...]:
    e, v = row.evidence, row.verdict
    r = e.whatif.results
    return (
        _label(e.kind),
        f"{e.requests:,}",
        money(r[Policy.AS_HAPPENED].cost_usd),
        money(r[Policy.TTL_5M].cost_usd),
        money(r[Policy.TTL_1H].cost_usd),
        f"{e.covered_pauses:,}",
        f"{e.long_pauses:,}",
        v.ttl or "-",
        money(v.saved_usd) if v.ttl else "-",
    )


def _line(cells: tuple[str, ...]) -> str:
    first = cells[0].ljust(_WIDTHS[0])
    rest = " ".join(c.rjust(w) for c, w in zip(cells[1:], _WIDTHS[1:], strict=True))
    return f"{first} {rest}".rstrip()


def _sessions(n: int) -> str:
    return f"{n:,} session{'' if n == 1 else 's'}"


def _when(at: float | None, zone: tzinfo) -> str:
    if at is None:
        return "the start"
    return datetime.fromtimestamp(at, UTC).astimezone(zone).strftime("%Y-%m-%d %H:%M")


def tune_text(tune: Tune, zone: tzinfo, *, force: bool = False, applying: bool = False) -> str:
    """The whole report, as lines joined."""
    w = tune.window
    until = "now" if w.until is None else _when(w.until, zone)
    lines = [
        f"TTL by evidence: {_sessions(len(tune.run.kept))}, {_when(w.since, zone)} to {until}",
        "",
        _line(_HEADER),
        *(_line(_cells(r)) for r in tune.rows),
        "",
        "as run, 5m, 1h: cost as it happened and replayed under each TTL; 5m-1h, >1h:",
        "pauses after a cached prompt that 1h would have covered, and that none would.",
        "",
    ]
    for row in tune.rows:
        v = row.verdict
        own = "" if row.setting else " (no setting of its own)"
        lines.append(
            f"{_label(row.evidence.kind, 64).strip()}: {v.ttl or 'no change'}{own} "
            f"({v.confidence} confidence): {v.reason}"
        )
    lines += ["", f"Settings: {sanitize(str(tune.settings_path))}"]
    lines += [_plan_line(p, force) for p in tune.plans]
    lines += [f"  {sanitize(note)}" for note in tune.notes]
    agents = [r for r in tune.rows if r.setting == "experimental.cacheTtl" and r.verdict.ttl]
    if agents:
        lines += [
            "",
            "Agent types (a line for the agent file's frontmatter, Claude Code 2.1.248+;",
            "tune does not edit agent files):",
        ]
        lines += [_agent_line(tune, r) for r in agents]
    lines += ["", _footer(tune, force, applying)]
    return "\n".join(wrapped for line in lines for wrapped in fit(line))


BUILT_IN = frozenset(
    {
        "general-purpose",
        "Explore",
        "Plan",
        "statusline-setup",
        "output-style-setup",
        "claude-code-guide",
    }
)
"""Claude Code's own agent types: no file of the user's to hold a frontmatter line."""


def fit(line: str, width: int = 80) -> list[str]:
    """``line`` within ``width`` columns, wrapped lines indented two more than it; a path
    or a name is never broken (a word longer than a line stands alone)."""
    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" ")))
    return textwrap.wrap(
        line,
        width,
        initial_indent="",
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    ) or [line]


def _plan_line(plan: KeyPlan, force: bool) -> str:
    ttl, where = plan.in_force()
    now = f"{plan.key}: {ttl or 'unknown'} in force ({where})"
    rec = plan.recommended
    if plan.action == "none" and plan.current is None and ttl is None:
        return f"  {plan.key}: not set; no request of its kind in the window"
    if plan.action == "none":
        return f"  {now}; the evidence names no TTL: nothing to change"
    if plan.action == "same":
        return f"  {now}; the evidence says {rec}: nothing to change"
    if plan.action == "write":
        return f"  {now}; the evidence says {rec}: --apply sets it"
    told = "--apply --force replaces it" if not force else "--force replaces it"
    return f"  {now}; you set it, the evidence says {rec}: kept ({told})"


def _agent_line(tune: Tune, row: KindRow) -> str:
    name = agent_name(row.evidence.kind)
    found = agent_file(tune, name)
    line = f"  {name}: {frontmatter(row.verdict.ttl or '')}"
    if found is not None:
        has = agent_file_ttl(found)
        said = "" if has is None else f" (it says {has} now)"
        return f"{line} in {sanitize(str(found))}{said}"
    if name in BUILT_IN:
        return f"{line} (built in: no file; subagentPromptCacheTtl sets it)"
    return f"{line} in the agent's {name}.md (not in {sanitize(str(tune.agents_dir))})"


def _footer(tune: Tune, force: bool, applying: bool) -> str:
    writes = [p for p in tune.plans if p.writes(force)]
    saved = money(tune.saved_usd())
    if tune.notes:
        return f"Would have saved {saved} over the window; the settings could not be read."
    if not writes:
        return f"Would have saved {saved} over the window; settings.json needs no change."
    keys = ", ".join(f"{p.key}={p.recommended}" for p in writes)
    if applying:
        return f"Would have saved {saved} over the window. Writing {keys}:"
    return f"Would have saved {saved} over the window. --apply writes {keys}; --undo puts it back."
