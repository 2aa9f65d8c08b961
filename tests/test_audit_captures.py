"""``audit``, ``report`` and ``export`` join the proxy's captures as ``analyze`` does.

fixtures/proxy/compact-<version>/ hold one run of the real Claude Code through the proxy
(see tests/test_capture_only.py): the transcript holds 4 of the 5 requests the fake API
served, the capture folder all 5. Joined, the fifth (the compaction call) is counted with
its tokens and cost; each response still counts once, however many logs hold it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag import quick_audit
from cachediag.cli import main
from tests.conftest import FIXTURES
from tests.dataset_support import assert_same, require_module
from tests.test_report import page_of

VERSIONS = ("2.1.332", "2.1.260")
COMPACT = {v: FIXTURES / "proxy" / f"compact-{v}" for v in VERSIONS}
TOKENS = (
    ("input_tokens", "input_tokens"),
    ("cache_read_tokens", "cache_read_input_tokens"),
    ("cache_creation_tokens", "cache_creation_input_tokens"),
    ("output_tokens", "output_tokens"),
)


def _truth(version: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads((COMPACT[version] / "truth.json").read_text())
    return out


def _transcript(version: str) -> str:
    return str(next((COMPACT[version] / "transcript").glob("*.jsonl")))


def _captures(version: str) -> str:
    return str(COMPACT[version] / "captures")


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def _audit(*args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(_invoke("audit", "--json", "--no-progress", *args))
    return out


def _compaction_cost(version: str) -> float:
    """What ``analyze`` prices the call only the captures hold at."""
    obj = json.loads(
        _invoke(
            "analyze",
            "--json",
            "--requests",
            "--captures",
            _captures(version),
            _transcript(version),
        )
    )
    (call,) = (r for s in obj["streams"] for r in s["requests"] if r.get("captured_only"))
    cost: float = call["cost_usd"]
    assert cost > 0
    return cost


def _assert_counts_every_served_request(totals: dict[str, Any], version: str) -> None:
    truth = _truth(version)
    assert totals["requests"] == len(truth)
    for ours, theirs in TOKENS:
        assert totals[ours] == sum(t[theirs] for t in truth), ours


@pytest.mark.parametrize("version", VERSIONS)
def test_audit_joined_counts_the_compaction_call_and_its_cost(version: str) -> None:
    alone = _audit("--no-captures", _transcript(version))
    assert alone["totals"]["requests"] == len(_truth(version)) - 1
    joined = _audit("--captures", _captures(version), _transcript(version))
    _assert_counts_every_served_request(joined["totals"], version)
    assert joined["totals"]["cost_usd"] == pytest.approx(
        alone["totals"]["cost_usd"] + _compaction_cost(version), abs=2e-6
    )
    # The call is a stream of its own kind, not a request of the main stream.
    by_kind = _audit("--by", "stream-kind", "--captures", _captures(version), _transcript(version))
    kinds = {g["key"]: g["requests"] for g in by_kind["groups"]}
    assert kinds.get("compaction") == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_a_response_and_its_capture_count_once(version: str) -> None:
    # The capture folder named as a log too, before and after the transcript: each of
    # the five responses is in two logs and joined to the transcript, counted once.
    caps, transcript = _captures(version), _transcript(version)
    for paths in ((transcript, caps), (caps, transcript)):
        for jobs in ("1", "2"):  # read here, and in forked workers
            report = _audit("--jobs", jobs, "--captures", caps, *paths)
            _assert_counts_every_served_request(report["totals"], version)
    # The capture log alone counts the same requests and the same spend.
    alone = _audit("--no-captures", caps)["totals"]
    joined = _audit("--captures", caps, transcript)["totals"]
    assert joined["requests"] == alone["requests"]
    assert joined["cost_usd"] == pytest.approx(alone["cost_usd"], abs=2e-6)


def _default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """The fixture's captures as the proxy's default folder."""
    shutil.copytree(COMPACT[version] / "captures", tmp_path / "state" / "cachediag" / "captures")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def test_audit_joins_the_default_folder_unless_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = VERSIONS[0]
    _default_folder(tmp_path, monkeypatch, version)
    _assert_counts_every_served_request(_audit(_transcript(version))["totals"], version)
    assert _audit("--no-captures", _transcript(version))["totals"]["requests"] == 4


def test_the_quick_audit_path_joins_the_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    version = VERSIONS[0]
    _default_folder(tmp_path, monkeypatch, version)
    counts = []
    for extra in ([], ["--no-captures"]):
        args = quick_audit.audit_args(["--json", "--no-progress", *extra, _transcript(version)])
        assert args is not None  # the quick path takes --no-captures
        quick_audit.audit(args)
        counts.append(json.loads(capsysbinary.readouterr().out)["totals"])
    _assert_counts_every_served_request(counts[0], version)
    assert counts[1]["requests"] == 4


def test_a_missing_captures_folder_is_an_error(tmp_path: Path) -> None:
    for command in (["audit", "--json"], ["report", "-o", "-"]):
        result = CliRunner().invoke(
            main, [*command, "--captures", str(tmp_path / "absent"), _transcript(VERSIONS[0])]
        )
        assert result.exit_code == 1
        assert "no such folder" in result.output


@pytest.mark.parametrize("version", VERSIONS)
def test_report_joined_counts_the_compaction_call(version: str) -> None:
    html = _invoke(
        "report", "--no-progress", "-o", "-", "--captures", _captures(version), _transcript(version)
    )
    data = page_of(html)
    _assert_counts_every_served_request(data["overview"]["totals"], version)
    audit = _audit("--captures", _captures(version), _transcript(version))
    assert data["overview"]["totals"] == audit["totals"]
    (session,) = data["sessions"]
    # Its lane is named as known from the captures only.
    (lane,) = (lane for lane in session["lanes"] if lane["kind"] == "compaction")
    assert lane["id"].startswith("compaction-captured-")


@pytest.mark.parametrize("version", VERSIONS)
def test_export_joins_as_audit_does(version: str, tmp_path: Path) -> None:
    require_module("pyarrow")
    require_module("duckdb")
    caps, transcript = _captures(version), _transcript(version)
    out = tmp_path / "ds"
    _invoke("export", transcript, "--output", str(out), "--label", "host=h", "--captures", caps)
    for by in ("session", "cause", "stream-kind"):
        logs = _audit("--by", by, "--captures", caps, transcript)
        logs["empty_sessions"] = 0
        assert_same(_audit("--by", by, str(out)), logs, by)
    _assert_counts_every_served_request(_audit(str(out))["totals"], version)
