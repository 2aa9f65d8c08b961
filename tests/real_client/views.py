"""cachediag's accounts of a finished scenario, from each input a user can give it.

Every command runs as the installed CLI in a subprocess, with XDG dirs inside the
scenario's folder, so that every file cachediag writes can be searched for the canary key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.real_client.harness import Session


def cachediag(session: Session, *args: str, stdin: str | None = None) -> str:
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(session.state / "xdg-state"),
        "XDG_CACHE_HOME": str(session.state / "xdg-cache"),
        "XDG_CONFIG_HOME": str(session.state / "xdg-config"),
        "HOME": str(session.state / "home"),
        "NO_COLOR": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "cachediag", *args],
        input=stdin, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    if proc.returncode != 0:
        raise AssertionError(f"cachediag {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    session.outputs.append(proc.stdout + proc.stderr)
    return proc.stdout


def sessions(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def requests_of(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every request record of the JSON Lines, top level and streams, by message id; each
    gets 'stream' (main, or the stream's id) and 'stream_kind'."""
    out: dict[str, dict[str, Any]] = {}
    for doc in docs:
        for r in doc.get("requests") or []:
            out.setdefault(r["message_id"], {**r, "stream": "main", "stream_kind": "main"})
        for stream in doc.get("streams") or []:
            for r in stream.get("requests") or []:
                kind = stream.get("kind", "")
                out.setdefault(r["message_id"], {**r, "stream": stream["id"], "stream_kind": kind})
    return out


@dataclass
class Views:
    session: Session
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def capture_log(self) -> Path:
        files = self.session.capture_files()
        assert len(files) == 1, files
        return files[0]

    def analyze(self, which: str) -> list[dict[str, Any]]:
        """'transcript' alone, 'joined' (transcript + --captures), 'capture' log alone."""
        key = "analyze-" + which
        if key not in self.cache:
            s = self.session
            if which == "transcript":
                args = ["--no-captures", str(s.transcript())]
            elif which == "joined":
                args = ["--captures", str(s.captures), str(s.transcript())]
            else:
                args = ["--no-captures", str(self.capture_log)]
            self.cache[key] = sessions(cachediag(s, "analyze", "--json", "--requests", *args))
        result: list[dict[str, Any]] = self.cache[key]
        return result

    def explain(self, which: str) -> dict[str, Any]:
        key = "explain-" + which
        if key not in self.cache:
            s = self.session
            if which == "joined":
                args = ["--captures", str(s.captures), str(s.transcript())]
            else:
                args = ["--no-captures", str(self.capture_log)]
            self.cache[key] = json.loads(cachediag(s, "explain", "--json", *args))
        result: dict[str, Any] = self.cache[key]
        return result

    def statusline(self, payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        s = self.session
        text = json.dumps(payload)
        line = cachediag(s, "statusline", "--no-color", "--width", "300", stdin=text).strip()
        data = json.loads(cachediag(s, "statusline", "--json", "--no-color", stdin=text))
        return line, data


def payload_for(session: Session, model: str) -> dict[str, Any]:
    """The object Claude Code pipes to a statusLine command, in the shape 2.1.332 sends it
    (tests/real_client/test_interactive.py records the real one), for a ``-p`` session,
    whose CLI runs no status line: without Claude Code's own prompt_cache object, as
    releases before 2.1.251 send it, so cachediag reads the transcript."""
    work = str(session.work)
    return {
        "session_id": session.session_id,
        "transcript_path": str(session.transcript()),
        "cwd": work,
        "model": {"id": model, "display_name": model},
        "workspace": {"current_dir": work, "project_dir": work, "added_dirs": []},
        "version": session.version,
        "output_style": {"name": "default"},
        "cost": {"total_cost_usd": 0, "total_duration_ms": 0, "total_api_duration_ms": 0},
        "exceeds_200k_tokens": False,
    }


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]
