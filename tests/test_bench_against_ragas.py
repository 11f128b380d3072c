"""bench/against_ragas.py measures like for like: every arm keeps its bytecode
(also where PYTHONDONTWRITEBYTECODE is set), Ragas' arms do not import this
checkout, the sizes get the arms they promise, and the row-by-row value check
catches a difference and a missing value (Ragas itself needs its own venv, so
the whole script is not run here)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.against_ragas import (MUST_AGREE, Arm, Env, arms_for, ratios, summarise,
                                 value_agreement)
from tests.conftest import ROOT


def _env(tmp_path) -> Env:
    return Env(ragas="/nowhere/python", shared_config=tmp_path / "shared.yaml",
               pycache=str(tmp_path / "pyc"))


def test_evalbeam_arms_write_their_bytecode_and_ragas_arms_are_not_given_the_checkout(
        tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = _env(tmp_path)
    ours = env.variables(Arm("e", "evalbeam", "shared"))
    assert ours["PYTHONPATH"] == str(ROOT)
    subprocess.run([sys.executable, "-c", "import transforms.stats.t_table"], cwd=tmp_path,
                   env={**os.environ, **ours}, check=True)
    written = [f for _, _, files in os.walk(env.pycache) for f in files]
    assert any(f.startswith("t_table.") and f.endswith(".pyc") for f in written)
    theirs = env.variables(Arm("r", "ragas", "shared"))
    assert theirs["PYTHONPATH"] == "" and theirs["PYTHONPYCACHEPREFIX"] == env.pycache


def test_commands_score_the_same_rows_with_the_promised_metrics(tmp_path):
    env = _env(tmp_path)
    cases, out = Path("/data/cases.parquet"), tmp_path / "out"
    shared = Arm("e", "evalbeam", "shared", ["--direct_num_workers=2"]).command(cases, out, env)
    assert shared[shared.index("--metrics") + 1] == "exact_match,bleu,rouge1,rougeL"
    assert shared[shared.index("--config") + 1] == str(env.shared_config)
    assert "--direct_num_workers=2" in shared and str(cases) in shared
    default = Arm("d", "evalbeam", "default").command(cases, out, env)
    assert "--metrics" not in default and "--config" not in default  # the built-in defaults
    ragas = Arm("r", "ragas", "nonllm").command(cases, out, env)
    assert ragas[0] == "/nowhere/python" and ragas[-3:] == [str(cases), str(out), "nonllm"]


def test_the_full_suites_run_only_up_to_full_rows_and_start_up_runs_in_process():
    assert [a.suite for a in arms_for(30, 2000)] == ["default", "shared", "shared"]
    assert not any(a.runner for a in arms_for(30, 2000))
    small, large = arms_for(2000, 2000), arms_for(20000, 2000)
    assert {a.suite for a in small} == {"shared", "default", "nonllm"}
    assert {a.suite for a in large} == {"shared"}
    assert sum(a.tool == "ragas" for a in large) == 1


def test_value_check_finds_a_difference_and_counts_rows_evalbeam_left_null():
    ragas = {"values": {"exact_match": {"a": 0.0, "b": 1.0, "c": 0.0},
                        "bleu_score": {"a": 0.2, "b": 0.5, "c": 0.1},
                        "rouge1": {"a": 0.5, "b": 1.0, "c": 0.25},
                        "rougeL": {"a": 0.5, "b": 1.0, "c": 0.25}}}
    ours = {"exact_match": {"a": 0.0, "b": 1.0, "c": None},
            "bleu": {"a": 0.25, "b": 0.5, "c": None},
            "rouge1": {"a": 0.5, "b": 1.0, "c": None},
            "rougeL": {"a": 0.5, "b": 0.75, "c": None}}
    got = value_agreement(ours, ragas)
    assert got["rouge1"] == {"compared": 2, "evalbeam_null": 1, "max_abs_diff": 0.0,
                             "mean_evalbeam": 0.75, "mean_ragas": 0.75}
    assert got["rougeL"]["max_abs_diff"] == 0.25 and "rougeL" in MUST_AGREE
    assert abs(got["bleu"]["max_abs_diff"] - 0.05) < 1e-12


def test_ratio_is_evalbeams_rows_per_second_over_ragas_at_one_size():
    run = lambda wall: {"wall_s": wall, "cpu_s": wall, "peak_rss_tree_mib": 100.0,  # noqa: E731
                        "other_load_cores": 0.0, "check": {"ok": True}}
    table = {label: summarise(label, 2000, [run(w), run(w * 3)])
             for label, w in (("evalbeam 4 shared metrics, in process", 2.0),
                              ("Ragas 4 shared metrics", 10.0))}
    assert table["Ragas 4 shared metrics"]["wall_s"] == 20.0  # median of 10 and 30
    assert ratios(table) == [("evalbeam 4 shared metrics, in process / Ragas 4 shared metrics",
                              5.0)]
