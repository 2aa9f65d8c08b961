"""``cachediag statusline --check``: what one run read, from where, and what went wrong.

For setting the status line up by hand: the same run Claude Code makes (the state is
read and saved as usual), then a report on stdout instead of the bare line, and exit 1
when anything fell back. Names and paths only: never stdin values or log content.
"""

from __future__ import annotations

import contextlib
import os

from cachediag.paths import cache_dir
from cachediag.statusline import render
from cachediag.statusline.log import heard, log_failure

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

KNOWN_FIELDS = ("session_id", "transcript_path", "prompt_cache", "model", "cwd")
"""Fields of Claude Code's object the report says are present (names only)."""


def report(
    out: IO[str], line: str, view: dict[str, Any] | None, payload: Any, budget_s: float
) -> int:
    took = heard.facts.get("took_s")
    _check_transcript(view)
    rows = [
        ("stdin", _stdin(payload)),
        ("transcript", _transcript(view)),
        ("state", _state()),
        ("numbers", _numbers(view)),
        (
            "time",
            f"{took * 1000 if isinstance(took, float) else 0:.0f} ms of a {budget_s:g} s budget",
        ),
        ("line", line),
        ("log", os.path.join(cache_dir(), "statusline.log")),
    ]
    problems = list(dict.fromkeys(heard.problems))
    if not problems and line == render.FALLBACK:
        problems.append("the line fell back to 'cache ?'")
    # The line is ours, its log-borne parts sanitised already (and its colours wanted).
    text = [
        f"{name:<11} {value if name == 'line' else render.printable(value, 400)}"
        for name, value in rows
    ]
    text += [f"note        {render.printable(n, 300)}" for n in dict.fromkeys(heard.notes)]
    if problems:
        text.append(f"result      {len(problems)} problem{'s' if len(problems) > 1 else ''}:")
        text += [f"  - {render.printable(p, 300)}" for p in problems]
    else:
        text.append("result      ok")
    try:
        out.write("\n".join(text) + "\n")
        out.flush()
    except (OSError, ValueError):
        pass
    return 1 if problems else 0


def _stdin(payload: Any) -> str:
    told = heard.facts.get("stdin")
    if isinstance(told, str):
        return f"{told}; pipe Claude Code's object in, e.g. cachediag statusline --check < x.json"
    size = heard.facts.get("stdin_bytes")
    if not isinstance(payload, dict):
        return "no JSON object read"
    present = [k for k in KNOWN_FIELDS if k in payload]
    version = payload.get("version")
    shown = f", Claude Code {render.printable(version, 20)}" if isinstance(version, str) else ""
    fields = ", ".join(present) if present else "none of Claude Code's fields"
    return f"{size:,} bytes, a JSON object ({fields}{shown})"


def _transcript(view: dict[str, Any] | None) -> str:
    path = heard.facts.get("transcript")
    if not isinstance(path, str):
        return "none (no transcript_path)"
    status = view.get("transcript") if view else None
    if status == render.NOT_WRITTEN:
        status = "not written yet (no response in this session so far)"
    parts = [path, str(status or "not read")]
    with contextlib.suppress(OSError):
        parts.append(f"{os.stat(path).st_size / 1e6:.1f} MB")
    agents = heard.facts.get("agent_files")
    if isinstance(agents, int):
        parts.append(f"{agents} agent file{'' if agents == 1 else 's'}")
    unreadable = view.get("unreadable_files") if view else None
    if unreadable:
        parts.append(f"{len(unreadable)} not readable")
    return ": ".join(parts[:2]) + (f" ({', '.join(parts[2:])})" if parts[2:] else "")


def _check_transcript(view: dict[str, Any] | None) -> None:
    """A file read as the transcript that is not one: a problem. The line itself only
    counts what it recognises (nothing here), so only a look at the file's first lines,
    by the rule every other command uses, tells a wrong path from a quiet session."""
    path = heard.facts.get("transcript")
    if not isinstance(path, str) or not view or view.get("transcript") != "read":
        return
    from pathlib import Path

    from cachediag.ingest.detect import CLAUDE_CODE
    from cachediag.ingest.sniff import open_file

    try:
        opened = open_file(Path(path), None)
    except OSError:
        return  # read a moment ago: gone since, which the next run reports
    opened.fp.close()
    if opened.error is not None:
        log_failure(f"transcript_path is not a Claude Code transcript: {opened.error}")
    elif opened.fmt != CLAUDE_CODE:
        log_failure(
            f"transcript_path is not a Claude Code transcript: {path} is a {opened.fmt} log"
        )


def _state() -> str:
    if "state" not in heard.facts:
        return "not used (no transcript read)"
    path = heard.facts["state"]
    if path is None:
        return "not used: the state folder is not this user's alone (see result)"
    how = heard.facts.get("how", "")
    saved = heard.facts.get("saved")
    if saved is True:
        after = "saved"
    elif saved is None:
        after = "nothing to save"
    elif isinstance(saved, str):
        after = f"not saved: {saved}"
    else:
        after = "not saved"
    return f"{path}: {how}; {after}"


def _numbers(view: dict[str, Any] | None) -> str:
    if view is None:
        return "none"
    pc = view.get("prompt_cache")
    where = {"claude-code": "Claude Code's prompt_cache", "transcript": "the transcript"}
    source = where.get(str(view.get("source")), "nowhere")
    if not isinstance(pc, dict):
        return f"from {source}"
    parts = [f"from {source}"]
    for key, word in (("requests", "request"), ("misses", "miss")):
        n = render.count(pc, key)
        if n is not None:
            parts.append(render.plural(n, word))
    if view.get("partial"):
        parts.append("partial: the time budget ended the read; the next run goes on")
    unpriced = view.get("unpriced_models")
    if unpriced:
        parts.append(f"no price for {', '.join(render.printable(m) for m in unpriced)}")
    return ", ".join(parts)
