"""Counts are worded one way everywhere: the noun agrees with the count, and a
large count has thousands separators, in the command line's lines, the reports,
the viewer and the stages' notes alike (transforms/text/wording.py)."""
from __future__ import annotations

import re
from pathlib import Path

from pipeline.cli import counts_line
from transforms.read.cases import left_out_note
from transforms.text.wording import counted

ROOT = Path(__file__).resolve().parent.parent
INLINE_PLURAL = re.compile(r"""\{['"]s['"] \* |['"]{2} if [^}]*== 1 else ['"]s['"]|"""
                           r"""['"]s['"] if [^}]*!= 1 else ['"]{2}""")


def test_a_count_agrees_with_its_noun_and_reads_with_separators():
    assert [counted(n, "row") for n in (0, 1, 2, 12345)] == [
        "0 rows", "1 row", "2 rows", "12,345 rows"]


def test_the_runs_counts_line_reads_large_counts_with_separators():
    line = counts_line("n", {"input_rows": 120000, "valid_cases": 119990, "invalid_rows": 10,
                             "bot_errors": 1, "errors_rows": 11})
    assert line == ("run n: 120,000 input rows, 119,990 valid, 10 invalid, 1 bot error "
                    "(11 rows in errors/)")


def test_a_stages_note_words_its_count_like_the_command_line():
    assert left_out_note(["a.tsv"]).startswith("1 file in the input folder is not read")
    assert left_out_note([f"{i}.tsv" for i in range(1200)]).startswith(
        "1,200 files in the input folder are not read")


def test_no_module_words_a_plural_by_hand():
    """One function words counts; a plural written inline drifts ('1 rows')."""
    inline = [f"{path.relative_to(ROOT)}:{i}"
              for top in ("schemas", "transforms", "pipeline", "evalbeam")
              for path in sorted((ROOT / top).rglob("*.py"))
              if path.name != "wording.py"
              for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if INLINE_PLURAL.search(line)]
    assert inline == []


def test_status_words_a_runs_counts_like_the_run_did(tmp_path):
    """`evalbeam status` said 'run o: finished (...; 1 input rows, 1 results rows;
    ...)' and 'tables:   scores/ 10320 rows' where the run's own line says
    '1 input row' and the reports 10,320."""
    from pipeline.postrun.status import run_status
    from tests.conftest import write_cases
    from tests.pipeline_helpers import run_cli
    cases = write_cases(str(tmp_path / "c.parquet"), [
        {"case_id": "c1", "question": "Refund window?", "expected_answer": "30 days.",
         "answer": "30 days."}])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\nmetrics: [exact_match]\n")
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--config", str(cfg), "--run-id", "o") == 0
    said = run_status(out, "o")
    assert said.state == "finished" and "; 1 input row, 1 results row; counts reconcile)" in \
        said.line, said.line
    assert "tables:   results/ 1 row" in said.details and \
        "tables:   errors/ 0 rows" in said.details, said.details
