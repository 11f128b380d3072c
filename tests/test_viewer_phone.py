"""The viewer's pages and report.html on a phone (390 px), in headless Chromium,
over two real runs whose names, paths and texts are long words without a space
(a run id, an input folder, a case id, a tag, a URL in an answer): the page
itself never scrolls sideways, and its table, filters and links stay in reach."""
from __future__ import annotations

import urllib.parse

import pytest

from pipeline.viewer.server import start_in_thread
from tests import browser
from tests.conftest import write_cases
from tests.pipeline_helpers import run_cli
from tests.test_viewer import _need_chromium, _rows

PHONE = 390
RUNS = ("nightly-2026-11-26-assistant-gpt-4o-mini-retrieval-v1",
        "nightly-2026-11-27-assistant-gpt-4o-mini-retrieval-v2")
URL = "https://support.example.com/" + "kb/articles/" * 10 + "refund-policy"
LONG_ID = "case_" + "x" * 70


@pytest.fixture(scope="module")
def phone_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("phone")
    folder = tmp / ("inputs_" + "a_folder_name_without_any_space_" * 4)
    folder.mkdir()
    rows = _rows(False)[7:15]
    for i, r in enumerate(rows):
        r.update(question=f"{r['question']} See {URL}", answer=f"{r['answer']} Read {URL}",
                 contexts=[*r["contexts"], URL], tags=["tag_" + "z" * 70],
                 suite="customer_support_" + "y" * 50)
    rows[0]["case_id"] = LONG_ID
    cases = write_cases(str(folder / "cases.parquet"), rows)
    cfg = tmp / "c.yaml"
    cfg.write_text("metrics: [exact_match, keyword_recall, rougeL]\n"
                   "bots: [{name: assistant_" + "v2-" * 18 + ", type: precomputed}]\n")
    out = str(tmp / "out")
    for run_id in RUNS:
        assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                       "--run-id", run_id) == 0
    server = start_in_thread(out, 0)
    yield server
    server.shutdown()
    server.server_close()


A, B = RUNS
PAGES = {  # name: (path, the table that must be visible)
    "runs": ("/", "table.stack"),
    "explorer": (f"/run/{B}", "table.cases"),
    "explorer-metric": (f"/run/{B}?metric=rougeL&min=0", "table.cases"),
    "case": (f"/run/{B}/case/" + urllib.parse.quote(LONG_ID, safe=""), "table.stack"),
    "compare": (f"/compare?a={A}&b={B}", "table.side"),
    "report": (f"/run/{B}/report.html", "table.stack"),  # its worst cases
}

# the page's own horizontal overflow, and what sticks out of it (outside any box that scrolls)
OVERFLOW = """(() => {
  const w = window.innerWidth, out = [];
  const boxed = e => { for (let p = e.parentElement; p; p = p.parentElement)
    if (getComputedStyle(p).overflowX !== 'visible') return true; return false; };
  for (const e of document.querySelectorAll('body *'))
    if (!boxed(e) && (e.getBoundingClientRect().right > w
                      || e.clientWidth && e.scrollWidth > e.clientWidth
                         && getComputedStyle(e).overflowX === 'visible'))
      out.push(e.tagName.toLowerCase() + ' ' + e.textContent.slice(0, 60));
  return [document.documentElement.scrollWidth, w, out.slice(0, 5)]; })()"""


def _in_view(page, selector: str) -> bool:
    """The element is shown (not hidden, not empty) and starts inside the window's width."""
    return page.evaluate(
        f"(e => !!e && e.getClientRects().length > 0 && (r => r.width > 0 && r.height > 0 "
        f"&& r.left >= 0 && r.left < window.innerWidth)(e.getBoundingClientRect()))"
        f"(document.querySelector({selector!r}))")


STACKED = {  # the pages whose table is a card per row on a phone: the cells' headings
    "runs": ["run", "run date", "finished", "bots", "cases", "invalid rows", "errors/ rows",
             "counts reconcile", "metrics", "report"],
    "explorer": ["case", "bot", "suite", "verdict", "reason", "question", "answer"],
    "explorer-metric": ["case", "bot", "suite", "verdict", "reason", "question", "answer",
                        "rougeL"],
    "compare": ["case", "bot", "suite", "question", f"A: {A}", f"B: {B}"],
    "case": ["metric", "value", "why null", "details"],
    "report": ["case", "suite", "verdict", "reason", "question", "reference", "answer",
               "metrics"],
}


