"""docs/advice.md is the advice table, and the version is read from a transcript."""

from __future__ import annotations

from pathlib import Path

from cachediag.analysis.advice import KNOBS, TABLE
from cachediag.analysis.advice_context import read_client_version, version_in
from cachediag.analysis.advice_doc import render_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_docs_page_equals_the_table() -> None:
    page = (ROOT / "docs" / "advice.md").read_text()
    assert page == render_markdown(), (
        "docs/advice.md is stale: python -m cachediag.analysis.advice_doc > docs/advice.md"
    )
    for cause in TABLE:
        assert f"| `{cause}` |" in page
    for knob in KNOBS.values():
        assert f"| `{knob.name}` | {knob.kind} | {knob.since} |" in page


def test_version_in() -> None:
    line = b'{"type":"user","version":"2.1.39","x":1}\n{"version":"2.1.332-beta"}\n'
    assert version_in(line) == "2.1.332"
    assert version_in(b'{"version":"nope"}') is None


def test_read_client_version(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    pad = b'{"type":"assistant","pad":"' + b"x" * 70_000 + b'"}\n'
    f.write_bytes(b'{"version":"2.1.243"}\n' + pad + b'{"version":"2.1.260"}\n')
    assert read_client_version(str(f)) == "2.1.260"  # the last one, from the tail
    f.write_bytes(b'{"version":"2.1.243"}\n' + pad)
    assert read_client_version(str(f)) == "2.1.243"  # none in the tail: the head's
    assert read_client_version(str(tmp_path / "gone.jsonl")) is None
    assert read_client_version(None) is None
