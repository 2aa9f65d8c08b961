#!/usr/bin/env python3
"""Record ccusage's per-session figures for the bundled fixtures (and the shared corpus).

The tests compare cachediag's token totals and costs with these files, so they run on a
machine without ccusage (CI). Re-run after changing the fixtures:

    python scripts/record_ccusage.py [--ccusage PATH] [--agents-only]

ccusage 20.0.24, installed as ``npm install --prefix /tmp/ccusage20 ccusage@20.0.24``
(``--ccusage /tmp/ccusage20/node_modules/.bin/ccusage``); ``--offline`` prices from its
bundled table, so nothing is fetched. ``--agents-only`` records only the reports across
agents (``record_agents``: ``tests/data/ccusage20_all_*.json``).

ccusage reads ``$CLAUDE_CONFIG_DIR/projects``; each source tree is copied into a fresh
temporary one so that nothing else on this machine is counted. The ``dedup`` tree is
``tests/history_tree.py``'s: the fixtures copied into several project folders of two
config dirs plus a backup of older prefixes, which ccusage reads deduplicated.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TREES = {
    "fixtures": [ROOT / "fixtures/real/spotter", ROOT / "fixtures/real/claude-code-viewer"],
    "corpus": [
        ROOT.parent / "shared/corpus/claude-code/spotter",
        ROOT.parent / "shared/corpus/claude-code/claude-code-viewer",
    ],
}
COMMAND = ["claude", "session", "--json", "--offline", "--mode", "calculate", "--breakdown"]
REPORTS = ("daily", "weekly", "monthly", "session", "blocks")
"""The reports ``cachediag daily|weekly|monthly|session|blocks`` stand in for."""
REPORT_OPTIONS = ["--json", "--offline", "--mode", "calculate", "--timezone", "UTC"]
VARIANTS = {
    "daily_instances": ["daily", "--instances"],
    "daily_window": ["daily", "--since", "20260211", "--until", "20260212", "--order", "desc"],
    "weekly_monday": ["weekly", "--start-of-week", "monday"],
    "session_window": ["session", "--since", "20260211", "--until", "20260211"],
    "blocks_window": ["blocks", "--since", "20260212", "--session-length", "2"],
    "daily_project": ["daily", "--project", "claude-code-viewer"],
    "daily_tokyo": ["daily", "--timezone", "Asia/Tokyo"],
    "session_breakdown": ["session", "--breakdown", "--id", "ae4a77f8-aedd-4bc1-888f-c94edc91af04"],
}
"""Options beyond the plain reports, recorded on the corpus: ``ccusage20_<name>_corpus``."""
ACTIVE = [(7200, 10, 100, 5000, 0), (3600, 5, 200, 1000, 5000), (600, 3, 300, 500, 6000)]
"""The active-block fixture: (seconds before now, input, output, cache write, cache read)."""
sys.path.insert(0, str(ROOT))


def record(ccusage: str, name: str, folders: list[Path]) -> Path | None:
    if not all(f.is_dir() for f in folders):
        print(f"{name}: source folders missing, skipped")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        projects = Path(tmp) / "projects"
        for folder in folders:
            shutil.copytree(folder, projects / folder.name)
        version, data = run_ccusage(ccusage, [Path(tmp)])
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


def run_ccusage(
    ccusage: str, config_dirs: list[Path], command: list[str] | None = None
) -> tuple[str, dict[str, Any]]:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": ",".join(map(str, config_dirs)), "TZ": "UTC"}
    version = subprocess.run(
        [ccusage, "--version"], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()
    out = subprocess.run(
        [ccusage, *(command or COMMAND)], capture_output=True, text=True, check=True, env=env
    ).stdout
    data: dict[str, Any] = json.loads(out)
    return version, data


def record_dedup(ccusage: str, name: str, real: Path) -> Path | None:
    """ccusage's deduplicated figures for the tree of copies and backups."""
    from tests.history_tree import build_history

    if not real.is_dir():
        print(f"{name}: {real} missing, skipped")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        version, data = run_ccusage(ccusage, build_history(Path(tmp), real))
    sessions = data["sessions"]
    totals = {
        key: sum(s[key] for s in sessions)
        for key in ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")
    }
    target = ROOT / f"tests/data/ccusage_sessions_{name}.json"
    recorded = {
        "ccusage_version": version,
        "command": "CLAUDE_CONFIG_DIR=one,two ccusage " + " ".join(COMMAND),
        "tree": f"tests/history_tree.py build_history from {os.path.relpath(real, ROOT)}",
        "totals": {**totals, "totalCost": sum(s["totalCost"] for s in sessions)},
        "sessions": sessions,
    }
    target.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n")
    print(f"{name}: {len(sessions)} sessions -> {target.relative_to(ROOT)}")
    return target


