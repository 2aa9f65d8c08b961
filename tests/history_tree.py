"""A Claude Code history as people really have it: copies everywhere.

The bundled real sessions, copied into several project folders of two config dirs, plus
a backup folder holding older prefixes of one session (one under the session's own name,
one renamed). ``scripts/record_ccusage.py`` records ccusage's totals for this very tree
(``tests/data/ccusage_sessions_dedup.json``); ``tests/test_history.py`` holds cachediag
to them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "fixtures" / "real"
BACKED_UP = "4d5611e5-241a-462a-8d15-5122611a9569"
"""The session of which the backup folder holds older prefixes."""
CONFIG_DIRS = ("one", "two")


def _prefix(source: Path, target: Path, share: float) -> None:
    lines = source.read_bytes().splitlines(keepends=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"".join(lines[: int(len(lines) * share)]))


def build_history(root: Path, real: Path = REAL) -> list[Path]:
    """Write the tree below ``root`` from ``real`` (the bundled sessions, or the shared
    corpus they come from); returns the config dirs (for CLAUDE_CONFIG_DIR)."""
    spotter, viewer = real / "spotter", real / "claude-code-viewer"
    one, two = (root / name / "projects" for name in CONFIG_DIRS)
    shutil.copytree(spotter, one / "-home-me-spotter")
    shutil.copytree(spotter, one / "-home-me-spotter-copy")  # a copied project folder
    shutil.copytree(viewer, one / "-home-me-viewer")
    shutil.copytree(spotter, two / "-home-me-spotter")  # the second config dir
    shutil.copytree(viewer, two / "-home-me-viewer")
    session = spotter / f"{BACKED_UP}.jsonl"
    _prefix(session, two / "-backup" / f"{BACKED_UP}.jsonl", 0.6)
    _prefix(session, two / "-backup" / "before-upgrade.jsonl", 0.3)  # renamed
    return [root / name for name in CONFIG_DIRS]
