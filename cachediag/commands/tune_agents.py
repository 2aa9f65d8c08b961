"""Which agent type each subagent of a Claude Code session was (``Explore``, ``Plan``,
one of the user's own agents), for ``cachediag tune``.

Claude Code keeps it in two places: ``agent-<id>.meta.json`` beside a subagent's file
(``agentType``), and in the parent's transcript, where the ``Task`` call names its
``subagent_type`` and the result of that call (or the progress lines it streams) the
``agentId`` it ran as. Only the lines that carry those names are parsed; nothing else
of a prompt is looked at, and a type is kept only if it is a plain name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cachediag.analysis.session_analysis import SessionAnalysis
from cachediag.model import StreamKind
from cachediag.safefiles import open_regular

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
"""What an agent type looks like (the name of an agent's file): anything else from a
log is left unnamed rather than shown or joined to a path."""
_NEEDLES = (b'"subagent_type"', b'"agentId"')
_META_LIMIT = 1 << 20


def plain_name(value: Any) -> str | None:
    return value if isinstance(value, str) and _NAME.fullmatch(value) else None


def agent_types(analysis: SessionAnalysis) -> dict[str, str]:
    """Stream id (``agent-<id>``) -> agent type, for the subagents whose type is known."""
    wanted = {
        s.log.id: s.log.source
        for s in analysis.others
        if s.log.kind is StreamKind.SUBAGENT and s.log.id.startswith("agent-")
    }
    if not wanted:
        return {}
    found: dict[str, str] = {}
    for stream_id, source in wanted.items():
        kind = None if source is None else _meta_type(Path(source))
        if kind is not None:
            found[stream_id] = kind
    if len(found) < len(wanted) and analysis.log.main_present:
        by_agent = _transcript_types(Path(analysis.log.source))
        for stream_id in wanted.keys() - found.keys():
            kind = by_agent.get(stream_id.removeprefix("agent-"))
            if kind is not None:
                found[stream_id] = kind
    return found


def _meta_type(source: Path) -> str | None:
    meta = source.with_name(source.name.removesuffix(".jsonl") + ".meta.json")
    try:
        with open_regular(str(meta)) as fp:
            loaded = json.loads(fp.read(_META_LIMIT))
    except (OSError, ValueError):
        return None
    return plain_name(loaded.get("agentType")) if isinstance(loaded, dict) else None


def _transcript_types(main: Path) -> dict[str, str]:
    """agentId -> subagent_type, joined through the ``Task`` call's id."""
    types: dict[str, str] = {}  # tool_use id -> subagent_type
    agents: dict[str, str] = {}  # tool_use id -> agentId
    for line in _lines_with_names(main):
        for call_id, kind in _task_calls(line):
            types[call_id] = kind
        for call_id, agent_id in _task_agents(line):
            agents.setdefault(call_id, agent_id)
    return {agent: types[call] for call, agent in agents.items() if call in types}


def _lines_with_names(path: Path) -> Iterator[dict[str, Any]]:
    try:
        fp = open_regular(str(path))
    except OSError:
        return
    with fp:
        for raw in fp:
            if not any(n in raw for n in _NEEDLES):
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict):
                yield line


def _content(line: dict[str, Any]) -> list[Any]:
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _task_calls(line: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for block in _content(line):
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        call_id, args = block.get("id"), block.get("input")
        kind = plain_name(args.get("subagent_type")) if isinstance(args, dict) else None
        if isinstance(call_id, str) and kind is not None:
            yield call_id, kind


def _task_agents(line: dict[str, Any]) -> Iterator[tuple[str, str]]:
    result = line.get("toolUseResult")
    agent_id = plain_name(result.get("agentId")) if isinstance(result, dict) else None
    if agent_id is not None:
        for block in _content(line):
            if isinstance(block, dict) and isinstance(block.get("tool_use_id"), str):
                yield block["tool_use_id"], agent_id
    data = line.get("data")
    parent = line.get("parentToolUseID")
    progress = plain_name(data.get("agentId")) if isinstance(data, dict) else None
    if progress is not None and isinstance(parent, str):
        yield parent, progress