@pytest.mark.parametrize("mobile", [False, True], ids=["narrow-window", "phone"])
def test_no_page_scrolls_sideways_on_a_phone(phone_server, tmp_path, mobile):
    """narrow-window: a 390 px desktop window, where a wide page scrolls; phone: a
    phone's layout, where a wide page is zoomed out instead (innerWidth grows)."""
    _need_chromium()
    base = phone_server.url.rstrip("/")
    with browser.Browser(width=PHONE, loopback=True, mobile=mobile) as b:
        for name, (path, table) in PAGES.items():
            page = b.open(base + path)
            (tmp_path / f"{name}.png").write_bytes(page.png)
            width, inner, sticking_out = page.evaluate(OVERFLOW)
            assert inner == PHONE and width <= PHONE, (name, width, inner, sticking_out)
            assert page.evaluate(f"document.querySelectorAll('{table} tbody tr').length") > 0
            assert _in_view(page, f"{table} tbody tr"), name
            if name != "report":
                assert _in_view(page, "nav a"), name  # back to all runs
            if name in STACKED:  # one card per row: every cell in view, with its heading
                cells = page.evaluate(
                    f"Array.from(document.querySelector('{table} tbody tr').children).map(td =>"
                    " [getComputedStyle(td, '::before').content, td.getBoundingClientRect().left,"
                    " td.getBoundingClientRect().right])")
                heads = STACKED[name]
                assert [c[0] for c in cells] == [f'"{h}"' for h in heads], (name, cells)
                assert all(0 <= left and right <= PHONE for _, left, right in cells), cells
            if name in ("explorer", "explorer-metric", "compare", "runs"):
                assert _in_view(page, "form.filters button"), name
                assert page.evaluate("document.querySelector('form.filters')"
                                     ".getBoundingClientRect().right") <= PHONE, name


def test_the_desktop_keeps_its_tables(phone_server):
    """At 1,280 px the same tables are tables: a heading row above the columns."""
    _need_chromium()
    base = phone_server.url.rstrip("/")
    with browser.Browser(width=1280, loopback=True) as b:
        for name in STACKED:
            path, table = PAGES[name]
            page = b.open(base + path)
            assert page.evaluate(f"getComputedStyle(document.querySelector('{table}')).display"
                                 ) == "table", name
            assert page.evaluate(f"Array.from(document.querySelectorAll('{table} thead th'))"
                                 ".map(th => th.textContent)") == STACKED[name], name
            assert page.evaluate(f"getComputedStyle(document.querySelector('{table} td'), "
                                 "'::before').content") == "none", name


def test_a_long_url_wraps_in_its_column_on_a_desktop(phone_server):
    """At 1,280 px a question and an answer holding a 150-character URL wrap in
    their columns: the explorer's table fits its box (it was 2,435 px wide in a
    1,200 px box, the answer out of sight to the right). The break opportunities
    (<wbr>) copy as nothing: the cell's text is the answer's, and the case's
    link keeps its href."""
    _need_chromium()
    base = phone_server.url.rstrip("/")
    with browser.Browser(width=1280, loopback=True) as b:
        for path in (f"/run/{B}", f"/run/{B}?metric=rougeL&min=0"):
            page = b.open(base + path)
            box, inner, right = page.evaluate(
                "(t => [t.parentElement.scrollWidth, t.parentElement.clientWidth,"
                " Math.max(...Array.from(t.querySelectorAll('td')).map(td =>"
                " td.getBoundingClientRect().right))])(document.querySelector('table.cases'))")
            assert box <= inner and right <= 1280, (path, box, inner, right)
        texts = page.evaluate("Array.from(document.querySelectorAll('table.cases tbody tr'))"
                              ".map(tr => tr.children[6].textContent)")
        assert all(f" Read {URL[:100]}" in t and "\u200b" not in t for t in texts), texts
        assert page.evaluate("document.querySelectorAll('table.cases td:nth-child(7) wbr')"
                             ".length") > 0
        hrefs = page.evaluate("Array.from(document.querySelectorAll('table.cases a'))"
                              ".map(a => a.getAttribute('href'))")
        assert f"/run/{B}/case/{LONG_ID}" in hrefs
