"""The ready-made bash + jq status lines, run with real bash and jq on fixtures."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT
from tests.statusline_support import THREE, write

SCRIPTS = ROOT / "statusline"
CASES = sorted((FIXTURES / "statusline").glob("*.json"))

pytestmark = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("jq") is None, reason="needs bash and jq"
)


def run_script(name: str, stdin: bytes, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["bash", str(SCRIPTS / name)],
        input=stdin,
        capture_output=True,
        env={**os.environ, **env},
        timeout=30,
    )


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_prompt_cache_script_on_fixture(case: Path) -> None:
    expected = case.with_suffix(".expected").read_text().strip()
    result = run_script("prompt-cache.sh", case.read_bytes())
    assert result.returncode == 0
    assert result.stderr == b""
    line = result.stdout.decode()
    assert line.endswith("\n") and line.count("\n") == 1
    assert re.fullmatch(expected, line[:-1]), line


def test_prompt_cache_script_without_jq(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run(
        [bash, str(SCRIPTS / "prompt-cache.sh")],
        input=b"{}",
        capture_output=True,
        env={"PATH": str(tmp_path)},
    )
    assert (result.returncode, result.stdout) == (0, b"cache ? (jq not found)\n")


def test_cachediag_script_adds_what_claude_code_lacks(tmp_path: Path) -> None:
    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    command = f"{sys.executable} -m cachediag"
    env = {"CACHEDIAG": command, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path)}
    # An old Claude Code: no prompt_cache, cachediag computes it from the transcript.
    # 20000 / (20000 + 41500 + 30) = 32.5%; the last write (T0+1000) expired long ago.
    result = run_script(
        "cachediag-json.sh", json.dumps({"transcript_path": str(t)}).encode(), **env
    )
    assert (result.returncode, result.stdout) == (
        0,
        b"cache 32% \xc2\xb7 cold \xc2\xb7 1 miss \xc2\xb7 last: ttl_expired_5m\n",
    )


def test_cachediag_script_falls_back_to_claude_codes_object() -> None:
    stdin = json.dumps({"prompt_cache": {"hit_ratio": 0.5, "requests": 2, "misses": 0}}).encode()
    result = run_script("cachediag-json.sh", stdin, CACHEDIAG="/nonexistent/cachediag")
    assert (result.returncode, result.stdout) == (0, "cache 50% · cold · 0 misses\n".encode())


def test_cachediag_script_without_its_partner_still_prints(tmp_path: Path) -> None:
    lonely = tmp_path / "cachediag-json.sh"
    shutil.copyfile(SCRIPTS / "cachediag-json.sh", lonely)
    result = subprocess.run(
        ["bash", str(lonely)],
        input=b"{}",
        capture_output=True,
        env={**os.environ, "CACHEDIAG": "false"},
    )
    assert (result.returncode, result.stdout) == (0, b"cache ?\n")


def test_cachediag_script_names_the_tools_from_the_captures(tmp_path: Path) -> None:
    """Issue 12 through the jq scripts: the names ``--json`` adds, the first of each."""
    env = {
        "CACHEDIAG": f"{sys.executable} -m cachediag",
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path),
        "XDG_STATE_HOME": str(ROOT / "fixtures" / "proxy" / "state"),
    }
    stdin = (ROOT / "fixtures" / "proxy" / "statusline.json").read_bytes()
    result = subprocess.run(
        ["bash", str(SCRIPTS / "cachediag-json.sh")],
        input=stdin,
        capture_output=True,
        env={**os.environ, **env},
        cwd=ROOT,  # the fixture's transcript_path is relative to the repository
        timeout=60,
    )
    assert result.stdout.decode() == (
        "cache 34% · cold · 2 misses ($0.17) · last: tools_changed "
        "(+3: mcp__github__create_issue, …)\n"
    )


def test_prompt_cache_script_sanitises_names() -> None:
    cause = {"causes": ["tools_changed\x1b[2J"], "tools_added": 1, "tools_removed": 1}
    names = {"tools_added_names": ["mcp__a\x1b]0;t\x07"], "tools_removed_names": ["b\u202e"]}
    stdin = {"prompt_cache": {"hit_ratio": 0.5, "last_miss_cause": cause},
             "cachediag": {"last_miss_cause": names}}  # fmt: skip
    result = run_script("prompt-cache.sh", json.dumps(stdin).encode())
    assert result.stdout.decode() == (
        "cache 50% · last: tools_changed?[2J (+1: mcp__a?]0;t?; -1: b?)\n"
    )
