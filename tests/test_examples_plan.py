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

CONFIGS = sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.yaml"), recursive=True))


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
