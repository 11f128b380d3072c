"""Issue 22 item 7: report.md carried raw markup and terminal escapes from
case ids and the input path: `<img src=x onerror=alert(1)>`, a `|` that
broke the table, and `\\x1b[2J`, which clears the terminal on `cat`."""
from __future__ import annotations

import os
import re

from tests.conftest import write_cases
from tests.pipeline_helpers import run_cli

HOSTILE = "<img src=x onerror=alert(1)>|\x1b[2J"


def test_report_md_escapes_case_ids_and_the_input_path(tmp_path):
    # the path without the terminal escape: --input refuses control characters
    # up front (tests/test_cli_flags.py); a case id may still hold one
    folder = tmp_path / f"in{HOSTILE.split(chr(27))[0]}"
    folder.mkdir()
    cases = write_cases(str(folder / "cases.parquet"), [
        {"case_id": f"{HOSTILE}{i}", "question": "How long is the refund window?",
         "expected_answer": "Refunds are accepted within 30 days.",
         "answer": "I do not know." if i else "Refunds are accepted within 30 days."}
        for i in range(3)])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\nmetrics: [exact_match]\n")
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(cfg), "--run-id", "x") == 0
    report = open(os.path.join(out, "runs", "x", "report.md"), encoding="utf-8").read()
    assert "\x1b" not in report and not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", report)
    assert "<img" not in report and "&lt;img src=x onerror=alert(1)&gt;" in report
    input_line = next(line for line in report.splitlines() if line.startswith("Input: "))
    assert "/in&lt;img src=x onerror=alert(1)&gt;\\|/cases.parquet — " in input_line
    worst = [line for line in report.splitlines() if "onerror" in line and line.startswith("|")]
    assert len(worst) == 3
    for line in worst:  # 8 cells: 9 unescaped pipes, whatever the case id holds
        assert len(re.findall(r"(?<!\\)\|", line)) == 9, line


def test_markdown_in_an_answer_is_shown_as_written_when_report_md_is_rendered(tmp_path):
    """report.md opened where markdown is rendered (a repository's file view, a
    docs site): an answer's `**bold**`, `_stress_`, `` `code` `` and
    `[link](javascript:...)` / `![pixel](http://...)` became bold text, code, a
    link and an image that loads from elsewhere, in the worst cases table. Now
    they are backslash-escaped: rendered (Python-Markdown, in Chromium) the
    cell reads as the bot wrote it, with no link, image or emphasis."""
    import markdown

    from tests import browser
    from tests.test_viewer import _need_chromium
    _need_chromium()
    answer = ("**bold** _stress_ `code` [link](javascript:alert(1)) "
              "![pixel](http://127.0.0.1:9/p.png) a\\*b")
    cases = write_cases(str(tmp_path / "c.parquet"), [
        {"case_id": "md_case", "question": "Say *it*?", "expected_answer": "Thirty days.",
         "answer": answer}])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\nmetrics: [exact_match]\n")
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(cfg), "--run-id", "x") == 0
    with open(os.path.join(out, "runs", "x", "report.md"), encoding="utf-8") as fh:
        rendered = markdown.markdown(fh.read(), extensions=["tables"])
    page_file = tmp_path / "report_md.html"
    page_file.write_text(f"<!doctype html><meta charset=utf-8><body>{rendered}</body>",
                         encoding="utf-8")
    with browser.Browser(width=1280) as b:
        page = b.open(page_file.as_uri())
        (tmp_path / "report_md.png").write_bytes(page.png)
        row = page.evaluate("Array.from(document.querySelectorAll('tr')).map(tr =>"
                            " Array.from(tr.children).map(td => td.innerText))"
                            ".find(r => r[0] === 'md_case')")
        inside = page.evaluate("Array.from(document.querySelectorAll('td a, td img, td strong,"
                               " td em, td code')).map(e => e.outerHTML)")
    assert row is not None and row[4] == "Say *it*?" and row[6] == answer, row
    assert inside == [], inside
    assert not [u for u in page.requests if u.startswith("http")], page.requests


def _tables(report: str) -> list[list[str]]:
    """report.md's tables, each as its lines (a run of lines starting with '|')."""
    tables, current = [], []
    for line in report.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables


def _cells(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line)) - 1


RECORDED = "  - {name: recorded, type: precomputed}\n"
FAQ = "  - {{name: {name}, type: faq_match, faq: {faq}}}\n"


def _run_folder(tmp_path, rows: list[dict], bots: str = RECORDED,
                config: str = "metrics: [exact_match]\n", code: int = 0) -> str:
    """runs/x of a run of `rows` by `bots` (config lines; FAQ's {faq} is a file
    that answers 'Refund window?' with 'Thirty days.'), which exits `code`."""
    faq = tmp_path / "faq.csv"
    faq.write_text("question,answer\nRefund window?,Thirty days.\n")
    cases = write_cases(str(tmp_path / "c.parquet"), rows)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n" + bots.replace("{faq}", str(faq)) + config)
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                   "--run-id", "x") == code
    return os.path.join(out, "runs", "x")


