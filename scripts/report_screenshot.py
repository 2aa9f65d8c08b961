"""Screenshot of an HTML report, for the README and docs/report.md: docs/report.png.

    cachediag report fixtures/real/spotter --output /tmp/cachediag-report.html
    python scripts/report_screenshot.py /tmp/cachediag-report.html docs/report.png

(the bundled spotter project: three sessions, so the session list shows; the page
opens on the costliest session, the README's corpus session.)

Opens the file in Debian's Chromium (``apt-get install chromium``) through Playwright
(``pip install -e '.[report-test]'``), with the same flags as the browser tests.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Headless, offline and quiet: nothing but the page may touch the network."""


def launch(playwright: Any, profile: str, chromium: str, width: int = 1280) -> Any:
    """A Chromium context on a new, empty profile (no extensions, no earlier state);
    tests/test_report_browser.py opens its pages the same way."""
    return playwright.chromium.launch_persistent_context(
        profile,
        executable_path=chromium,
        headless=True,
        args=FLAGS,
        viewport={"width": width, "height": 900},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument(
        "--part", default="body", help="CSS selector of what to shoot (default: the whole page)"
    )
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = launch(p, profile, args.chromium, args.width)
        page = context.new_page()
        page.goto(args.report.resolve().as_uri())
        page.wait_for_selector("body[data-ready='1']")
        page.locator(args.part).screenshot(path=str(args.png))
        context.close()
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
