"""Screenshot of a report page for the README and the docs (docs/assets/report.png).

    ./run_local.sh
    .venv/bin/python scripts/report_screenshot.py out/example/runs/example/report.html \
        docs/assets/report.png [--height 2170]

Opens the page in headless Chromium (tests/browser.py: the DevTools protocol
on a pipe, nothing fetched) and saves the top of the page, 1280 pixels wide.
"""
from __future__ import annotations

import argparse
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.browser import Browser, available  # noqa: E402


def screenshot(html: str, png: str, height: int, width: int = 1280) -> None:
    with Browser(width=width) as browser:
        page = browser.open("file://" + os.path.abspath(html))
        shot = browser.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}},
            page.session)
    with open(png, "wb") as fh:
        fh.write(base64.b64decode(shot["data"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("html", help="the report page, e.g. out/example/runs/example/report.html")
    ap.add_argument("png", help="where to save the screenshot")
    ap.add_argument("--height", type=int, default=2170,
                    help="pixels from the top (default 2170: down to the head to head's findings)")
    args = ap.parse_args(argv)
    if not available():
        print("no Chromium (apt-get install chromium, or set EVALBEAM_CHROMIUM)", file=sys.stderr)
        return 2
    screenshot(args.html, args.png, args.height)
    return 0


if __name__ == "__main__":
    sys.exit(main())
