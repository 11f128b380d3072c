"""The run report of many bots over several suites, as a person reads it.

With 12 bots and 5 suites report.html was 122,000 px tall at 1,280 px (every
one of the 66 pairs had its forest plot, findings and tables, every bot its
heat map panel and its ten worst cases) and report.md 2,900 lines; worst-case
ids longer than the 120 characters shown, alike at their start, read as one
case. Real runs of the CLI over the bundled example's cases, pages opened in
headless Chromium."""
from __future__ import annotations

import os
import re

import pyarrow.parquet as pq
import pytest

from tests import browser
from tests.conftest import write_cases
from tests.pipeline_helpers import manifest, run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "support")
SUITES = ("billing", "devices", "returns", "security", "shipping")
# ids alike in their first 150 characters, told apart at their end
PREFIX = "customer_support_regression_suite_2026_" + "long_shared_prefix_" * 6


def _need_chromium() -> None:
    if not browser.available():
        if os.environ.get("CI"):
            pytest.fail(f"{browser.CHROMIUM} is missing (.ci/run installs Debian's chromium)")
        pytest.skip(f"{browser.CHROMIUM} not installed")


def _run(tmp_path, n_bots: int, name: str = "faq_{:02d}") -> tuple[str, str]:
    """The example's first 4 cases of each of 5 suites (long ids), answered by
    `recorded` and n_bots − 1 FAQ bots each knowing part of the FAQ (named by
    `name`'s format of their number): the run's report.html and report.md paths."""
    rows = pq.read_table(os.path.join(EXAMPLE, "cases.parquet")).to_pylist()
    cases = [{**c, "case_id": f"{PREFIX}{suite}_{i}"} for suite in SUITES
             for i, c in enumerate([c for c in rows if c["suite"] == suite][:4])]
    path = write_cases(str(tmp_path / "cases.parquet"), cases,
                       pq.read_schema(os.path.join(EXAMPLE, "cases.parquet")))
    faq = pq.read_table(os.path.join(EXAMPLE, "faq.parquet")).to_pylist()
    bots = ["  - {name: recorded, type: precomputed}"]
    for b in range(n_bots - 1):
        write_cases(str(tmp_path / f"faq{b}.parquet"), faq[: len(faq) - 4 * b])
        bots.append(f"  - {{name: {name.format(b)}, type: faq_match, faq: faq{b}.parquet}}")
    cfg = tmp_path / "c.yaml"
    # a rule over the run's metrics: without one every row is WARN and no pass rate
    # ranks the bots (each is "–")
    cfg.write_text("bots:\n" + "\n".join(bots) + "\nmetrics: [exact_match, rougeL, "
                   "keyword_recall, answer_similarity]\nverdict:\n  rules:\n"
                   "    - {metric: keyword_recall, below: 0.5, verdict: FAIL}\n")
    out = tmp_path / "out"
    assert run_cli("--input", path, "--output", str(out), "--config", str(cfg),
                   "--run-id", "r") == 0
    assert len(manifest(str(out), "r")["bots"]) == n_bots
    return str(out / "runs" / "r" / "report.html"), str(out / "runs" / "r" / "report.md")


_ROWS = "Array.from(document.querySelectorAll('table.stack tbody tr'))"


def test_twelve_bots_over_five_suites_make_a_readable_report(tmp_path):
    _need_chromium()
    html, md = _run(tmp_path, 12)
    with browser.Browser(width=1280) as b:
        shown = b.open("file://" + html)
        (tmp_path / "report.png").write_bytes(shown.png)
        height = shown.evaluate("document.documentElement.scrollHeight")
        # the 66 pairs in a bots × bots matrix, their details folded
        grid = shown.evaluate("document.querySelector('h2 ~ div table').rows.length")
        # worst cases: each bot's folded, its first five, ids whole in the tooltip
        ids = shown.evaluate(f"{_ROWS}.map(r => [r.children[0].textContent, "
                             "r.children[0].querySelector('span') && "
                             "r.children[0].querySelector('span').title])")
        folded = shown.evaluate("document.querySelectorAll('details:not([open])').length")
    assert height < 8000, height
    assert grid >= 12 and folded >= 12 + 2
    per_bot = [ids[i:i + 5] for i in range(0, len(ids), 5)]
    assert len(ids) == 12 * 5, len(ids)
    for rows in per_bot:
        texts = [t.replace("\u200b", "") for t, _ in rows]
        assert len(set(texts)) == len(texts), texts  # cut, and still told apart
        assert all(len(t) <= 120 and "…" in t for t in texts), texts
        assert all(full.startswith(PREFIX) and full.split("_")[-1] == t.split("_")[-1].split()[0]
                   for t, full in rows), rows
    text = open(md, encoding="utf-8").read()
    assert len(text.splitlines()) < 400, len(text.splitlines())
    assert text.count("more of ") == 12 and "worst cases are in the manifest" in text
    md_ids = re.findall(r"^\| (customer\\_support\S*(?: \S+)*?) \| \w+ \| (?:FAIL|WARN|ERROR)",
                        text, re.M)
    assert len(md_ids) == 60 and all(len(i.replace("\\", "")) <= 120 for i in md_ids)
    worst = text.split("## Worst cases")[1].split("### ")[1:]
    for section in worst:
        ids_of_bot = re.findall(r"^\| (customer\S*(?: \S+)*?) \|", section, re.M)
        assert len(set(ids_of_bot)) == len(ids_of_bot) == 5, ids_of_bot


