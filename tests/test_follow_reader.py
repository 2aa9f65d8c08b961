"""The live reader (status line, watch) reads a transcript as ``analyze`` does (issue 14):
the ingest scanner picks the lines, with the needles ``analyze`` would use for the file,
and a line that is not a JSON object is a bad line for both."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cachediag.analysis.session_analysis import analyze_session
from cachediag.follow.live_session import LiveSession
from cachediag.follow.needles import file_needles, saved_needles
from cachediag.ingest.discover import sessions_for_file
from cachediag.ingest.needles import WANTED, WANTED_WITH_CHAINS, needles_for
from cachediag.ingest.reader import read_session
from cachediag.report.serialize import session_dict
from tests.conftest import REAL, SPOTTER_SESSION
from tests.statusline_support import THREE, cache_home, requests_seen, state_of, write

VIEWER = REAL / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"


@pytest.mark.parametrize("source", [SPOTTER_SESSION, VIEWER], ids=["2.1.x", "1.0.x-sidechains"])
def test_a_file_gets_the_needles_analyze_gives_it(source: Path, tmp_path: Path) -> None:
    head = source.read_bytes().splitlines(keepends=True)[:20]
    expected = needles_for(head, follow_chains=True)
    session = LiveSession(str(source))
    assert session.read(str(source))
    assert saved_needles(session.files[str(source)], chains=True) == expected
    assert (expected == WANTED) == (source == SPOTTER_SESSION)  # the two kinds are tested


def test_too_few_first_lines_to_tell_take_every_needle() -> None:
    v2 = b'{"version":"2.1.39","type":"user"}\n'
    assert file_needles(v2 * 20, chains=True) == WANTED
    assert file_needles(v2 * 3 + b'{"version":"2.1', chains=True) == WANTED_WITH_CHAINS
    assert file_needles(v2 * 3, chains=False) == WANTED  # an agent file links no chains
    assert saved_needles({"needles": ["made", "up"]}, chains=True) == WANTED_WITH_CHAINS


@pytest.mark.usefixtures(cache_home.__name__)
def test_needles_survive_appends_that_hold_no_request(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    user = json.dumps({"type": "user", "version": "2.1.39", "uuid": "u"}, separators=(",", ":"))
    write(t, [user] * 20 + THREE[:1])
    assert requests_seen(t) == 1
    assert state_of(t, cache_home)["files"][str(t)]["needles"] == [
        '"assistant"',
        "compact_boundary",
    ]
    write(t, [user], "a")  # no request: only the positions move on
    assert requests_seen(t) == 1
    saved = state_of(t, cache_home)["files"][str(t)]
    assert saved["lines"] == 22 and saved["needles"] == ['"assistant"', "compact_boundary"]
    write(t, THREE[1:], "a")
    assert requests_seen(t) == 3


@pytest.mark.usefixtures(cache_home.__name__)
def test_bad_lines_are_counted_as_analyze_counts_them(tmp_path: Path, cache_home: Path) -> None:
    t = tmp_path / "s1.jsonl"
    shutil.copyfile(SPOTTER_SESSION, t)
    with t.open("a") as fp:
        fp.write("not json at all\n[1, 2]\n" + THREE[0][:40] + "\n" + THREE[0] + "\n")
    analyzed = session_dict(analyze_session(read_session(sessions_for_file(t)), 0.0))
    requests_seen(t)
    header = state_of(t, cache_home)
    assert header["skipped_lines"] == analyzed["skipped_lines"] == 3
    assert (
        header["streams"]["main"]["prompt_cache"]["requests"]
        == (analyzed["prompt_cache"]["requests"])
    )
