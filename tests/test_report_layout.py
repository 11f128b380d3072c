"""The HTML pages as a person sees them, in headless Chromium: a table wider
than the page (many bots with long names in the report's metric means, a
viewer row with many columns of long words) scrolls inside its own box, and the
page itself stays as wide as the window (with six bots the report was 2,477 px
wide in a 1,280 px window: every heading, chart and paragraph sat in the left
half while the page scrolled sideways)."""
from __future__ import annotations

import os
import pathlib

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


def test_a_chart_on_a_phone_keeps_its_size_and_scrolls_in_its_box(tmp_path):
    """On a 390 px phone a 700 px chart was shrunk to the screen, its labels
    4-5 px high; it now keeps its own width in a box that scrolls sideways,
    while the page stays as wide as the window. On a wide window nothing moves."""
    _need_chromium()
    from transforms.publish.charts import render, verdict_bars
    from transforms.publish.html import figure
    chart = render(verdict_bars([{"bot": "faq", "verdict": "PASS", "n": 97},
                                 {"bot": "faq", "verdict": "FAIL", "n": 155}]), "Verdicts per bot")
    path = tmp_path / "chart.html"
    path.write_text(page("chart", ["<h2>Verdicts</h2>", figure(chart, "Verdicts per bot.")]),
                    encoding="utf-8")
    for width, mobile in ((390, True), (1280, False)):
        with browser.Browser(width=width, mobile=mobile) as b:
            shown = b.open(path.as_uri())
            (tmp_path / f"chart-{width}.png").write_bytes(shown.png)
            img = "document.querySelector('img.chart')"
            natural = shown.evaluate(f"{img}.naturalWidth")
            assert natural > 390
            assert shown.evaluate(f"{img}.getBoundingClientRect().width") == natural, width
            assert shown.evaluate("document.documentElement.scrollWidth") == width
            box = f"{img}.parentElement"
            assert shown.evaluate(f"{box}.scrollWidth > {box}.clientWidth") == (width == 390)


def test_replies_without_token_counts_on_an_unpriced_endpoint_are_not_said_to_cost_0():
    """usage/'s cost is null on an endpoint without a price, not 0: the sentence
    on replies without token counts said 'their tokens and cost count as 0 in
    usage/' for every endpoint."""
    from transforms.publish.report import unreported_sentence
    free = {"calls": 2, "estimated_prompt_tokens": 40, "estimated_cost": None}
    paid = {"calls": 1, "estimated_prompt_tokens": 20, "estimated_cost": 0.001}
    assert "Their tokens count as 0 here and in usage/" in unreported_sentence({"bots": free})
    assert "Their tokens and cost count as 0" in unreported_sentence({"judge": paid})
    assert "Their tokens count (and, on the priced endpoints, their cost) as 0" in \
        unreported_sentence({"bots": free, "judge": paid})


def test_a_long_suite_name_or_case_id_does_not_make_worst_cases_screens_tall(tmp_path):
    """A suite named by a 2,000-character text (a prompt pasted as the suite) was
    shown whole in every worst case of report.html: each row was 1,300 px tall at
    1,280 px and 10,000 px on a phone, so the worst cases of 12 bots took 26,000
    px. The suite and the case id are cut there as the answer is (the whole
    text stays in results/ and the manifest); a cut id keeps its end and a short
    hash of it, so ids alike at their start stay distinct."""
    _need_chromium()
    from tests.conftest import write_cases
    from tests.pipeline_helpers import manifest, run_cli
    suite, case = "S" * 2000, "case " * 400
    cases = write_cases(str(tmp_path / "c.parquet"), [
        {"case_id": f"{case}{i}", "question": "How long is the refund window?",
         "expected_answer": "Thirty days.", "answer": "I do not know.", "suite": suite}
        for i in range(3)])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\nmetrics: [exact_match]\n")
    out = tmp_path / "out"
    assert run_cli("--input", cases, "--output", str(out), "--config", str(cfg),
                   "--run-id", "x") == 0
    assert manifest(str(out), "x")["worst_cases"]["recorded"][0]["suite"] == suite
    rows = "Array.from(document.querySelectorAll('h3 + div table tbody tr'))"
    for width, mobile in ((1280, False), (375, True)):
        with browser.Browser(width=width, mobile=mobile) as b:
            shown = b.open((out / "runs" / "x" / "report.html").as_uri())
            (tmp_path / f"report-{width}.png").write_bytes(shown.png)
            heights = shown.evaluate(f"{rows}.map(r => r.getBoundingClientRect().height)")
            cells = shown.evaluate(f"{rows}.map(r => [r.children[0].innerText,"
                                   " r.children[1].innerText])")
        assert len(heights) == 3 and max(heights) < (300 if width == 1280 else 900), heights
        for case_cell, suite_cell in cells:
            assert suite_cell.startswith("SSSS") and suite_cell.endswith("…"), suite_cell
            assert case_cell.startswith("case case") and "…" in case_cell, case_cell
        # the three ids differ only in their last character: cut to their start alone
        # they read as one case; their end and a hash of the whole id tell them apart
        assert len({case for case, _ in cells}) == 3, cells
        assert {case.split(" #")[0][-1] for case, _ in cells} == {"0", "1", "2"}, cells


