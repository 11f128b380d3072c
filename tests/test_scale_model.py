"""bench/scale_model.py's judge config measures the pipeline, not a limiter:
the bundled config's 200,000 tokens/min paced the ~440-token judge calls to
~7.5 a second, so its 2,000-case run idled at ~7% of a core for over an hour."""
from __future__ import annotations

from pathlib import Path

import yaml

from bench.scale_model import EXAMPLE, judge_config
from pipeline.config import load_config
from tests.fake_server import FakeOpenAI


def test_judge_config_lifts_every_limit_and_keeps_the_rest(tmp_path):
    with FakeOpenAI() as server:
        path = judge_config(server, tmp_path)
        base_url = server.openai_base_url
    cfg = load_config(str(path))
    llm = cfg.endpoints["llm"]
    assert llm.base_url == base_url
    assert llm.tokens_per_minute is None  # the bundled 200,000 would pace the run
    assert (llm.requests_per_second, llm.max_concurrency) == (5000, 32)
    assert Path(cfg.bots[0].faq).is_file()
    ours, bundled = (yaml.safe_load(p.read_text()) for p in (path, EXAMPLE / "config_judge.yaml"))
    for data in (ours, bundled):  # what the bench changes on purpose
        for key in ("base_url", "requests_per_second", "max_concurrency", "tokens_per_minute"):
            data["endpoints"]["llm"].pop(key, None)
        data["bots"][0].pop("faq")
    assert ours == bundled
