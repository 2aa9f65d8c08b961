"""``cachediag warm`` output: the JSON contract and the table of warm sessions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, tzinfo

from pydantic import BaseModel, ConfigDict
from rich.console import Group, RenderableType
from rich.text import Text

from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.analysis.warm import Warmth
from cachediag.report.clock import format_clock, zone_label
from cachediag.report.layout import Column, compact_count, fitted_table, path_variants, text_lines
from cachediag.report.tables import format_tokens, format_usd, plural
from cachediag.text import sanitize

SCHEMA_VERSION = 1


class WarmOut(BaseModel):
    """One session whose prompt cache is still warm."""

    model_config = ConfigDict(extra="forbid")

    agent: str | None = None
    """Whose session (``claude``, ``codex``, ``gemini``, ``opencode``): only when the run
    read several agents' sessions or ``--agent all`` asked (``commands.agents.names_agents``);
    left out of the JSON otherwise."""
    session_id: str
    project: str | None
    """The project: its real path from the transcripts' ``cwd`` (where Claude Code ran),
    else the folder holding the transcript (Claude Code's encoded path, which cannot be
    decoded: ``-home-me-my-app``); null when the log names none (a piped capture)."""
    source: str
    model: str | None
    ttl: str
    """How long the provider keeps the last prompt: the TTL of the last cache entry
    (Anthropic), the model's retention (OpenAI: ``5m``, ``30m``, ``24h``), Gemini's."""
    last_activity_at: float
    expires_at: float
    seconds_left: float
    prompt_tokens: int
    """The last request's prompt: what the next request writes again once it is cold."""
    rebuild_usd: float | None
    """That prompt once cold: at the TTL's write price (Anthropic), at the input price
    (OpenAI, Gemini: no write charge); null: no price for the model."""
    resume_usd: float | None
    """That prompt at the read price (what the provider does not cache of it, at the
    input price): what resuming while it is warm costs."""


class WarmReport(BaseModel):
    """``cachediag warm --json``."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int
    now: float
    sessions: list[WarmOut]
    """Newest first."""


def warm_out(a: SessionAnalysis, w: Warmth) -> WarmOut:
    """One warm session's row (built where the session was read: it travels small)."""
    return WarmOut(
        session_id=a.log.session_id,
        project=a.project,
        source=a.log.source,
        model=w.last.model,
        ttl=w.ttl,
        last_activity_at=w.last.at,
        expires_at=w.expires_at,
        seconds_left=round(w.seconds_left, 3),
        prompt_tokens=w.last.total_tokens,
        rebuild_usd=None if w.rebuild_usd is None else round(w.rebuild_usd, 6),
        resume_usd=None if w.resume_usd is None else round(w.resume_usd, 6),
    )


def warm_report(rows: Sequence[WarmOut], now: float) -> WarmReport:
    """``rows`` newest first."""
    ordered = sorted(rows, key=lambda r: -r.last_activity_at)
    return WarmReport(schema_version=SCHEMA_VERSION, now=now, sessions=ordered)


def format_left(seconds: float) -> str:
    """``4:05`` (minutes:seconds), ``1:02:05`` past an hour."""
    s = max(0, int(seconds))
    hours, rest = divmod(s, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def report_json(report: WarmReport) -> dict[str, object]:
    """``warm --json``: ``agent`` on each session only where the rows name one."""
    return report.model_dump(mode="json", exclude={"sessions": {"__all__": _unnamed(report)}})


def _unnamed(report: WarmReport) -> set[str]:
    return set() if any(r.agent for r in report.sessions) else {"agent"}


def warm_table(
    report: WarmReport, *, zone: tzinfo = UTC, width: int = 80, other_agents: bool = False
) -> RenderableType:
    """The table; ``other_agents``: sessions not Claude Code's are in it (the note says
    what going cold costs where the provider charges no write)."""
    rows = report.sessions
    if not rows:
        return Text("No session has a warm prompt cache.")
    label = zone_label(zone, rows[0].last_activity_at)
    named = [Column("agent", [[r.agent or "" for r in rows]])] if not _unnamed(report) else []
    columns = [
        *named,
        Column("left", [[format_left(r.seconds_left) for r in rows]], justify="right"),
        Column("ttl", [[r.ttl for r in rows]]),
        Column("session", [[r.session_id[:8] for r in rows]]),
        Column("project", path_variants([sanitize(r.project or "-") for r in rows]), keep=50),
        Column(
            f"last ({label})", [[format_clock(r.last_activity_at, zone) for r in rows]], keep=60
        ),
        Column(
            "prompt",
            [
                [format_tokens(r.prompt_tokens) for r in rows],
                [compact_count(r.prompt_tokens) for r in rows],
            ],
            justify="right",
        ),
        Column("resume", [[format_usd(r.resume_usd) for r in rows]], justify="right", keep=70),
        Column("if cold", [[format_usd(r.rebuild_usd) for r in rows]], justify="right"),
    ]
    notes = [
        "resume: the last prompt read from the cache now",
        "if cold: written again at the TTL's write price once it expires"
        + (" (OpenAI, Gemini: sent again at the input price)" if other_agents else ""),
    ]
    return Group(
        text_lines(
            [f"{plural(len(rows), 'session')} with a warm prompt cache, newest first"], width
        ),
        fitted_table(columns, width),
        text_lines(notes, width, style="dim"),
    )
