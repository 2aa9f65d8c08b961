"""The HTML report in a real headless Chromium (Debian's ``chromium`` package), driven
by Playwright: it renders without console errors, draws something, shows every miss of
the corpus session with its cause and time, fetches nothing, and runs no injected markup.

CI installs Chromium and the ``report-test`` extra (.ci/run), so there these tests run;
elsewhere they skip with the reason when either is missing.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from tests.conftest import REAL, ROOT, RULES, SPOTTER_SESSION

CHROMIUM = os.environ.get("CACHEDIAG_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
INJECTED = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def _missing() -> str | None:
    try:
        import PIL  # noqa: F401
        import playwright  # noqa: F401
    except ImportError:
        return "playwright or pillow not installed (pip install -e '.[report-test]')"
    if not Path(CHROMIUM).is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


MISSING = _missing()
if MISSING is not None and os.environ.get("CI"):
    # CI installs both: a skip there would hide a broken install step.
    raise RuntimeError(f"report browser tests cannot run in CI: {MISSING}")
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # The README's screenshot script opens Chromium; the tests open it the same way.
    spec = importlib.util.spec_from_file_location(
        "report_screenshot", ROOT / "scripts" / "report_screenshot.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = script.launch(p, profile, CHROMIUM, width=1400)
        yield context
        context.close()


class Opened:
    """A page loaded from disk, with what it logged and every request it made."""

    def __init__(self, context: Any, path: Path, fragment: str = "", width: int = 1400) -> None:
        self.console: list[tuple[str, str]] = []
        self.requests: list[str] = []
        self.page = context.new_page()
        self.page.set_viewport_size({"width": width, "height": 900})
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))
        # Every request goes through here; anything but the file itself is refused.
        self.page.route("**/*", self._route)
        self.url = path.resolve().as_uri()
        self.page.goto(self.url + fragment)
        self.page.wait_for_selector("body[data-ready='1']", timeout=20_000)

    def _route(self, route: Any) -> None:
        self.requests.append(route.request.url)
        if route.request.url == self.url:
            route.continue_()
        else:
            route.abort()

    def errors(self) -> list[tuple[str, str]]:
        return [m for m in self.console if m[0] in ("error", "pageerror", "warning")]


def write_report(tmp: Path, *args: str) -> Path:
    out = tmp / "report.html"
    result = CliRunner().invoke(main, ["report", "--no-progress", "-o", str(out), *args])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def spotter(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
    path = write_report(tmp_path_factory.mktemp("spotter"), str(SPOTTER_SESSION))
    opened = Opened(browser, path)
    yield opened
    opened.page.close()


def test_renders_without_console_errors(spotter: Opened) -> None:
    assert spotter.errors() == []
    assert spotter.page.locator("#timeline canvas").count() >= 1
    assert spotter.page.locator("#recommendation").inner_text().startswith("Recommendation: ")
    assert re.fullmatch(r"Spend by day \(\S+\)", spotter.page.locator("#day-title").inner_text())


def test_screenshot_is_not_blank(spotter: Opened) -> None:
    from PIL import Image, ImageStat

    png = spotter.page.locator("#timeline").screenshot()
    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.width > 800 and image.height > 300
    stat = ImageStat.Stat(image)
    assert stat.stddev[0] > 20, f"timeline looks blank (stddev {stat.stddev[0]:.1f})"
    # Enough different grey levels that bars, bands and axes were drawn, not one fill.
    assert len([n for n in image.histogram() if n > 50]) > 20


def test_every_miss_is_in_the_dom_with_cause_and_time(spotter: Opened) -> None:
    result = CliRunner().invoke(main, ["analyze", "--requests", "--now", "0", str(SPOTTER_SESSION)])
    obj = json.loads(result.stdout)
    streams = [("main", obj["requests"]), *((s["id"], s["requests"]) for s in obj["streams"])]
    misses = [(sid, r) for sid, rs in streams for r in rs if r["outcome"] == "miss"]
    assert len(misses) == 3  # the README's three misses of this session
    for stream, r in misses:
        row = spotter.page.locator(
            f'#miss-table tr[data-stream="{stream}"][data-index="{r["index"]}"]'
        )
        assert row.count() == 1, (stream, r["index"])
        when = datetime.fromtimestamp(r["at"], UTC).strftime("%Y-%m-%d %H:%M:%S")
        assert row.locator("td.time").inner_text() == when
        cause = row.locator("td.cause").inner_text()
        for c in r["causes"]:
            assert c in cause
    rows = spotter.page.locator("#miss-table tbody tr")
    texts = [rows.nth(i).inner_text() for i in range(rows.count())]
    assert any("20:19:04" in t and "ttl_expired_5m" in t for t in texts)
    assert any("20:58:58" in t and "ttl_expired_5m" in t for t in texts)
    assert any("21:03:30" in t and "messages_rewritten" in t for t in texts)
    assert any("20:30:31" in t and "expected (compaction)" in t for t in texts)


def test_makes_no_network_request(spotter: Opened) -> None:
    page = spotter.page
    # Hover, zoom and pick: interaction must not fetch anything either.
    box = page.locator("#timeline").bounding_box()
    assert box is not None
    for dx in (0.2, 0.5, 0.8, 0.95):
        page.mouse.move(box["x"] + box["width"] * dx, box["y"] + 120)
    page.mouse.wheel(0, -400)
    page.locator("#top-misses a").first.click()
    page.wait_for_timeout(200)
    assert spotter.requests == [spotter.url]
    assert spotter.errors() == []


def test_top_miss_link_opens_its_session_row(spotter: Opened) -> None:
    page = spotter.page
    page.locator("#top-misses a").first.click()
    focused = page.locator("#miss-table tr.focus")
    assert focused.count() == 1
    assert focused.get_attribute("data-index") == "113"  # the costliest: the 19-minute pause


def test_tooltip_shows_request_details(spotter: Opened) -> None:
    page = spotter.page
    page.evaluate(
        "echarts.getInstanceByDom(document.getElementById('timeline'))"
        ".dispatchAction({type: 'showTip', seriesIndex: 0, dataIndex: 18})"
    )
    tip = page.locator("#timeline div").filter(has_text="main #18")
    assert "claude-opus-4-6" in tip.first.inner_text()


def test_injected_markup_is_shown_as_text_never_run(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A model name and a project folder holding markup: shown literally, never parsed."""
    tmp = tmp_path_factory.mktemp("inject")
    project = tmp / 'proj<img src=x onerror="window.__pwned=3">'
    project.mkdir()
    text = (RULES / "model_changed.jsonl").read_text()
    text = text.replace("claude-sonnet-4-5-20250929", json.dumps(INJECTED)[1:-1])
    # The session picker names the project by the transcripts' cwd: markup there too.
    text = text.replace("/home/USER/project", json.dumps(str(project))[1:-1])
    (project / "00000000-0000-4000-8000-000000000000.jsonl").write_text(text)
    opened = Opened(browser, write_report(tmp, str(project)))
    page = opened.page
    try:
        assert page.evaluate("window.__pwned") is None
        assert page.locator("img").count() == 0
        assert page.locator("script").count() == 3
        table = page.locator("#miss-table").inner_text()
        assert "model_changed" in table and INJECTED in table
        assert "proj<img" in page.locator("#session-picker").inner_text()
        # The tooltip is markup: the request's model must reach it escaped.
        page.evaluate(
            "echarts.getInstanceByDom(document.getElementById('timeline'))"
            ".dispatchAction({type: 'showTip', seriesIndex: 0, dataIndex: 1})"
        )
        tip = page.locator("#timeline div").filter(has_text="main #1")
        assert INJECTED in tip.first.inner_text()
        assert page.locator("img").count() == 0
        assert page.evaluate("window.__pwned") is None
        assert opened.errors() == []
        assert opened.requests == [opened.url]
    finally:
        page.close()