def test_a_metric_null_on_every_row_is_said_to_have_no_value_and_where_to_look(tmp_path):
    """bleu and exact_match over cases without an expected answer: both
    reports showed '– (n=0, missing 3)' in every bot's cell and nothing said
    that the metric had no value at all, nor where the reason is written."""
    from tests.conftest import write_cases
    from tests.pipeline_helpers import run_cli
    cases = write_cases(str(tmp_path / "c.parquet"), [
        {"case_id": f"c{i}", "question": "How long is the refund window?",
         "answer": "Thirty days." if i else "I do not know."} for i in range(3)])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\n  - {name: b, "
                   "type: precomputed}\nmetrics: [bleu, exact_match, answer_length]\n")
    out = tmp_path / "out"
    assert run_cli("--input", cases, "--output", str(out), "--config", str(cfg),
                   "--run-id", "x") == 0
    sentence = ("No value on any row for bleu, exact_match: "
                "scores/ holds why on each row (its error column).")
    md = (out / "runs" / "x" / "report.md").read_text(encoding="utf-8")
    assert sentence.replace("scores/", "`scores/`") in md, md
    html = (out / "runs" / "x" / "report.html").read_text(encoding="utf-8")
    assert sentence in html
    assert md.count("No value on any row") == 1  # answer_length has values: not named


def test_a_run_whose_every_bot_call_failed_reports_errors_not_warnings(tmp_path):
    """An http bot at a closed port: every row is ERROR, and the verdicts table
    says so, but the note above it said 'so every row is WARN' (the preset's
    rules name no metric of the run, which matters only to rows with an answer)."""
    out = pathlib.Path(_closed_port_run(tmp_path, [
        {"case_id": f"c{i}", "question": "How long is the refund window?",
         "expected_answer": "Thirty days."} for i in range(3)]))
    md = (out / "runs" / "x" / "report.md").read_text(encoding="utf-8")
    assert "| web | 0 | 0 | 0 | 3 | – |" in md, md  # no rule decided a row: not 0.000
    assert "every row is WARN" not in md and "every row a bot answered is WARN" in md, md
    assert "No value on any row for exact_match" in md and "nan" not in md.lower(), md


def _closed_port_run(folder, rows: list[dict], more_bots: str = "") -> str:
    """One real run (the CLI, Beam for real) of `rows` with metric exact_match, which
    no rule of the default preset reads: an http bot `web` at a closed port (every
    row ERROR), and the bots of `more_bots` (config lines); its output folder."""
    import socket

    from tests.conftest import write_cases
    from tests.pipeline_helpers import run_cli
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cases = write_cases(str(folder / "c.parquet"), rows)
    cfg = folder / "c.yaml"
    cfg.write_text(f"endpoints:\n  llm: {{base_url: 'http://127.0.0.1:{port}/v1', "
                   "max_attempts: 1}\nbots:\n  - {name: web, type: http, endpoint: llm, "
                   "options: {answer_path: a, body: {q: '{question}'}}}\n" + more_bots
                   + "metrics: [exact_match]\n")
    out = folder / "out"
    code = run_cli("--input", cases, "--output", str(out), "--config", str(cfg), "--run-id", "x")
    assert code == (0 if more_bots else 6)  # 6: no bot answered, nothing evaluated
    return str(out)


@pytest.fixture(scope="module")
def closed_port_run(tmp_path_factory) -> str:
    """The http bot at a closed port and a recorded bot that lacks one answer (one
    ERROR, the others WARN: no rule of the preset reads exact_match)."""
    return _closed_port_run(tmp_path_factory.mktemp("closed"), [
        {"case_id": f"c{i}", "question": "How long is the refund window?", "suite": "refunds",
         "expected_answer": "Thirty days.",
         "answer": ["Thirty days.", "Ninety days.", None][i % 3]} for i in range(4)],
        "  - {name: recorded, type: precomputed}\n")


