"""Record ccusage's per-session token totals for the bundled Claude Code fixtures.

ccusage (https://github.com/ryoppippi/ccusage) is an independent reader of Claude Code
transcripts that deduplicates one API response written as several lines. Its totals are
the independent data that ``tests/test_reference.py`` compares cachediag's ``totals``
with. Each session is copied alone into a throwaway ``$CLAUDE_CONFIG_DIR`` laid out as
``projects/<project>/<session>.jsonl`` (plus its ``<session>/subagents/`` folder), so
that ccusage's deduplication never crosses session boundaries.

Usage: python scripts/record_ccusage.py [path/to/ccusage]
(default: ``ccusage`` on PATH; the recording was made with ``/tmp/ccu/node_modules/.bin/ccusage``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "fixtures" / "real"
OUT = ROOT / "fixtures" / "ccusage" / "session-totals.json"
FOLDERS = ("spotter", "claude-code-viewer")
FIELDS = {
    "inputTokens": "input_tokens",
    "cacheReadTokens": "cache_read_tokens",
    "cacheCreationTokens": "cache_creation_tokens",
    "outputTokens": "output_tokens",
}


def session_files() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (REAL / folder).glob("*.jsonl"))


def run_ccusage(ccusage: str, session: Path) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "projects" / session.parent.name
        project.mkdir(parents=True)
        shutil.copy(session, project / session.name)
        subagents = session.with_suffix("")
        if subagents.is_dir():
            shutil.copytree(subagents, project / subagents.name)
        env = dict(os.environ, CLAUDE_CONFIG_DIR=tmp, TZ="UTC", NO_COLOR="1")
        out = subprocess.run(
            [ccusage, "claude", "session", "--json", "--offline"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=300,
        )
    sessions = json.loads(out.stdout)["sessions"]
    if len(sessions) != 1:
        raise SystemExit(f"{session}: ccusage reported {len(sessions)} sessions, expected 1")
    return {ours: int(sessions[0][theirs]) for theirs, ours in FIELDS.items()}


def main() -> None:
    ccusage = sys.argv[1] if len(sys.argv) > 1 else "ccusage"
    version = subprocess.run(
        [ccusage, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    totals = {
        str(p.relative_to(ROOT / "fixtures")): run_ccusage(ccusage, p) for p in session_files()
    }
    record = {
        "tool": "ccusage claude session --json --offline",
        "ccusage_version": version,
        "sessions": totals,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(totals)} sessions to {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
