"""Every knob the advice names exists in the real Claude Code from the version it names.

The bundles are the npm installs .ci/run makes under .cache/claude-code/<version>
(tests/real_client/versions.txt); the test greps the CLI's bytes (the native binary and
any JavaScript bundle) for each knob's name. Without them it skips, saying why; under CI
(which installs them) a missing bundle fails the run instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cachediag.analysis.advice import KNOBS, AdviceContext, advice_for, parse_version
from cachediag.analysis.causes import Cause

ROOT = Path(__file__).resolve().parents[1]
# As tests/real_client/harness.py finds them (not imported: it needs the proxy extra).
INSTALL_ROOT = Path(os.environ.get("CACHEDIAG_CLAUDE_CODE_ROOT", ROOT / ".cache" / "claude-code"))
VERSIONS = [
    v
    for line in (ROOT / "tests" / "real_client" / "versions.txt").read_text().splitlines()
    if (v := line.split("#", 1)[0].strip())
]


def _bundle_files(version: str, root: Path = INSTALL_ROOT) -> list[Path]:
    base = root / version / "node_modules" / "@anthropic-ai"
    found = []
    for pkg in ("claude-code", "claude-code-linux-x64"):
        root = base / pkg
        if not root.is_dir():
            continue
        for path in root.rglob("*"):
            if path.is_file() and (path.suffix in (".js", ".mjs", ".exe") or path.name == "claude"):
                found.append(path)
    return found


def _needles_in(files: list[Path], needles: set[str]) -> set[str]:
    """Which needles occur in any of the files (read in chunks: the binary is large)."""
    left = {n: n.encode() for n in needles}
    seen: set[str] = set()
    overlap = max((len(b) for b in left.values()), default=1)
    for path in files:
        with path.open("rb") as f:
            prev = b""
            while left and (chunk := f.read(1 << 22)):
                window = prev + chunk
                for name, raw in list(left.items()):
                    if raw in window:
                        seen.add(name)
                        del left[name]
                prev = window[-overlap:]
    return seen


@pytest.fixture(scope="module", params=VERSIONS)
def bundle(request: pytest.FixtureRequest) -> tuple[str, list[Path]]:
    version = str(request.param)
    files = _bundle_files(version)
    if not files:
        where = INSTALL_ROOT / version
        if os.environ.get("CI"):
            pytest.fail(f"Claude Code {version} is not installed in {where}, but CI is set")
        pytest.skip(f"Claude Code {version} is not installed in {where} (.ci/run installs it)")
    return version, files


def test_knobs_exist_from_their_version(bundle: tuple[str, list[Path]]) -> None:
    version, files = bundle
    here = parse_version(version)
    assert here is not None
    due = {k.needle for k in KNOBS.values() if (parse_version(k.since) or ()) <= here}
    missing = due - _needles_in(files, due)
    assert not missing, f"Claude Code {version} lacks {sorted(missing)}"


def test_advice_for_the_installed_version_names_only_what_it_has(
    bundle: tuple[str, list[Path]],
) -> None:
    version, files = bundle
    named: set[str] = set()
    for cause in Cause:
        for kind in ("main", "subagent"):
            ctx = AdviceContext(version=version, stream_kind=kind, defer_loading=False)
            named.update(advice_for(cause, ctx).knobs)
    needles = {KNOBS[n].needle for n in named}
    assert needles <= _needles_in(files, needles)


def test_needles_found_across_chunks(tmp_path: Path) -> None:
    # The search must see a name split across two reads, and nothing that is absent.
    pkg = tmp_path / "9.9.9" / "node_modules" / "@anthropic-ai" / "claude-code" / "bin"
    pkg.mkdir(parents=True)
    blob = b"x" * ((1 << 22) - 5) + b"promptCacheTtl" + b"y" * 100 + b"ENABLE_TOOL_SEARCH"
    (pkg / "claude.exe").write_bytes(blob)
    (pkg / "notes.txt").write_bytes(b"system-prompt-snapshot")  # not the CLI: not read
    files = _bundle_files("9.9.9", tmp_path)
    assert [f.name for f in files] == ["claude.exe"]
    wanted = {"promptCacheTtl", "ENABLE_TOOL_SEARCH", "system-prompt-snapshot", "cacheTtl"}
    # "cacheTtl" is case-sensitive: "promptCacheTtl" does not hold it.
    assert _needles_in(files, wanted) == {"promptCacheTtl", "ENABLE_TOOL_SEARCH"}


@pytest.mark.parametrize("knob", list(KNOBS.values()), ids=list(KNOBS))
def test_older_session_is_not_told_a_newer_knob(knob: object) -> None:
    from cachediag.analysis.advice_table import Knob

    assert isinstance(knob, Knob)
    since = parse_version(knob.since)
    assert since is not None and since[2] > 0
    older = f"{since[0]}.{since[1]}.{since[2] - 1}"
    for cause in Cause:
        for kind in ("main", "subagent"):
            for deferred in (None, False, True):
                ctx = AdviceContext(version=older, stream_kind=kind, defer_loading=deferred)
                advice = advice_for(cause, ctx)
                assert knob.name not in advice.knobs, (cause, older)
                assert f"`{knob.name}" not in advice.action, (cause, older)
