"""``ANTHROPIC_BASE_URL`` in Claude Code's settings.json, so every session goes through
the proxy. The rules of any settings change (backup, atomic, mode and links kept) live in
``claude_settings``; here only what to change and when to refuse."""

from __future__ import annotations

from pathlib import Path

from cachediag.claude_settings import Edited, Settings, edit_settings
from cachediag.errors import CachediagError

ENV_KEY = "ANTHROPIC_BASE_URL"


def _is_ours(value: object) -> bool:
    # Any loopback URL is taken to be an earlier run of this proxy (another port).
    return isinstance(value, str) and value.startswith(("http://127.0.0.1:", "http://localhost:"))


def install_base_url(settings: Path, url: str, *, force: bool = False) -> Edited:
    def change(obj: Settings) -> Settings | None:
        env = obj.get("env")
        if env is not None and not isinstance(env, dict):
            raise CachediagError(f"{settings}: its 'env' is not a JSON object; not changed")
        current = (env or {}).get(ENV_KEY)
        if current == url:
            return None
        if current is not None and not _is_ours(current) and not force:
            raise CachediagError(
                f"{settings} already sets env.{ENV_KEY} to another URL; pass --force to "
                "replace it (a backup is kept)"
            )
        obj["env"] = {**(env or {}), ENV_KEY: url}
        return obj

    return edit_settings(settings, change)
