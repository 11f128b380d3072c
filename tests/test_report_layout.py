"""The HTML pages as a person sees them, in headless Chromium: a table wider
than the page (many bots with long names in the report's metric means, a
viewer row with many columns of long words) scrolls inside its own box, and the
page itself stays as wide as the window (with six bots the report was 2,477 px
wide in a 1,280 px window: every heading, chart and paragraph sat in the left
half while the page scrolled sideways)."""
from __future__ import annotations

import os

import pytest

from pipeline.viewer import pages
from tests import browser
from transforms.publish.html import page, table

BOTS = ["customer_support_assistant_v2_with_retrieval_augmented_generatio",
        "مساعد_الدعم_الفني_العربي", "עוזר_תמיכה_בעברית", "Ünïcödé-bøt-ñame_ÆØÅ",
        "another_quite_long_bot_name_for_the_table", "recorded"]
CELL = "0.292 [0.234, 0.350] n=60, missing 0"


def _need_chromium() -> None:
    if not browser.available():
        if os.environ.get("CI"):
            pytest.fail(f"{browser.CHROMIUM} is missing (.ci/run installs Debian's chromium)")
        pytest.skip(f"{browser.CHROMIUM} not installed")


def test_wide_tables_scroll_in_their_box_not_the_page(tmp_path):
    _need_chromium()
    report = page("wide", ["<h2>Metric means</h2>",
                           table(["metric", *BOTS], [[f"m{i}", *[CELL] * len(BOTS)]
                                                     for i in range(3)],
                                 numeric=range(1, len(BOTS) + 1))])
    # a word of up to 30 characters does not break (a longer one does: breakable), so
    # twelve columns of them are wider than the window
    viewer = page("viewer", [pages.grid(["case", "bot", *(f"metric_{i}" for i in range(12))],
                                        [["c1", b, *["refund_policy_answer_v2"] * 12]
                                         for b in BOTS], cls="cases")])
    with browser.Browser(width=1280) as b:
        for name, html in (("report", report), ("viewer", viewer)):
            path = tmp_path / f"{name}.html"
            path.write_text(html, encoding="utf-8")
            shown = b.open(path.as_uri())
            (tmp_path / f"{name}.png").write_bytes(shown.png)
            assert shown.evaluate("document.documentElement.scrollWidth") <= 1280, name
            # the table is whole (its columns not squeezed) and reachable by scrolling its box
            box = "document.querySelector('table').parentElement"
            assert shown.evaluate(f"{box}.scrollWidth > {box}.clientWidth"), name
            assert shown.evaluate(f"getComputedStyle({box}).overflowX") == "auto", name
