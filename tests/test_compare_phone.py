"""The page `evalbeam compare` writes (runs/<candidate>/compare/<baseline>.html,
not served by the viewer) on a phone (390 px), in headless Chromium: its most
regressed cases are one card per row, like the report's worst cases, and the
page never scrolls sideways, in a narrow desktop window and in a phone's layout."""
from __future__ import annotations

import os

import numpy as np
import pytest

from pipeline.cli import run
from tests import browser
from tests.compare_tables import write_run
from tests.test_viewer import _need_chromium
from tests.test_viewer_phone import OVERFLOW, PHONE, URL

SHOTS = os.environ.get("EVALBEAM_SHOTS")  # a folder to keep the screenshots in
REGRESSED = ["case", "suite", "verdict", "largest drops", "baseline answer", "candidate answer",
             "baseline reason", "candidate reason"]


@pytest.fixture(scope="module")
def compare_page(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("compare_phone"))
    n = 40
    ids = [f"refund_policy_case_{i:03d}" for i in range(n)]
    suites = np.array(["customer_support"] * n, dtype=object)
    base = np.linspace(0.4, 0.9, n)
    answers = [f"You can ask for a refund within 30 days of purchase; the policy is at {URL} "
               f"and the form takes a minute ({i})." for i in range(n)]
    write_run(out, "before", "2026-01-01", "assistant", ids, suites,
              {"keyword_recall": base, "rougeL": base}, np.array(["PASS"] * n), answers,
              reasons=["no rule matched"] * n)
    write_run(out, "after", "2026-01-02", "assistant", ids, suites,
              {"keyword_recall": base - 0.3, "rougeL": base - 0.2},
              np.array(["FAIL"] * 10 + ["PASS"] * (n - 10)),
              [f"I cannot help with that; see {URL}" for _ in range(n)],
              reasons=["keyword_recall 0.1 < 0.3"] * n)
    assert run(["compare", "--output", out, "--baseline", "before", "--candidate", "after"]) == 0
    return os.path.join(out, "runs", "after", "compare", "before.html")


@pytest.mark.parametrize("mobile", [False, True], ids=["narrow-window", "phone"])
def test_the_compare_page_fits_a_phone(compare_page, mobile):
    _need_chromium()
    with browser.Browser(width=PHONE, mobile=mobile) as b:
        page = b.open("file://" + compare_page)
        if SHOTS:
            with open(os.path.join(SHOTS, f"compare-390-{'phone' if mobile else 'narrow'}.png"),
                      "wb") as fh:
                fh.write(page.png)
        width, inner, sticking_out = page.evaluate(OVERFLOW)
        assert inner == PHONE and width <= PHONE, (width, inner, sticking_out)
        cells = page.evaluate(
            "Array.from(document.querySelector('table.stack tbody tr').children).map(td =>"
            " [getComputedStyle(td, '::before').content, td.getBoundingClientRect().left,"
            " td.getBoundingClientRect().right])")
        assert [c[0] for c in cells] == [f'"{h}"' for h in REGRESSED], cells
        assert all(0 <= left and right <= PHONE for _, left, right in cells), cells


def test_the_compare_page_keeps_its_table_on_a_desktop(compare_page):
    _need_chromium()
    with browser.Browser(width=1280) as b:
        page = b.open("file://" + compare_page)
        if SHOTS:
            with open(os.path.join(SHOTS, "compare-1280.png"), "wb") as fh:
                fh.write(page.png)
        assert page.evaluate("getComputedStyle(document.querySelector('table.stack')).display"
                             ) == "table"
        assert page.evaluate("Array.from(document.querySelectorAll('table.stack thead th'))"
                             ".map(th => th.textContent)") == REGRESSED


MANY = [f"support-assistant-gpt-4o-mini-v{i:02d}" for i in range(12)]


@pytest.fixture(scope="module")
def compare_of_many(tmp_path_factory) -> str:
    """Two runs of 12 bots, the i-th bot's candidate keyword_recall i/40 lower,
    its last i cases failing: the compare page's path."""
    out = str(tmp_path_factory.mktemp("compare_many"))
    n = 40
    ids = [f"refund_policy_case_{i:03d}" for i in range(n)]
    suites = np.array(["billing", "returns", "shipping", "devices"] * (n // 4), dtype=object)
    base = np.linspace(0.4, 0.9, n)
    for i, bot in enumerate(MANY):
        write_run(out, "before", "2026-01-01", bot, ids, suites,
                  {"keyword_recall": base, "rougeL": base}, np.array(["PASS"] * n))
        write_run(out, "after", "2026-01-02", bot, ids, suites,
                  {"keyword_recall": base - i / 40, "rougeL": base},
                  np.array(["PASS"] * (n - 2 * i) + ["FAIL"] * (2 * i)))
    assert run(["compare", "--output", out, "--baseline", "before", "--candidate", "after"]) == 0
    return os.path.join(out, "runs", "after", "compare", "before.html")


def test_the_compare_page_of_many_bots_starts_with_a_line_per_bot(compare_of_many):
    """12 bots made the compare page 16,000 px tall at 1,280 px (25 bots 44,000): a
    forest panel per bot, then per bot its table, transitions and regressed cases,
    and a line per bot and suite. With more than three bots a table of a line per
    bot comes first, the most dropped pass rate first, and the rest is folded."""
    _need_chromium()
    with browser.Browser(width=1280) as b:
        page = b.open("file://" + compare_of_many)
        height = page.evaluate("document.documentElement.scrollHeight")
        first = page.evaluate("document.querySelector('h2').innerText")
        bots = page.evaluate("Array.from(document.querySelector('h2 + div table')"
                             ".querySelectorAll('tbody tr')).map(r => r.children[0].innerText)")
    assert height < 4000, height
    assert first == "Bots at a glance" and bots == MANY[::-1], bots
    with open(compare_of_many[:-len("html")] + "md", encoding="utf-8") as fh:
        md = fh.read()
    glance = md.split("## Bots at a glance")[1].split("\n## ")[0]
    assert len([line for line in glance.splitlines() if line.startswith("| support")]) == 12
