"""The HTML report's layout and navigation in Chromium (as test_report_browser.py opens
it): the session list sorts, filters and opens a session; the cause chart leaves out
``no_miss``; spend by project and model; no label covers another, even for misses
seconds apart; no sideways scroll at 1024 and 1400 px (screenshots kept in tmp_path).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REAL, ROOT, RULES, SPOTTER_SESSION
from tests.test_report_browser import (
    CHROMIUM,
    EVERY_AGENT,
    MISSING,
    ZR_TEXTS,
    Opened,
    _page_data,
    write_report,
)

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
SEVERAL = (str(REAL / "spotter"), str(REAL / "claude-code-viewer"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium as test_report_browser.py opens it (scripts/report_screenshot.py)."""
    from playwright.sync_api import sync_playwright

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


TEXT_BOXES = """(id) => {
  // Every text the chart draws and shows, as a box in page pixels: its measured width,
  // one font size high around where it is centred, turned as the text is (lane titles
  // and axis labels included). Labels ECharts hid for overlapping are left out.
  const chart = echarts.getInstanceByDom(document.getElementById(id));
  const out = [];
  chart.getZr().storage.getDisplayList(true).forEach(el => {
    if (!el.style || typeof el.style.text !== 'string' || !el.style.text.trim()) return;
    for (let p = el; p; p = p.parent) {
      if (p.ignore || p.invisible || (p.style && p.style.opacity === 0)) return;
    }
    const r = el.getBoundingRect();
    const h = el.style.fontSize || 12, cy = r.y + r.height / 2;
    const m = el.transform || [1, 0, 0, 1, 0, 0];
    const xs = [], ys = [];
    [[r.x, cy - h / 2], [r.x + r.width, cy - h / 2], [r.x, cy + h / 2],
     [r.x + r.width, cy + h / 2]].forEach(([x, y]) => {
      xs.push(m[0] * x + m[2] * y + m[4]); ys.push(m[1] * x + m[3] * y + m[5]);
    });
    out.push([el.style.text, Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)]);
  });
  return out;
}"""