def test_session_picker_shows_each_session(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("several")
    opened = Opened(
        browser, write_report(tmp, str(REAL / "spotter"), str(REAL / "claude-code-viewer"))
    )
    page = opened.page
    try:
        options = page.locator("#session-picker option")
        ids = [
            json.loads(s)["session_id"]
            for s in _analyze_lines(REAL / "spotter", REAL / "claude-code-viewer")
        ]
        assert options.count() == len(ids) > 1
        # Several sessions: the totals come first.
        assert page.evaluate(
            "document.getElementById('overview').compareDocumentPosition("
            "document.getElementById('session')) & Node.DOCUMENT_POSITION_FOLLOWING"
        )
        for i in range(options.count()):
            page.select_option("#session-picker", str(i))
            page.wait_for_function(f"location.hash === '#session={i}'")
            meta = page.locator("#session-meta").inner_text()
            assert any(meta.startswith(sid) for sid in ids)
        assert page.locator("#top-misses tbody tr").count() == 4
        assert opened.errors() == []
        assert opened.requests == [opened.url]
    finally:
        page.close()


def _analyze_lines(*paths: Path) -> list[str]:
    result = CliRunner().invoke(main, ["analyze", "--json", "--now", "0", *map(str, paths)])
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_capture_side_calls_share_a_lane_and_tool_names_show(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    capture = ROOT / "fixtures" / "captures" / "tools_changed.jsonl"
    opened = Opened(browser, write_report(tmp_path_factory.mktemp("capture"), str(capture)))
    page = opened.page
    try:
        lanes = page.evaluate(
            "echarts.getInstanceByDom(document.getElementById('timeline'))"
            ".getOption().yAxis.map(a => a.name)"
        )
        side_calls = [
            s for s in json.loads(_analyze_lines(capture)[0])["streams"] if s["kind"] == "side_call"
        ]
        assert len(side_calls) > 1
        assert lanes[0] == "main"
        assert f"side calls ({len(side_calls)} streams)" in lanes
        cell = page.locator('#miss-table tr[data-stream="main"] td.cause').first
        cause = cell.inner_text().splitlines()[0]
        # As explain names them, with where the cause came from (the request bodies).
        assert cause == "tools_changed (+WebFetch; -LS) [capture]"
        assert opened.errors() == []
        assert opened.requests == [opened.url]
    finally:
        page.close()


@pytest.mark.parametrize(
    "fragment", ["#miss=%E0%A4%A", "#session=0&miss=%E0%A4%A", "#%E0=1&session=%", "#__proto__=x"]
)
def test_a_malformed_fragment_is_passed_over(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, fragment: str
) -> None:
    """A link anyone can write: a part that does not decode is ignored, the page drawn."""
    path = write_report(tmp_path_factory.mktemp("fragment"), str(SPOTTER_SESSION))
    opened = Opened(browser, path, fragment)
    try:
        assert opened.errors() == []
        assert opened.page.locator("#miss-table tbody tr").count() > 0
        assert opened.page.locator("#timeline canvas").count() >= 1
    finally:
        opened.page.close()


BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
RECT_OF = """([root, needle]) => {
  const walker = document.createTreeWalker(document.getElementById(root), NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const i = n.data.indexOf(needle);
    if (i < 0) continue;
    const range = document.createRange();
    range.setStart(n, i);
    range.setEnd(n, i + needle.length);
    const box = range.getBoundingClientRect();
    return [box.left, box.right];
  }
  return null;
}"""


@pytest.mark.parametrize(
    ("project", "shown"),
    [("/home/LEFT\u202eRIGHT", "RIGHT"), ("/home/\u0645\u0634\u0631\u0648\u0639", "\u0645")],
    ids=["override", "arabic"],
)
def test_log_text_cannot_reorder_the_report_text(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, project: str, shown: str
) -> None:
    """A project folder (from the transcripts' cwd) with a right-to-left override, or in
    Arabic: the session line still reads project, then its start and end, in order."""
    tmp = tmp_path_factory.mktemp("bidi")
    folder = tmp / "p"
    folder.mkdir()
    text = (RULES / "model_changed.jsonl").read_text()
    text = text.replace("/home/USER/project", json.dumps(project)[1:-1])
    text = text.replace("claude-sonnet-4-5-20250929", "model\\u202eledom")
    (folder / "00000000-0000-4000-8000-000000000000.jsonl").write_text(text)
    path = write_report(tmp, str(folder))
    (session,) = _page_data(path)["sessions"]
    start = datetime.fromtimestamp(session["first_at"], UTC).strftime("%Y-%m-%d %H:%M")
    opened = Opened(browser, path)
    page = opened.page
    try:
        meta = page.locator("#session-meta").inner_text()
        assert not BIDI.findall(meta), meta
        assert not BIDI.findall(page.locator("#miss-table").inner_text())
        # One line, so that left and right compare (the source path would wrap it).
        page.evaluate("document.getElementById('session-meta').style.whiteSpace = 'nowrap'")
        name = page.evaluate(RECT_OF, ["session-meta", shown])
        when = page.evaluate(RECT_OF, ["session-meta", start])
        utc = page.evaluate(RECT_OF, ["session-meta", " UTC"])
        assert name is not None and when is not None and utc is not None, meta
        # Left to right: the project's name, the session's start, then "UTC".
        assert name[1] <= when[0] and when[1] <= utc[0], (name, when, utc)
        assert opened.errors() == []
    finally:
        page.close()


def _page_data(path: Path) -> dict[str, Any]:
    html = path.read_text(encoding="utf-8")
    match = re.search(r'<script id="cachediag-data" type="application/json">(.*?)</script>', html)
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def test_a_session_without_prices_shows_unpriced(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No price for any of its requests: unpriced, where $0.00 was shown."""
    tmp = tmp_path_factory.mktemp("unpriced")
    prices = tmp / "prices.json"
    prices.write_text(json.dumps({"source": "none of these", "models": {}}))
    opened = Opened(browser, write_report(tmp, "--pricing", str(prices), str(SPOTTER_SESSION)))
    page = opened.page
    try:
        picker = page.locator("#session-picker option").first.inner_text()
        assert "unpriced" in picker and "$" not in picker, picker
        cards = page.locator("#totals .card .v")
        values = [cards.nth(i).inner_text() for i in range(cards.count())]
        assert values[2] == "unpriced", values
        assert "unpriced" in values[3] and "$" not in values[3], values
        assert "$0.00" not in page.locator("#session-summary").inner_text()
        whatif = page.evaluate(ZR_TEXTS.replace("'timeline'", "'chart-whatif'"))
        assert "unpriced" in whatif and "$0.00" not in whatif, whatif
        assert opened.errors() == []
    finally:
        page.close()


ZR_TEXTS = """() => {
  const chart = echarts.getInstanceByDom(document.getElementById('timeline'));
  return chart.getZr().storage.getDisplayList(true)
    .map(el => el.style && el.style.text).filter(t => typeof t === 'string');
}"""


EVERY_AGENT = (
    str(REAL / "spotter" / "tool_heavy.jsonl"),
    *(
        str(ROOT / "tests" / "data" / home)
        for home in ("codex_home_changes", "gemini_home", "opencode_home_changes")
    ),
)
"""A Claude Code transcript and the recorded homes of the three other agents."""


def test_several_agents_spend_by_agent_and_the_list_names_each(
    browser: Any, tmp_path: Path
) -> None:
    opened = Opened(browser, write_report(tmp_path, *EVERY_AGENT))
    try:
        page = opened.page
        assert opened.errors() == []
        assert page.locator("#agent-panel").is_visible()
        assert page.locator("#chart-agent canvas").count() >= 1
        headers = page.locator("#session-list th").all_inner_texts()
        assert headers[:2] == ["project", "agent"]
        cells = page.locator('#session-list td[data-key="agent"]').all_inner_texts()
        assert sorted(cells) == ["claude", "codex", "gemini", "opencode"]
        # The costliest misses say whose session each is in, beside the session's id.
        top = page.locator("#top-misses th").all_inner_texts()
        assert top[2:4] == ["session", "agent"]
        whose = page.locator("#top-misses tbody td:nth-child(4)").all_inner_texts()
        assert whose and set(whose) <= {"claude", "codex", "gemini", "opencode"}
        page.fill("#session-filter", "gemini")
        assert page.locator('#session-list tbody td[data-key="agent"]').all_inner_texts() == [
            "gemini"
        ]
        page.locator("#session-list tbody tr a").first.click()
        assert "gemini (gemini-cli)" in page.locator("#session-meta").inner_text()
    finally:
        opened.page.close()
    # One agent: no agent column, no spend by agent.
    (tmp_path / "one").mkdir()
    one = Opened(browser, write_report(tmp_path / "one", str(REAL / "spotter")))
    try:
        assert not one.page.locator("#agent-panel").is_visible()
        assert "agent" not in one.page.locator("#session-list th").all_inner_texts()
        assert "agent" not in one.page.locator("#top-misses th").all_inner_texts()
    finally:
        one.page.close()