def record_reports(ccusage: str, name: str, folders: list[Path]) -> list[Path]:
    """ccusage's five Claude reports of one tree, each in ``ccusage20_<report>_<tree>.json``:
    what ``cachediag daily|weekly|monthly|session|blocks --json`` are compared with."""
    if not all(f.is_dir() for f in folders):
        print(f"{name}: source folders missing, skipped")
        return []
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        projects = Path(tmp) / "projects"
        for folder in folders:
            shutil.copytree(folder, projects / folder.name)
        runs = {report: [report] for report in REPORTS}
        if name == "corpus":
            runs.update(VARIANTS)
        for report, args in runs.items():
            options = REPORT_OPTIONS if "--timezone" not in args else REPORT_OPTIONS[:-2]
            command = ["claude", *args, *options]
            version, data = run_ccusage(ccusage, [Path(tmp)], command)
            target = ROOT / "tests/data" / f"ccusage20_{report}_{name}.json"
            base = ROOT.parent if name == "corpus" else ROOT
            recorded = {
                "ccusage_version": version,
                "command": "TZ=UTC ccusage " + " ".join(command),
                "trees": [str(f.relative_to(base)) for f in folders],
                "output": data,
            }
            target.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n")
            print(f"{name}: {report} -> {target.relative_to(ROOT)}")
            written.append(target)
    return written


def record_active(ccusage: str) -> Path:
    """``blocks --active`` on a transcript written just now (ccusage has no clock option):
    the transcript, the clock it was written at, and ccusage's output, with and without
    ``--token-limit``, so that tests replay it with ``--now``."""
    import time
    from datetime import UTC, datetime

    now = time.time()
    folder = ROOT / "tests/data/ccusage20_active/projects/demo"
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (ago, inp, out, write, read) in enumerate(ACTIVE):
        at = datetime.fromtimestamp(now - ago, UTC)
        usage = {
            "input_tokens": inp,
            "output_tokens": out,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
        }
        message = {"id": f"msg_{i}", "role": "assistant", "model": "claude-sonnet-4-5-20250929"}
        lines.append(
            {
                "type": "assistant",
                "sessionId": "s-demo",
                "cwd": "/home/u/demo",
                "uuid": f"u{i}",
                "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z",
                "requestId": f"req_{i}",
                "message": {**message, "content": [{"type": "text", "text": "ok"}], "usage": usage},
            }
        )
    # ccusage 20 reads only lines written as Claude Code writes them (no spaces).
    text = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
    (folder / "s-demo.jsonl").write_text(text)
    outputs = {}
    for label, extra in (("plain", []), ("limit", ["--token-limit", "10000"])):
        command = ["claude", "blocks", "--active", *extra, *REPORT_OPTIONS]
        version, outputs[label] = run_ccusage(ccusage, [folder.parent.parent], command)
    target = ROOT / "tests/data/ccusage20_blocks_active.json"
    recorded = {"ccusage_version": version, "now": now, "outputs": outputs}
    target.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n")
    print(f"active: -> {target.relative_to(ROOT)}")
    return target