def test_two_bots_keep_every_section_open(tmp_path):
    """Two bots: the report as it was, nothing folded but the per-suite tables
    and metric lists it always folded, every worst case shown under its bot."""
    _need_chromium()
    html, md = _run(tmp_path, 2)
    with browser.Browser(width=1280) as b:
        shown = b.open("file://" + html)
        (tmp_path / "report.png").write_bytes(shown.png)
        headings = shown.evaluate("Array.from(document.querySelectorAll('h3'))"
                                  ".map(h => h.innerText)")
        summaries = shown.evaluate("Array.from(document.querySelectorAll('summary'))"
                                   ".map(s => s.innerText)")
        charts = shown.evaluate("document.querySelectorAll('details img.chart').length")
    assert headings[0].startswith("faq_00 − recorded") and headings[1:] == ["faq_00", "recorded"]
    assert charts == 0
    assert all(s == "Per suite" or s.endswith(" more") for s in summaries), summaries
    text = open(md, encoding="utf-8").read()
    assert "more of " not in text and "Each cell: the row bot's" not in text
    assert "### faq\\_00 − recorded" in text or "### faq_00 − recorded" in text


# bot names as a team names its variants: 45 characters and more
LONG_NAME = "support-assistant-gpt-4o-mini-retrieval-v{:02d}-temperature-0_7"


@pytest.fixture(scope="module")
def twelve_long(tmp_path_factory) -> tuple[str, str]:
    """One run of 12 bots, 11 of them with long names: report.html and report.md."""
    return _run(tmp_path_factory.mktemp("twelve"), 12, LONG_NAME)


def _box(section: str) -> str:
    """JS: [scrollWidth, clientWidth, rows, column headings, tallest row's height]
    of the table in the first sideways-scrolling box after the h2 that starts
    with `section`."""
    return ("(() => { const h = Array.from(document.querySelectorAll('h2'))"
            f".find(e => e.innerText.startsWith({section!r})); let d = h.nextElementSibling;"
            " while (!d.classList.contains('wide')) d = d.nextElementSibling;"
            " return [d.scrollWidth, d.clientWidth, d.querySelectorAll('tr').length,"
            " Array.from(d.querySelectorAll('th')).map(t => t.innerText),"
            " Math.max(...Array.from(d.querySelectorAll('tbody tr'))"
            ".map(r => r.getBoundingClientRect().height))]; })()")


def _md_section(md: str, title: str) -> str:
    text = open(md, encoding="utf-8").read()
    return text.split(f"## {title}")[1].split("\n## ")[0]


def test_the_metric_means_of_many_bots_are_a_ranked_row_per_bot_within_the_page(twelve_long):
    """12 bots made the means a column per bot, 3,500 px of them scrolled
    sideways at 1,280 px in report.html (and 12 columns of report.md): now a
    row per bot, best pass rate first, each metric a column."""
    _need_chromium()
    html, md = twelve_long
    for width in (1280, 400):
        with browser.Browser(width=width) as b:
            shown = b.open("file://" + html)
            box = shown.evaluate(_box("Metric means"))
            page_width = shown.evaluate("document.documentElement.scrollWidth")
        assert page_width <= width, (width, page_width)
        assert box[2] == 1 + 12, box  # a heading row and a row per bot
        if width == 1280:
            assert box[0] <= box[1], box
    rows = re.findall(r"^\| (\S+) \| (\d\.\d{3}) \|", _md_section(md, "Metric means"), re.M)
    assert len(rows) == 12, rows
    rates = [float(r) for _, r in rows]
    assert rates == sorted(rates, reverse=True) and rows[0][0] == "recorded", rows


def test_the_head_to_head_of_many_bots_in_report_md_is_a_line_per_bot(twelve_long):
    """report.md wrote a paragraph of findings per pair: 66 for 12 bots. Now the
    matrix and one line per bot naming the bots it differs from."""
    _, md = twelve_long
    section = _md_section(md, "Head to head")
    blocks = [b for b in section.split("\n\n") if b.strip()]
    assert len(blocks) <= 8, len(blocks)
    items = re.findall(r"^- \*\*(.+?)\*\*: ", section, re.M)
    assert len(items) == 12 and "recorded" in items, items


def test_long_bot_names_head_no_column_of_the_matrix(twelve_long):
    """Twelve 59-character names as the matrix's column headings wrapped to six
    lines each, every row as tall, and the matrix scrolled sideways (1,554 px at
    1,280): the rows are numbered and the columns go by number."""
    _need_chromium()
    html, _ = twelve_long
    with browser.Browser(width=1280) as b:
        shown = b.open("file://" + html)
        box = shown.evaluate(_box("Head to head"))
    assert box[0] <= box[1], box
    assert box[3][1:] == [str(i) for i in range(1, 13)], box


def test_long_bot_names_keep_their_rows_a_few_lines_tall_on_a_phone(twelve_long):
    """At 400 px a table of many bots is wider than the screen (it scrolls in its
    box) and its name column shrank to its longest word: every row of the verdicts,
    the means and the matrix was a 59-character name on 7 lines (153 px)."""
    _need_chromium()
    html, _ = twelve_long
    with browser.Browser(width=400) as b:
        shown = b.open("file://" + html)
        heights = {title: shown.evaluate(_box(title))[4]
                   for title in ("Verdicts", "Metric means", "Head to head")}
    assert all(h <= 80 for h in heights.values()), heights
