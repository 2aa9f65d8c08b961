"""The vendored chart library is the one NOTICE.md names, and can sit inline in HTML."""

from __future__ import annotations

import hashlib
import re
from importlib.resources import files

from cachediag.report.html.page import ECHARTS_FILE, ECHARTS_VERSION, SCRIPT_FILES

ASSETS = files("cachediag.report.html") / "assets"


def test_vendored_library_matches_its_notice() -> None:
    notice = (ASSETS / "NOTICE.md").read_text()
    data = (ASSETS / ECHARTS_FILE).read_bytes()
    assert f"**{ECHARTS_VERSION}**" in notice
    assert hashlib.sha256(data).hexdigest() in notice
    for name in ("ECHARTS-LICENSE", "ECHARTS-NOTICE", "ECHARTS-LICENSE-d3"):
        assert (ASSETS / name).read_text().strip()
    assert "Apache License" in (ASSETS / "ECHARTS-LICENSE").read_text()


def test_inlined_scripts_cannot_end_their_element() -> None:
    for name in (ECHARTS_FILE, *SCRIPT_FILES, "report.css"):
        text = (ASSETS / name).read_text()
        assert not re.search(r"</(script|style)", text, re.I), name
        assert "<!--" not in text, name
