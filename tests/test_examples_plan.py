"""Every config shipped under examples/ (the docs point users at them) passes
the up-front checks against the bundled cases: a config that stops with a
one-line error would be the first thing a new user runs into."""
from __future__ import annotations

import argparse
import glob
import os
import sys

import pytest

from pipeline.plan import make_plan
from tests.conftest import EXAMPLE, ROOT

# examples/presets/ holds other tools' case files (a promptfooconfig.yaml is an
# input there, read with input.preset: promptfoo: tests/test_presets.py)
CONFIGS = sorted(p for p in glob.glob(os.path.join(ROOT, "examples", "**", "*.yaml"),
                                      recursive=True)
                 if os.path.basename(os.path.dirname(p)) != "presets")


def test_there_are_example_configs():
    assert len(CONFIGS) >= 3


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: os.path.relpath(p, ROOT))
def test_example_config_plans(config, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # the judge example names it
    # another test's my_metrics.py (a module of the same name) may be imported already
    monkeypatch.delitem(sys.modules, "my_metrics", raising=False)
    args = argparse.Namespace(config=config, input=os.path.join(EXAMPLE, "cases.parquet"),
                              output=str(tmp_path / "out"), run_id="plan", run_date=None)
    plan = make_plan(args)
    assert plan.info.metrics and plan.info.bots


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: os.path.relpath(p, ROOT))
def test_example_rubrics_apply_to_the_bundled_cases(config, tmp_path, monkeypatch):
    """examples/custom/config.yaml's `helpfulness` rubric listed `messages` in its
    inputs, so it was null ('no messages (not a conversation)') on 252 of the
    258 bundled cases, every single-turn one, though its steps read the
    conversation only 'if any'. A shipped rubric must apply to most cases."""
    import pyarrow.parquet as pq

    from schemas.cases import source_columns, to_case
    from schemas.records import Turn
    from transforms.enrich.judge.conversation import _lacks
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    monkeypatch.delitem(sys.modules, "my_metrics", raising=False)
    args = argparse.Namespace(config=config, input=os.path.join(EXAMPLE, "cases.parquet"),
                              output=str(tmp_path / "out"), run_id="plan", run_date=None)
    rubrics = make_plan(args).config.judge.rubrics or {}
    cols = source_columns({})
    cases = [to_case(row, cols, f"cases#{i}") for i, row in
             enumerate(pq.read_table(os.path.join(EXAMPLE, "cases.parquet")).to_pylist())]
    turns = [Turn(c, "recorded", c.answer or "an answer") for c in cases]
    for name, rubric in rubrics.items():
        asked = sum(not _lacks(t, rubric.inputs) for t in turns)
        assert asked > len(turns) / 2, (name, rubric.inputs, asked, len(turns))
