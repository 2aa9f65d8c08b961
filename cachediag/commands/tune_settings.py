"""The settings.json side of ``cachediag tune``: which TTL is in force and from where,
what the evidence would change, and writing it (``--apply``) or putting it back
(``--undo``).

Every write goes through ``settings_undo`` (on ``claude_settings``): a time-named 0600
backup of the file read, its mode, owner and symlink kept, and a private record of the
value each key had before, so that ``--undo`` sets it back, or removes the key, and
leaves the file byte-identical when nothing else changed. A value the user set is never
replaced without ``--force``, and the output says so either way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachediag.analysis.tune_evidence import MAIN, SUBAGENTS
from cachediag.claude_settings import dump_settings, read_settings
from cachediag.errors import CachediagError
from cachediag.safefiles import read_private
from cachediag.settings_undo import install_key, record_path, uninstall_key

KEYS = {MAIN: "promptCacheTtl", SUBAGENTS: "subagentPromptCacheTtl"}
"""The settings.json key each kind's TTL is chosen by (Claude Code 2.1.243+)."""
VALUES = ("5m", "1h")


@dataclass(slots=True, frozen=True)
class KeyPlan:
    """One key: what it holds, what the evidence says, and what ``--apply`` does."""

    key: str
    current: Any
    """The value in the file (``None``: not set; any JSON value as written)."""
    ours: bool
    """The value is the one ``cachediag tune --apply`` wrote (``--undo`` knows it)."""
    history_ttl: str | None
    """The TTL the history's writes used: what was in force where the key is not set."""
    recommended: str | None
    action: str
    """``none`` (no recommendation), ``same`` (already in force), ``write``, ``explicit``
    (the user set another value: written only with ``--force``)."""

    def in_force(self) -> tuple[str | None, str]:
        """The TTL in force for this kind, and where it comes from."""
        if self.current is not None:
            return _text(self.current), "set by tune --apply" if self.ours else "settings.json"
        return self.history_ttl, "not set: the account's default, as the history wrote it"

    def writes(self, force: bool) -> bool:
        return self.action == "write" or (self.action == "explicit" and force)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _plain(value: Any) -> Any:
    """A value as JSON holds it: a string, true/false or null as itself, anything else
    (a number kept as written, an object) as its settings.json text."""
    if value is None or isinstance(value, (str, bool)):
        return value
    return dump_settings(value).strip()


def plan_key(
    key: str, settings: dict[str, Any], ours: dict[str, Any], history: str | None, rec: str | None
) -> KeyPlan:
    current = _plain(settings.get(key))
    mine = current is not None and key in ours and ours[key] == current
    if rec is None:
        action = "none"
    elif current == rec or (current is None and history == rec):
        action = "same"
    elif current is None or mine:
        action = "write"
    else:
        action = "explicit"
    return KeyPlan(key, current, mine, history, rec, action)


def tune_record(path: Path) -> dict[str, Any]:
    """key -> the value ``--apply`` last wrote there (from ``settings_undo``'s record)."""
    try:
        raw = read_private(str(record_path(path)), 16 << 20)
        record = json.loads(raw)
    except (OSError, ValueError):
        return {}
    keys = record.get("keys") if isinstance(record, dict) else None
    if not isinstance(keys, dict):
        return {}
    return {k: v.get("ours") for k, v in keys.items() if k in KEYS.values() and isinstance(v, dict)}


def plan_keys(
    path: Path, history: dict[str, str | None], recommended: dict[str, str | None]
) -> list[KeyPlan]:
    """Per key of ``KEYS``: its plan, from the file as it is now (``CachediagError``
    when it cannot be read: ``--apply`` refuses it too)."""
    settings = read_settings(path)
    ours = tune_record(path)
    return [
        plan_key(key, settings, ours, history.get(kind), recommended.get(kind))
        for kind, key in KEYS.items()
    ]


def apply_plans(path: Path, plans: list[KeyPlan], *, force: bool) -> list[str]:
    """Write every key the plans call for; one line each for the user."""
    lines: list[str] = []
    for plan in plans:
        if not plan.writes(force):
            continue
        value = plan.recommended
        if value not in VALUES:  # pragma: no cover - decide() names only these
            raise CachediagError(f"{plan.key}: {value!r} is not a TTL Claude Code takes")
        done = install_key(path, (plan.key,), _Value(value), _never_ours)
        was = "not set" if plan.current is None else f"was {_text(plan.current)}"
        backup = f"; backup: {done.backup}" if done.backup else ""
        lines.append(f"{path}: {plan.key} set to {value} ({was}{backup})")
    return lines


def undo_keys(path: Path) -> list[str]:
    """Put back each key as it was before ``--apply`` (or remove it); one line per key
    put back, or one saying there was nothing to undo."""
    done = [(key, uninstall_key(path, (key,), _never_ours)) for key in reversed(KEYS.values())]
    lines = [undone.line(key) for key, undone in done if undone.outcome != "absent"]
    return lines or [f"{path}: no TTL of cachediag tune's to undo; nothing changed."]


@dataclass(slots=True, frozen=True)
class _Value:
    """``install_key``'s ``compute``: this value, whatever the key holds now."""

    value: str

    def __call__(self, _current: Any) -> str:
        return self.value


def _never_ours(_value: Any) -> bool:
    # A TTL is "5m" or "1h" whoever wrote it: only the record says it was tune's.
    return False