def record_modes(ccusage: str) -> Path:
    """``daily --mode auto|calculate|display`` on a transcript of older Claude Code, whose
    lines carry their own ``costUSD`` (one does, one does not)."""
    folder = ROOT / "tests/data/ccusage20_modes/projects/old"
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (at, cost) in enumerate(
        [("2025-05-01T10:00:00.000Z", 0.5), ("2025-05-01T10:05:00.000Z", None)]
    ):
        usage = {"input_tokens": 1000, "output_tokens": 100}
        usage |= {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        message = {"id": f"m{i}", "role": "assistant", "model": "claude-sonnet-4-20250514"}
        line: dict[str, Any] = {
            "type": "assistant",
            "sessionId": "old1",
            "cwd": "/x",
            "timestamp": at,
            "requestId": f"r{i}",
            "uuid": f"u{i}",
            "message": {**message, "content": [{"type": "text", "text": "ok"}], "usage": usage},
        }
        if cost is not None:
            line["costUSD"] = cost
        lines.append(json.dumps(line, separators=(",", ":")))
    (folder / "old1.jsonl").write_text("\n".join(lines) + "\n")
    outputs = {}
    for mode in ("auto", "calculate", "display"):
        command = ["claude", "daily", "--json", "--offline", "--mode", mode, "--timezone", "UTC"]
        version, outputs[mode] = run_ccusage(ccusage, [folder.parent.parent], command)
    target = ROOT / "tests/data/ccusage20_modes.json"
    target.write_text(
        json.dumps({"ccusage_version": version, "outputs": outputs}, indent=2, sort_keys=True)
        + "\n"
    )
    print(f"modes: -> {target.relative_to(ROOT)}")
    return target


EDGES = [
    # (message id, request id, model, input tokens, sidechain, API error)
    ("m1", "r1", "claude-sonnet-4-20250514", 100, False, False),
    ("m_syn", "r_syn", "<synthetic>", 0, False, True),
    ("m1", "r1_replay", "claude-sonnet-4-20250514", 100, True, False),
    (None, "r4", "claude-sonnet-4-20250514", 100, False, False),
    ("m5", None, "claude-sonnet-4-20250514", 100, False, False),
    ("m5", None, "claude-sonnet-4-20250514", 100, False, False),
    ("m7", "r7", "claude-sonnet-4-20250514", 0, False, False),
]
"""Lines ccusage and cachediag count differently (docs/usage.md, "Other notes")."""


def record_edges(ccusage: str) -> Path:
    """``blocks`` and ``session`` on a transcript of the lines in ``EDGES``."""
    folder = ROOT / "tests/data/ccusage20_edges/projects/edge"
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (mid, rid, model, inp, side, error) in enumerate(EDGES):
        usage = {"input_tokens": inp, "output_tokens": inp // 10}
        usage |= {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        message: dict[str, Any] = {"role": "assistant", "model": model, "usage": usage}
        message["content"] = [{"type": "text", "text": "ok"}]
        line: dict[str, Any] = {"type": "assistant", "sessionId": "e1", "cwd": "/e"}
        line |= {"timestamp": f"2026-03-01T10:0{i}:00.000Z", "uuid": f"u{i}", "isSidechain": side}
        if mid is not None:
            message["id"] = mid
        if rid is not None:
            line["requestId"] = rid
        if error:
            line["isApiErrorMessage"] = True
        line["message"] = message
        lines.append(json.dumps(line, separators=(",", ":")))
    (folder / "e1.jsonl").write_text("\n".join(lines) + "\n")
    outputs = {}
    for report in ("blocks", "session"):
        command = ["claude", report, *REPORT_OPTIONS]
        version, outputs[report] = run_ccusage(ccusage, [folder.parent.parent], command)
    target = ROOT / "tests/data/ccusage20_edges.json"
    target.write_text(
        json.dumps({"ccusage_version": version, "outputs": outputs}, indent=2, sort_keys=True)
        + "\n"
    )
    print(f"edges: -> {target.relative_to(ROOT)}")
    return target


AGENT_REPORTS = {
    "all": ("daily", "weekly", "monthly", "session", "blocks"),
    "codex": ("daily", "monthly", "session"),
    "gemini": ("daily", "monthly", "session"),
    "opencode": ("daily", "weekly", "monthly", "session"),
}
"""The reports ccusage 20.0.24 has across agents (``ccusage <report>``) and for each
agent alone (``ccusage <agent> <report>``; Codex and Gemini CLI have no weekly)."""
AGENT_OPTIONS = ["--json", "--offline", "--timezone", "UTC"]


def record_agents(ccusage: str) -> list[Path]:
    """ccusage's reports on a home holding every agent's sessions (``tests/agents_home.py``):
    ``ccusage20_all_<report>.json`` across agents, ``ccusage20_all_<agent>_<report>.json``
    for one. Run with only ``PATH``, ``HOME`` and ``TZ=UTC`` set, so that each agent is
    found at its default place under that home and nothing else is read."""
    from tests.agents_home import add_channel, build_home

    written = []
    with tempfile.TemporaryDirectory() as tmp:
        home = build_home(Path(tmp) / "home")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "TZ": "UTC"}
        version = subprocess.run(
            [ccusage, "--version"], capture_output=True, text=True, check=True, env=env
        ).stdout.strip()
        for agent, reports in AGENT_REPORTS.items():
            for report in reports:
                command = [report] if agent == "all" else [agent, report]
                command += AGENT_OPTIONS
                out = subprocess.run(
                    [ccusage, *command], capture_output=True, text=True, check=True, env=env
                ).stdout
                name = report if agent == "all" else f"{agent}_{report}"
                target = ROOT / "tests/data" / f"ccusage20_all_{name}.json"
                recorded = {
                    "ccusage_version": version,
                    "command": "env -i PATH=$PATH HOME=<home> TZ=UTC ccusage " + " ".join(command),
                    "home": "tests/agents_home.py build_home",
                    "output": json.loads(out),
                }
                target.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n")
                print(f"agents: {' '.join(command[:2])} -> {target.relative_to(ROOT)}")
                written.append(target)
        # opencode's databases of two channels: ccusage reads only one of them.
        add_channel(home)
        command = ["opencode", "session", *AGENT_OPTIONS]
        out = subprocess.run(
            [ccusage, *command], capture_output=True, text=True, check=True, env=env
        ).stdout
        target = ROOT / "tests/data/ccusage20_all_opencode_channels.json"
        recorded = {
            "ccusage_version": version,
            "command": "env -i PATH=$PATH HOME=<home> TZ=UTC ccusage " + " ".join(command),
            "home": "tests/agents_home.py build_home, then add_channel",
            "output": json.loads(out),
        }
        target.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n")
        print(f"agents: opencode channels -> {target.relative_to(ROOT)}")
        written.append(target)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ccusage", default=shutil.which("ccusage") or "ccusage")
    parser.add_argument(
        "--agents-only", action="store_true", help="Only the reports across agents."
    )
    args = parser.parse_args()
    if args.agents_only:
        record_agents(args.ccusage)
        return
    for name, folders in TREES.items():
        record(args.ccusage, name, folders)
        record_reports(args.ccusage, name, folders)
    record_active(args.ccusage)
    record_modes(args.ccusage)
    record_edges(args.ccusage)
    record_dedup(args.ccusage, "dedup", ROOT / "fixtures/real")
    record_dedup(args.ccusage, "dedup_corpus", ROOT.parent / "shared/corpus/claude-code")
    record_agents(args.ccusage)


if __name__ == "__main__":
    main()
