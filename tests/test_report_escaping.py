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
    folder = tmp_path / f"in{HOSTILE.replace('/', '')}"
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
    assert "&lt;img src=x onerror=alert(1)&gt;\\|\\x1b[2J" in input_line
    worst = [line for line in report.splitlines() if "onerror" in line and line.startswith("|")]
    assert len(worst) == 3
    for line in worst:  # 7 cells: 8 unescaped pipes, whatever the case id holds
        assert len(re.findall(r"(?<!\\)\|", line)) == 8, line
