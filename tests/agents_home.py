"""A user's home with every agent's history, assembled from the repo's recorded sessions.

``scripts/record_ccusage.py`` runs ccusage 20.0.24 on it (``tests/data/ccusage20_all_*``)
and tests/test_usage_agents.py runs cachediag on a fresh copy, so both read the same:

- Claude Code: ``fixtures/real/spotter`` and ``claude-code-viewer`` under
  ``.claude/projects``;
- Codex: the rollouts of ``tests/data/codex_home_changes`` and ``codex_home_pause``
  under ``.codex/sessions``;
- Gemini CLI: ``tests/data/gemini_home/.gemini``;
- opencode: ``tests/data/opencode_home_changes``'s database as
  ``.local/share/opencode/opencode.db`` (ccusage reads that one file only).

No ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``GEMINI_CLI_HOME`` or ``XDG_DATA_HOME``: each
agent is found at its default place under ``HOME``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests/data"
CLAUDE_PROJECTS = ("spotter", "claude-code-viewer")
CODEX_HOMES = ("codex_home_changes", "codex_home_pause")
OPENCODE_HOME = "opencode_home_changes"
MOVED = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "XDG_DATA_HOME", "OPENCODE_DB")
"""Variables that would move an agent's home away from ``HOME``: unset for both tools."""


def build_home(home: Path) -> Path:
    """Every agent's sessions under ``home`` (created), as each agent keeps them."""
    projects = home / ".claude/projects"
    for name in CLAUDE_PROJECTS:
        shutil.copytree(ROOT / "fixtures/real" / name, projects / name)
    for name in CODEX_HOMES:
        shutil.copytree(DATA / name / "sessions", home / ".codex/sessions", dirs_exist_ok=True)
    shutil.copytree(DATA / "gemini_home/.gemini", home / ".gemini")
    db = home / ".local/share/opencode/opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copyfile(DATA / OPENCODE_HOME / "opencode/opencode.db", db)
    return home


CHANNEL_DB = "opencode-dev.db"
"""A second opencode database, as a non-release channel writes it (``opencode-<channel>.db``
beside ``opencode.db``): ``tests/data/opencode_home_anthropic``'s."""


def add_channel(home: Path) -> Path:
    """``home`` with opencode's second database (``CHANNEL_DB``) beside the first."""
    target = home / ".local/share/opencode" / CHANNEL_DB
    shutil.copyfile(DATA / "opencode_home_anthropic/opencode/opencode.db", target)
    return home