def _rendered(folder: str) -> str:
    """report.md as a markdown renderer (Python-Markdown, tables) shows it."""
    import markdown
    with open(os.path.join(folder, "report.md"), encoding="utf-8") as fh:
        return markdown.markdown(fh.read(), extensions=["tables"])


def test_a_run_of_invalid_rows_only_writes_tables_markdown_can_read(tmp_path):
    """A run whose every row was invalid (nothing evaluated, no bot in summary/)
    wrote the metric means table as '| metric |  |' over '|---|': two header
    cells over one delimiter cell, which markdown does not take for a table
    (GitHub showed the two lines as text). Every table's header, delimiter and
    rows now have as many cells."""
    folder = _run_folder(tmp_path, [{"case_id": None, "question": None,
                                     "expected_answer": "x", "answer": "y"}] * 3, code=6)
    report = open(os.path.join(folder, "report.md"), encoding="utf-8").read()
    tables = _tables(report)
    assert len(tables) == 2, tables
    for lines in tables:
        assert len({_cells(line) for line in lines}) == 1, lines


def test_markdown_in_a_suite_name_is_shown_as_written_when_report_md_is_rendered(tmp_path):
    """The head-to-head's per-suite table of report.md wrote suite names (input
    data, as a case id is) with only | and HTML escaped: rendered, a suite named
    `![pixel](http://127.0.0.1:9/p.png)` was an image loaded from elsewhere,
    `[docs](javascript:alert(1))` a link, `**vip**` bold. Suite names are now
    escaped as case ids and answers are (md_text)."""
    suites = ["![pixel](http://127.0.0.1:9/p.png)", "[docs](javascript:alert(1))",
              "**vip** `code` _x_"]
    folder = _run_folder(tmp_path, [
        {"case_id": f"c{i}", "question": "How long is the refund window?",
         "expected_answer": "Thirty days.", "answer": "Thirty days.", "suite": s}
        for i, s in enumerate(suites)], RECORDED + FAQ.format(name="faq", faq="{faq}"))
    rendered = _rendered(folder)
    rendered = rendered[rendered.index("<p>Per suite:</p>"):]
    rendered = rendered[:rendered.index("</table>")]
    assert rendered.count("<tr>") == 4, rendered
    assert not re.findall(r"<(a|img|strong|em|code)\b", rendered), rendered
    for suite in suites:  # each suite reads as written
        assert f"<td>{suite.replace('&', '&amp;')}</td>" in rendered, (suite, rendered)


def test_a_mean_that_rounds_to_zero_is_never_shown_as_minus_zero(tmp_path):
    """A custom metric whose values are 0 up to float noise (0.3 - (0.1 + 0.2)
    is -5.6e-17) read '-0.000 [-0.000, -0.000]' in the means of report.md and
    report.html and '-0.00' in the worst cases: a reader takes it for a
    negative score. A value that rounds to zero is now shown as 0.000, as
    signed() already showed the head-to-head's differences as +0.000."""
    import sys
    (tmp_path / "drift.py").write_text("def fn(sample):\n    return 0.3 - (0.1 + 0.2)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        folder = _run_folder(tmp_path, [
            {"case_id": f"c{i}", "question": "How long is the refund window?",
             "expected_answer": "Thirty days.", "answer": "Thirty days."} for i in range(3)],
            config='metrics: [drift]\ncustom_metrics:\n  - {name: drift, function: "drift:fn"}\n')
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("drift", None)
    for name in ("report.md", "report.html"):
        with open(os.path.join(folder, name), encoding="utf-8") as fh:
            text = fh.read()
        assert "drift 0.00" in text, name  # the worst cases show the value
        assert not re.findall(r"-0\.0+(?!\d*[1-9])", text), (name, re.findall(r".{40}-0\.0+", text))


def test_bot_names_read_as_written_when_report_md_is_rendered(tmp_path):
    """Bot names may start and end with '_': rendered, report.md showed bots
    `_beta_` and `__init__` as an italic 'beta' and a bold 'init' in the
    verdicts, the means, the head to head and the worst cases, names no config
    holds. Their edge underscores are now escaped (md_name)."""
    rendered = _rendered(_run_folder(tmp_path, [
        {"case_id": f"c{i}", "question": "Refund window?", "expected_answer": "Thirty days.",
         "answer": "Thirty days."} for i in range(3)],
        RECORDED.replace("recorded", "_beta_") + FAQ.format(name="__init__", faq="{faq}")))
    assert not re.findall(r"<(em|strong)>(beta|init)</", rendered), rendered
    for name in ("_beta_", "__init__"):
        assert f"<td>{name}</td>" in rendered and f"<th>{name}</th>" in rendered, name
        assert f"<h3>{name}</h3>" in rendered, name
    assert "<h3>__init__ − _beta_ (3 paired cases)</h3>" in rendered, rendered