def overlaps(boxes: list[list[Any]]) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose boxes cross by more than half a pixel."""
    out = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if min(a[3], b[3]) - max(a[1], b[1]) > 0.5 and min(a[4], b[4]) - max(a[2], b[2]) > 0.5:
                out.append((a[0], b[0]))
    return out


def close_misses(folder: Path, pairs: int = 5, step: int = 1) -> None:
    """A session whose misses come seconds apart (every other request writes the whole
    prefix again), with a model switch among them."""
    sid = "00000000-0000-4000-8000-0000000000aa"
    t = datetime(2026, 1, 1, tzinfo=UTC)
    lines, cached, u = [], 20000, 0

    def line(kind: str, extra: dict[str, Any]) -> str:
        base = {
            "parentUuid": f"u{u - 1}" if u > 1 else None,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/USER/close",
            "sessionId": sid,
            "version": "2.1.39",
            "type": kind,
            "uuid": f"u{u}",
            "timestamp": t.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        }
        return json.dumps({**base, **extra})

    for i in range(2 * pairs + 1):
        u += 1
        lines.append(line("user", {"message": {"role": "user", "content": "(prompt text)"}}))
        t += timedelta(seconds=1)
        u += 1
        cold = i % 2 == 1 or i == 0
        read, write = (0, cached + 500) if cold else (cached, 500)
        usage = {
            "input_tokens": 3,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 10,
        }
        model = "claude-opus-4-6" if i < pairs else "claude-sonnet-4-5-20250929"
        message: dict[str, Any] = {"id": f"msg_{i}", "type": "message", "role": "assistant"}
        message["model"] = model
        message.update(content=[{"type": "text", "text": "(answer)"}], usage=usage)
        lines.append(line("assistant", {"requestId": f"req_{i}", "message": message}))
        cached = read + write
        t += timedelta(seconds=step)
    (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("case", ["seconds-apart", "three-lanes"])
def test_no_label_covers_another(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, case: str
) -> None:
    tmp = tmp_path_factory.mktemp("labels")
    if case == "seconds-apart":
        (tmp / "close").mkdir()
        close_misses(tmp / "close")
        path = write_report(tmp, str(tmp / "close"))
    else:  # main, a subagent and a compaction agent: lane titles over time axes
        path = write_report(tmp, str(SPOTTER_SESSION))
    opened = Opened(browser, path)
    try:
        boxes = opened.page.evaluate(TEXT_BOXES, "timeline")
        texts = [b[0] for b in boxes]
        if case == "seconds-apart":
            misses = _page_data(path)["sessions"][0]["events"]
            assert len(misses) == 5
            assert max(b["at"] - a["at"] for a, b in itertools.pairwise(misses)) <= 4
            # Some cause labels and the model switch still show; none is drawn over another.
            assert sum(t in ("unknown", "model_changed") for t in texts) >= 2, texts
        else:
            assert {"main", "subagent agent-a2898e3"} <= set(texts), texts
        assert overlaps(boxes) == [], boxes
        # Zoomed in, the labels are placed again: still none over another.
        opened.page.evaluate(
            "echarts.getInstanceByDom(document.getElementById('timeline'))"
            ".dispatchAction({type: 'dataZoom', start: 35, end: 65})"
        )
        opened.page.wait_for_timeout(100)
        zoomed = opened.page.evaluate(TEXT_BOXES, "timeline")
        assert zoomed != boxes and overlaps(zoomed) == [], zoomed
        # The toolbox's restore puts the first view back, labels placed again.
        opened.page.evaluate(
            "echarts.getInstanceByDom(document.getElementById('timeline'))"
            ".dispatchAction({type: 'restore'})"
        )
        opened.page.wait_for_timeout(100)
        restored = opened.page.evaluate(TEXT_BOXES, "timeline")
        assert sorted(b[0] for b in restored) == sorted(texts), restored
        assert opened.errors() == []
    finally:
        opened.page.close()


@pytest.mark.parametrize("width", [1024, 1400])
@pytest.mark.parametrize("which", ["several", "one", "agents"])
def test_no_sideways_scroll(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, width: int, which: str
) -> None:
    tmp = tmp_path_factory.mktemp(f"width{width}")
    inputs = {"several": SEVERAL, "one": (str(SPOTTER_SESSION),), "agents": EVERY_AGENT}
    path = write_report(tmp, *inputs[which])
    opened = Opened(browser, path, width=width)
    page = opened.page
    try:
        page.screenshot(path=str(tmp / f"report-{which}-{width}.png"), full_page=True)
        scroll = page.evaluate(
            "[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]"
        )
        assert scroll[0] <= scroll[1], scroll
        for table in ("#miss-table", "#top-misses", "#session-list"):
            box = page.locator(table).bounding_box()
            if box is not None:  # hidden (a list of one session) has no box
                assert box["x"] >= 0 and box["x"] + box["width"] <= width, (table, box)
        # Nor does any panel scroll inside itself.
        wide = page.evaluate(
            "[...document.querySelectorAll('.panel')].filter(p => p.scrollWidth > p.clientWidth)"
            ".map(p => p.querySelector('h3').textContent)"
        )
        assert wide == []
        # No chart of the overview draws one text over another at this width.
        charts = ["chart-cause", "chart-day", "chart-project", "chart-model", "chart-whatif"]
        for chart in charts + (["chart-agent"] if which == "agents" else []):
            assert overlaps(page.evaluate(TEXT_BOXES, chart)) == [], chart
        assert opened.errors() == []
    finally:
        page.close()


@pytest.fixture(scope="module")
def several(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = write_report(tmp_path_factory.mktemp("list"), *SEVERAL)
    opened = Opened(browser, path)
    yield opened, _page_data(path)
    opened.page.close()


def _column(page: Any, key: str) -> list[str]:
    cells = page.locator(f'#session-list tbody td[data-key="{key}"]')
    return [cells.nth(i).inner_text() for i in range(cells.count())]


def test_session_list_sorts_filters_and_opens(several: Any) -> None:
    opened, data = several
    page = opened.page
    rows = data["session_list"]
    assert page.locator("#session-list tbody tr").count() == len(rows) == 6
    page.locator('#session-list th[data-key="cost_usd"] button').click()
    by_cost = sorted(rows, key=lambda r: -r["cost_usd"])
    assert [int(n) for n in _row_numbers(page)] == [r["n"] for r in by_cost]
    assert page.locator('th[data-key="cost_usd"]').get_attribute("aria-sort") == "descending"
    page.locator('#session-list th[data-key="cost_usd"] button').click()
    assert [int(n) for n in _row_numbers(page)] == [r["n"] for r in reversed(by_cost)]
    page.fill("#session-filter", "messages_rewritten")
    shown = _column(page, "top_cause")
    assert shown == ["messages_rewritten"], shown
    assert page.locator("#session-count").inner_text() == "1 of 6 session(s)"
    page.fill("#session-filter", "Demo")
    assert set(_column(page, "project")) == {"/path/to/Demo"}
    page.fill("#session-filter", "")
    target = next(r for r in rows if r["session_id"] == "tool_heavy")
    page.locator('#session-list tr[data-session="tool_heavy"] td[data-key="cost_usd"]').click()
    page.wait_for_function(f"location.hash === '#session={target['n']}'")
    assert page.locator("#session-meta").inner_text().startswith("tool_heavy")
    assert page.locator("#session-list tr.current").get_attribute("data-session") == "tool_heavy"
    # Its timeline is brought into view.
    top = page.evaluate("document.getElementById('timeline').getBoundingClientRect().top")
    assert 0 <= top < 400, top
    cause = page.locator("#miss-table tbody tr td.cause").first.inner_text()
    assert cause.startswith("messages_rewritten")
    assert opened.errors() == [] and opened.requests == [opened.url]


def _row_numbers(page: Any) -> list[str]:
    rows = page.locator("#session-list tbody tr")
    return [rows.nth(i).get_attribute("data-n") for i in range(rows.count())]


def test_cause_chart_leaves_no_miss_beside_it(several: Any) -> None:
    opened, data = several
    page = opened.page
    axis = page.evaluate(
        "echarts.getInstanceByDom(document.getElementById('chart-cause')).getOption().yAxis[0].data"
    )
    causes = [r["key"] for r in data["overview"]["by_cause"]]
    assert "no_miss" in causes and "no_miss" not in axis
    assert sorted(axis) == sorted(k for k in causes if k != "no_miss")
    rest = next(r for r in data["overview"]["by_cause"] if r["key"] == "no_miss")
    note = page.locator("#cause-rest").inner_text()
    assert f"{rest['requests']} requests" in note and f"${rest['cost_usd']:,.2f}" in note


@pytest.fixture(scope="module")
def agents(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = write_report(tmp_path_factory.mktemp("agents"), *EVERY_AGENT)
    opened = Opened(browser, path)
    yield opened, _page_data(path)
    opened.page.close()


@pytest.mark.parametrize(
    ("chart", "group"),
    [("chart-project", "by_project"), ("chart-model", "by_model"), ("chart-agent", "by_agent")],
)
def test_spend_by_project_model_and_agent(
    several: Any, agents: Any, chart: str, group: str
) -> None:
    # Spend by agent is drawn where several agents' sessions are in the report.
    opened, data = agents if group == "by_agent" else several
    option = opened.page.evaluate(
        f"echarts.getInstanceByDom(document.getElementById('{chart}')).getOption()"
    )
    rows = data["overview"][group]
    assert len(rows) > 1
    assert option["yAxis"][0]["data"] == [r["key"] for r in reversed(rows)]
    misses, rebuilds, rest = (s["data"] for s in option["series"])
    # The re-cache cost split into misses and expected rebuilds, then the rest.
    for r, m, b, other in zip(reversed(rows), misses, rebuilds, rest, strict=True):
        assert (m, b) == (r["miss_cost_usd"], r["rebuild_cost_usd"])
        assert m + b + other == pytest.approx(r["cost_usd"])
    assert any(b > 0 for b in rebuilds) and any(m > 0 for m in misses)


HOSTILE = "<script>window.__pwned=1</script>\u202eevil"


def test_hostile_project_names_in_the_list_are_text(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("hostile")
    folder = tmp / "p"
    folder.mkdir()
    text = (RULES / "model_changed.jsonl").read_text()
    text = text.replace("/home/USER/project", json.dumps("/home/" + HOSTILE)[1:-1])
    for n in (1, 2):  # two sessions: a list of one is not shown
        sid = f"00000000-0000-4000-8000-00000000000{n}"
        (folder / f"{sid}.jsonl").write_text(
            # Own message ids too, or the second would count as a replay of the first.
            text.replace("00000000-0000-4000-8000-000000000000", sid).replace("msg_", f"m{n}_")
        )
    opened = Opened(browser, write_report(tmp, str(folder)))
    page = opened.page
    try:
        projects = _column(page, "project")
        assert projects == ["/home/<script>window.__pwned=1</script>?evil"] * 2, projects
        assert "\u202e" not in page.locator("#session-list").inner_text()
        # The spend-by-project tooltip is markup: the name reaches it escaped.
        page.evaluate(
            "echarts.getInstanceByDom(document.getElementById('chart-project'))"
            ".dispatchAction({type: 'showTip', seriesIndex: 0, dataIndex: 0})"
        )
        tip = page.locator("#chart-project div").filter(has_text="re-cache cost")
        assert "<script>window.__pwned=1</script>?evil" in tip.first.inner_text()
        assert page.evaluate("window.__pwned") is None
        assert page.locator("script").count() == 3
        assert opened.errors() == [] and opened.requests == [opened.url]
    finally:
        page.close()


def test_each_miss_says_what_to_do_fitted_to_its_session(several: Any) -> None:
    """The advice under a miss is the advice table's for that miss: the Claude Code
    version the session ran (2.1.39 has no TTL setting, so none is named), the TTL in
    force, the kind of stream; each distinct text once."""
    from cachediag.analysis.advice import AdviceContext, advice_for
    from cachediag.analysis.advice_context import read_client_version

    opened, data = several
    page = opened.page
    n = next(r["n"] for r in data["session_list"] if r["session_id"].startswith("4d5611e5"))
    page.evaluate(f"location.hash = 'session={n}'")
    page.wait_for_function(f"location.hash === '#session={n}'")
    lines = page.locator("#miss-table td.cause .advice-line")
    texts = [lines.nth(i).inner_text() for i in range(lines.count())]
    version = read_client_version(str(SPOTTER_SESSION))
    assert version == "2.1.39"
    ctx = AdviceContext(version=version, ttl_in_force="5m", stream_kind="main")
    ttl = advice_for("ttl_expired_5m", ctx)
    rewritten = advice_for("messages_rewritten", ctx)
    assert texts == [f"What to do: {ttl.action}", f"What to do: {rewritten.action}"], texts
    assert "2.1.39" in texts[0] and "promptCacheTtl" not in texts[0]


def test_a_model_name_is_not_a_chart_label_template(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The model switch is labelled with the new model's name as written: ECharts reads a
    formatter string as a template, where {b} or {c} would be replaced by other values."""
    tmp = tmp_path_factory.mktemp("template")
    folder = tmp / "p"
    folder.mkdir()
    name = "m{a}{b}{c}"
    text = (RULES / "model_changed.jsonl").read_text().replace("claude-sonnet-4-5-20250929", name)
    (folder / "00000000-0000-4000-8000-000000000000.jsonl").write_text(text)
    opened = Opened(browser, write_report(tmp, str(folder)))
    try:
        labels = [t for t in opened.page.evaluate(ZR_TEXTS) if t.startswith("model: ")]
        assert labels == [f"model: {name}"], labels
        assert opened.errors() == []
    finally:
        opened.page.close()
