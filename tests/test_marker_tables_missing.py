"""A run folder whose completion marker lists table files that are gone
(deleted, an incomplete copy or restore), cut short, or replaced by files of
other rows: every command that reads the run's rows says so in one line and
exits non-zero; none reads it as finished."""
from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from pipeline.cli import run
from tests.conftest import write_cases
from tests.pipeline_helpers import manifest, run_cli


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Runs a (whole), d (its marker lists results/ files that are gone) and
    t (the last of its two results/ files, one per bot, is cut short: an
    interrupted copy; a reader opens the first one whole) and r (the last one
    replaced by a whole file of one row: an overwrite, another copy restored)."""
    tmp = str(tmp_path_factory.mktemp("lost"))
    rows = [{"case_id": f"c{i}", "question": f"Question {i} about refunds?",
             "expected_answer": "Refunds take 30 days.",
             "answer": f"Refunds take {30 if i % 2 else i} days.",
             "label": "PASS" if i % 2 else "FAIL"} for i in range(6)]
    cases = write_cases(os.path.join(tmp, "cases.parquet"), rows)
    out = os.path.join(tmp, "out")
    config = os.path.join(tmp, "two_bots.yaml")
    with open(config, "w", encoding="utf-8") as fh:
        fh.write("bots:\n  - {name: recorded, type: precomputed}\n"
                 "  - {name: again, type: precomputed}\n")
    for run_id in ("a", "d", "t", "r"):
        assert run_cli("--input", cases, "--output", out, "--run-id", run_id,
                       "--run-date", "2026-11-27", "--config", config) == 0
    for rel in manifest(out, "d")["files"]["results"]:
        os.remove(os.path.join(out, rel))
    listed = manifest(out, "t")["files"]["results"]
    assert len(listed) == 2
    with open(os.path.join(out, listed[-1]), "r+b") as fh:
        fh.truncate(100)
    replaced = os.path.join(out, manifest(out, "r")["files"]["results"][-1])
    pq.write_table(pq.read_table(replaced).slice(0, 1), replaced)
    return out


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("evalbeam: error: ") and "\n" not in err and "Traceback" not in err, \
        captured
    return err


REPLACED = "its completion marker counts 12 results/ rows, its listed files hold 7"


@pytest.mark.parametrize("run_id, why", [("d", "missing"), ("t", "not a whole Parquet file"),
                                         ("r", REPLACED)])
@pytest.mark.parametrize("argv", [
    ["status", "--run-id", "{run}"],
    ["calibrate", "--run-id", "{run}"],
    ["compare", "--baseline", "a", "--candidate", "{run}"],
    ["compare", "--baseline", "{run}", "--candidate", "a"],
])
def test_every_command_refuses_a_run_whose_listed_tables_are_gone(folder, capsys, argv, run_id,
                                                                  why):
    """Before, for d: status said 'run d: finished ... counts reconcile' (exit 0)
    and compare 'cannot read the tables under DIR: IO Error: No files found
    that match the pattern ...' without naming the run. For t: calibrate and
    compare crashed with a traceback and exit 1 (pyarrow's 'Parquet magic
    bytes not found in footer', DuckDB's InvalidInputException 'No magic bytes
    found at end of file'), which cli.md documents for neither; status said
    'run t: finished' (exit 0). For r: status said finished (exit 0), and
    compare and calibrate read its 7 rows as the run's 12."""
    assert run([*(a.format(run=run_id) for a in argv), "--output", folder]) == 2
    err = _one_line(capsys)
    assert f"run {run_id!r}" in err and "results/" in err and why in err, err


def test_the_viewer_says_so_for_such_a_run(folder):
    """Before: opening run d in the viewer failed with DuckDB's IOException
    (a 500 page) instead of the readers' RunUnreadable (a page that says why)."""
    from pipeline.viewer.data import Catalog
    from transforms.publish.completed import RunUnreadable
    catalog = Catalog(folder, prefetch=False)
    try:
        with pytest.raises(RunUnreadable, match="run 'd'.*results/.*missing"):
            catalog.run("d")
        with pytest.raises(RunUnreadable, match="run 't'.*results/.*not a whole Parquet file"):
            catalog.run("t")  # before: DuckDB's InvalidInputException, a 500 page
        with pytest.raises(RunUnreadable, match=f"run 'r': {REPLACED}"):
            catalog.run("r")  # before: its 7 rows as the run
        assert catalog.run("a").run.run_id == "a"
    finally:
        catalog.close()


def test_the_python_api_says_so(folder):
    import evalbeam
    from transforms.publish.completed import RunUnreadable
    with pytest.raises(RunUnreadable, match="missing"):
        evalbeam.read_run(folder, "d").results()
    with pytest.raises(RunUnreadable, match="run 't': .* results/ file .*, which is not a whole Parquet file"):
        evalbeam.read_run(folder, "t").results()
    with pytest.raises(RunUnreadable, match=f"run 'r': {REPLACED}"):
        evalbeam.read_run(folder, "r").results()