def _html_tables(html: str) -> list[list[list[str]]]:
    """Every table of a page: rows of cell texts (<th> and <td>, whitespace folded)."""
    from html.parser import HTMLParser

    class Cells(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tables, self.text = [], None

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.tables.append([])
            elif tag == "tr":
                self.tables[-1].append([])
            elif tag in ("td", "th"):
                self.text = []

        def handle_endtag(self, tag):
            if tag in ("td", "th"):
                self.tables[-1][-1].append(" ".join("".join(self.text).split()))
                self.text = None

        def handle_data(self, data):
            if self.text is not None:
                self.text.append(data)
    parser = Cells()
    parser.feed(html)
    return parser.tables


def _md_tables(md: str) -> list[list[list[str]]]:
    """Every table of report.md: rows of cell texts (the --- line left out)."""
    tables, current = [], None
    for line in md.splitlines():
        if line.startswith("|"):
            if current is None:
                current = []
                tables.append(current)
            if not set(line) <= set("|-: "):
                current.append([c.strip() for c in line.strip()[1:-1].split(" | ")])
        else:
            current = None
    return tables


def test_no_pass_rate_where_no_rule_decided_a_row(closed_port_run):
    """No rule of the preset applies to exact_match and the http bot never
    answered: both reports showed a pass rate of 0.000 [0.000, 0.490] for both
    bots, read as "every answer failed". They now show "–" and say why; summary/
    keeps the pass rate 0 in `mean` (its documented meaning)."""
    from tests.pipeline_helpers import read_rows
    run = os.path.join(closed_port_run, "runs", "x")
    md = open(os.path.join(run, "report.md"), encoding="utf-8").read()
    html = open(os.path.join(run, "report.html"), encoding="utf-8").read()
    verdicts = {"md": _md_tables(md)[0], "html": _html_tables(html)[0]}
    for name, rows in verdicts.items():
        assert rows[0][-1] == "pass rate [95% CI]", (name, rows)
        assert {r[0]: r[1:] for r in rows[1:]} == {"recorded": ["0", "3", "0", "1", "–"],
                                                  "web": ["0", "0", "0", "4", "–"]}, rows
    why = ("Pass rate –: no row was decided by a verdict rule, and 0.000 would read as every "
           "row failed. web: every row is ERROR (the bot did not answer; errors/ holds why); "
           "recorded: no verdict rule applies to this run's metrics (see the note above), so "
           "every answered row is WARN.")
    assert why in md, md
    assert why.replace("'", "&#x27;") in html
    assert "0.000 [0.000, 0.490]" not in md and "0.000 [0.000, 0.490]" not in html
    rates = {r["bot"]: r["mean"] for r in read_rows(closed_port_run, "summary")
             if r["metric"] == "verdict" and r["suite"] == "*"}
    assert rates == {"recorded": 0.0, "web": 0.0}, rates


def test_a_decided_bot_keeps_its_pass_rate_of_0():
    """With a rule over the run's metrics a row of WARN or FAIL was decided:
    a pass rate of 0 is then the finding, shown as 0.000; only where no row
    could be decided (every row ERROR, or no rule at all) is it "–"."""
    from transforms.publish import pass_rate
    row = {"run_id": "x", "bot": "b", "suite": "*", "metric": "verdict", "count": 4,
           "missing": 0, "mean": 0.0, "ci_low": 0.0, "ci_high": 0.49, "pass_count": 0,
           "warn_count": 1, "fail_count": 2, "error_count": 1}
    ruled = {"config": {"verdict": {"rules": [{"metric": "bleu", "below": 0.5,
                                               "verdict": "FAIL"}]}}}
    unruled = {"config": {"verdict": {"rules": []}}}
    bleu = {**row, "metric": "bleu", "count": 3, "mean": 0.4}
    assert pass_rate.shown([row, bleu], ruled)[0]["mean"] == 0.0
    warned = {**row, "fail_count": 0, "warn_count": 3}
    assert pass_rate.shown([warned, bleu], ruled)[0]["mean"] == 0.0
    assert pass_rate.shown([warned, bleu], unruled)[0]["mean"] is None
    failed = {**row, "fail_count": 0, "warn_count": 0, "error_count": 4}
    assert pass_rate.shown([failed, bleu], ruled)[0]["mean"] is None
    assert pass_rate.note(pass_rate.shown([row, bleu], ruled)) is None
    # the rule's metric without a value on any row: no rule could decide a WARN
    assert pass_rate.shown([warned, {**bleu, "count": 0, "mean": None}], ruled)[0]["mean"] is None


def test_a_rule_set_aside_by_unless_on_every_row_decided_none():
    """A rule with `unless: U` is skipped on a row where U has a value: with U
    valued on every answered row (its count = the verdict row's count less its
    ERRORs) the rule decided none, and the pass rate is "–" with why; with U
    missing on a row the rule could decide there, and a 0 stands."""
    from transforms.publish import pass_rate
    warned = {"run_id": "x", "bot": "b", "suite": "*", "metric": "verdict", "count": 4,
              "missing": 0, "mean": 0.0, "ci_low": 0.0, "ci_high": 0.49, "pass_count": 0,
              "warn_count": 3, "fail_count": 0, "error_count": 1}
    em = {**warned, "metric": "exact_match", "count": 3, "mean": 0.5}
    rc = {**em, "metric": "reference_coverage"}
    rules = {"config": {"verdict": {"rules": [
        {"metric": "exact_match", "below": 1, "verdict": "FAIL",
         "unless": "reference_coverage"}, {"metric": "bleu", "below": 0.5, "verdict": "FAIL"}]}}}
    shown = pass_rate.shown([warned, em, rc, {**em, "metric": "bleu", "count": 0}], rules)
    assert shown[0]["mean"] is None and shown[0]["undecided"] == (
        "no verdict rule could be evaluated: its rules read bleu, which have no value on any "
        "of its rows (scores/ holds why); its rule on exact_match was skipped on every row: "
        "unless reference_coverage held (it has a value on each, and no rule decides on it), "
        "so every answered row is WARN"), shown[0]
    some = [warned, em, {**rc, "count": 2}, {**em, "metric": "bleu", "count": 0}]
    assert pass_rate.shown(some, rules)[0]["mean"] == 0.0


def test_worst_cases_of_a_failed_bot_read_the_same_in_both_reports(closed_port_run):
    """report.md wrote a failed bot's answer as "–" and its metrics as an empty
    cell, report.html the answer as an empty cell and the metrics as "–", and
    report.md had no suite column. Both now have the same columns, rows in the
    same order, and "–" where there is no value."""
    run = os.path.join(closed_port_run, "runs", "x")
    md = open(os.path.join(run, "report.md"), encoding="utf-8").read()
    html = open(os.path.join(run, "report.html"), encoding="utf-8").read()
    md_worst = _md_tables(md[md.index("## Worst cases"):])
    html_worst = _html_tables(html[html.index("<h2>Worst cases</h2>"):])
    assert len(md_worst) == len(html_worst) == 2  # recorded, then web
    for m, h in zip(md_worst, html_worst):
        assert m == h, (m, h)
    header = md_worst[0][0]
    assert header == ["case", "suite", "verdict", "reason", "question", "reference", "answer",
                      "metrics"], header
    errored = [dict(zip(header, r)) for t in md_worst for r in t[1:] if r[2] == "ERROR"]
    assert len(errored) == 5, errored  # web's four, recorded's c2
    for row in errored:
        assert row["answer"] == "–" and row["metrics"] == "–", row
        assert row["reason"].startswith("bot failed: "), row
    assert [r[0] for r in md_worst[1][1:]] == ["c3", "c2", "c1", "c0"]
    assert md_worst[0][1][:3] == ["c2", "refunds", "ERROR"]  # the error first


def test_the_head_to_head_notebook_view_and_compare_show_no_pass_rate_where_no_rule_decided(
        closed_port_run, capsys):
    """The same run: its head to head said 'Pass rate on the 4 paired cases: web
    0.000, recorded 0.000', its notebook view (Result._repr_html_) 0.000 [0.000,
    0.490], and `evalbeam compare x:recorded x:web` 'pass rate 0.000 → 0.000'.
    Each now shows "–" (compare with a note); comparisons/ keeps its 0.0 means
    and the difference, as its gate reads them."""
    import evalbeam
    from pipeline.cli import run
    from tests.pipeline_helpers import read_rows
    run_dir = os.path.join(closed_port_run, "runs", "x")
    md = open(os.path.join(run_dir, "report.md"), encoding="utf-8").read()
    html = open(os.path.join(run_dir, "report.html"), encoding="utf-8").read()
    said = "Pass rate on the 4 paired cases: web –, recorded –; recorded − web = +0.000"
    assert said in md and said in html, md
    assert "| pass_rate | 4 | – | – | +0.000 [+0.000, +0.000] |" in md, md
    view = _html_tables(evalbeam.read_run(closed_port_run, "x")._repr_html_())[0]
    assert view[0][5] == "pass rate" and {r[0]: r[5] for r in view[1:]} == {
        "web": "–", "recorded": "–"}, view
    assert run(["compare", "--output", closed_port_run, "--baseline", "x:recorded",
                "--candidate", "x:web"]) == 0
    out = capsys.readouterr().out
    assert "  web: pass rate – → – (Δ +0.000 [+0.000, +0.000], p_holm 1)" in out, out
    assert "note: a pass rate shown as – is a side none of whose paired rows" in out, out
    page = open(os.path.join(run_dir, "compare", "x.recorded.vs.web.md"), encoding="utf-8").read()
    assert "| pass_rate | 4 | – | – | +0.000 [+0.000, +0.000] |" in page, page
    table = [r for r in read_rows(closed_port_run, "comparisons") if r["metric"] == "pass_rate"
             and r["suite"] == "*"]
    assert [(r["baseline_mean"], r["candidate_mean"]) for r in table] == [(0.0, 0.0)], table


# Each word of at most 30 characters (breakable() gives longer runs their own break
# opportunities) shown in a text cell (not one folded in a closed <details>): its
# characters' boxes on more than one line means the word was broken inside (a break
# after a hyphen or a slash is a normal one).
SPLIT_WORDS = """(() => { const split = [];
  for (const td of document.querySelectorAll('td.text')) {
    const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT); let node;
    while ((node = walk.nextNode())) { const fold = node.parentElement.closest('details');
      if (fold && !fold.open && !node.parentElement.closest('summary')) continue;
      const words = /[^\\s\\-\\/\\u2014]+/g; let m;
      while ((m = words.exec(node.data))) { if (m[0].length > 30) continue;
        const r = document.createRange(); r.setStart(node, m.index);
        r.setEnd(node, m.index + m[0].length);
        const tops = new Set(Array.from(r.getClientRects()).filter(x => x.width > 0)
                             .map(x => Math.round(x.top)));
        if (tops.size > 1) split.push(m[0]); } } }
  return split; })()"""


def test_worst_cases_break_no_metric_name_or_word_inside_it(tmp_path):
    """report.html's Worst cases at 1,280 px showed 'reference_covera' / 'ge 0.00'
    in the metrics column of the bundled example: the text cells could break any
    word anywhere (word-break: break-word), so the table squeezed the metrics and
    reason columns below their longest word. A word now breaks inside only when
    it is longer than its column could ever be (breakable() cuts runs longer
    than 30 characters); the table scrolls in its box instead when it must."""
    _need_chromium()
    from tests.conftest import write_cases
    from tests.pipeline_helpers import run_cli
    text = ("Orders are packed in our Reno, Nevada warehouse Monday through Friday and "
            "leave within one business day; a tracking number follows by email. ") * 3
    cases = write_cases(str(tmp_path / "c.parquet"), [
        {"case_id": f"case-{i}", "question": text, "expected_answer": text,
         "answer": "Succulents need very little water; wait until the soil is dry. " * 3,
         "contexts": [text]} for i in range(3)])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\n"
                   "metrics: [reference_coverage, context_entities_recall, keyword_recall]\n"
                   "verdict:\n  rules:\n"
                   "    - {metric: reference_coverage, below: 0.25, verdict: FAIL}\n"
                   "  otherwise: PASS\n")
    out = tmp_path / "out"
    assert run_cli("--input", cases, "--output", str(out), "--config", str(cfg),
                   "--run-id", "w") == 0
    with browser.Browser(width=1280) as b:
        shown = b.open((out / "runs" / "w" / "report.html").as_uri())
        (tmp_path / "report.png").write_bytes(shown.png)
        metrics = shown.evaluate("Array.from(document.querySelectorAll("
                                 "'h3 + div table tbody tr'), r => r.children[7].innerText)")
        split = shown.evaluate(SPLIT_WORDS)
        opened = shown.evaluate("document.querySelectorAll('details').forEach(d => d.open = true),"
                                f" {SPLIT_WORDS}")
        width = shown.evaluate("document.documentElement.scrollWidth")
    assert len(metrics) == 3 and all(m.startswith("reference_coverage") for m in metrics), metrics
    assert split == [] and opened == [], (split, opened)
    assert width <= 1280
