#!/usr/bin/env python3
"""Record ccusage's per-session figures for the bundled fixtures (and the shared corpus).

The tests compare cachediag's token totals and costs with these files, so they run on a
machine without ccusage (CI). Re-run after changing the fixtures:

    python scripts/record_ccusage.py [--ccusage PATH]

ccusage reads ``$CLAUDE_CONFIG_DIR/projects``; each source tree is copied into a fresh
temporary one so that nothing else on this machine is counted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREES = {
    "fixtures": [ROOT / "fixtures/real/spotter", ROOT / "fixtures/real/claude-code-viewer"],
    "corpus": [
        ROOT.parent / "shared/corpus/claude-code/spotter",
        ROOT.parent / "shared/corpus/claude-code/claude-code-viewer",
    ],
}
COMMAND = ["claude", "session", "--json", "--offline", "--mode", "calculate", "--breakdown"]


def record(ccusage: str, name: str, folders: list[Path]) -> Path | None:
    if not all(f.is_dir() for f in folders):
        print(f"{name}: source folders missing, skipped")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        projects = Path(tmp) / "projects"
        for folder in folders:
            shutil.copytree(folder, projects / folder.name)
        env = {**os.environ, "CLAUDE_CONFIG_DIR": tmp, "TZ": "UTC"}
        version = subprocess.run(
            [ccusage, "--version"], capture_output=True, text=True, check=True, env=env
        ).stdout.strip()
        out = subprocess.run(
            [ccusage, *COMMAND], capture_output=True, text=True, check=True, env=env
        ).stdout
    data = json.loads(out)
    target = ROOT / "tests/data" / f"ccusage_sessions_{name}.json"
    recorded = {
        "ccusage_version": version,
        "command": "ccusage " + " ".join(COMMAND),
        "trees": [str(f.relative_to(ROOT.parent if name == "corpus" else ROOT)) for f in folders],
        "sessions": data["sessions"],
    }
    target.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n")
    print(f"{name}: {len(data['sessions'])} sessions -> {target.relative_to(ROOT)}")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ccusage", default=shutil.which("ccusage") or "ccusage")
    args = parser.parse_args()
    for name, folders in TREES.items():
        record(args.ccusage, name, folders)


if __name__ == "__main__":
    main()
