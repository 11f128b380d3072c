"""A judge reply the parser cannot use, stored in the call cache by an older
version (which cached every reply that had choices), is a miss: the question
is asked again, the usable reply replaces the bad one in both tiers, and
usage/ counts a call, not a cache hit."""
from __future__ import annotations

import json
import os
import sqlite3

from tests.conftest import SAMPLE_ROWS, write_cases
from tests.fake_server import FakeOpenAI
from tests.judge_script import ScriptedJudge
from tests.pipeline_helpers import manifest, read_rows, run_cli
from tests.test_judge_pipeline import JUDGE_KEY, _config
from transforms.remote.shared_cache import decode_object, encode_object, object_path

# what an older version kept: a reply with text, but no JSON verdict in it
BAD = {"choices": [{"message": {"role": "assistant", "content": "The answer seems relevant."},
                    "finish_reason": "stop"}], "usage": {"prompt_tokens": 9}}


def _text(reply: dict) -> str:  # a fresh reply's id and time differ from run to run
    return reply["choices"][0]["message"]["content"]


def _local(path: str) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        return {k: _text(json.loads(v)) for k, v in db.execute("SELECT key, response FROM calls")}


def _poison_local(path: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE calls SET response = ?", (json.dumps(BAD),))


def _shared(root: str, keys) -> dict[str, str]:
    out = {}
    for key in keys:
        with open(object_path(root, key), "rb") as fh:
            out[key] = _text(decode_object(key, fh.read()))
    return out


def _poison_shared(root: str, keys) -> None:
    for key in keys:
        with open(object_path(root, key), "wb") as fh:
            fh.write(encode_object(key, BAD))


def _usage(out: str, run_id: str) -> dict[str, int]:
    rows = [u for u in read_rows(out, "usage") if u["run_id"] == run_id]
    return {k: sum(u[k] for u in rows) for k in ("calls", "cache_hits", "shared_cache_hits")}


def test_an_unusable_cached_judge_reply_is_asked_again_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", JUDGE_KEY)
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out, shared = str(tmp_path / "out"), str(tmp_path / "shared")

    def run(run_id: str, tier1: str) -> None:
        cfg = _config(tmp_path, server, "metrics: [judge_relevance]\n"
                      f"cache: {{path: {tmp_path / tier1}, shared_path: {shared}}}\n")
        assert run_cli("--input", cases, "--output", out, "--config", cfg,
                       "--run-id", run_id) == 0
        assert manifest(out, run_id)["reconciliation"]["ok"]

    with FakeOpenAI(api_key=JUDGE_KEY) as server:
        server.set_chat_handler(ScriptedJudge())
        run("good", "w1.sqlite")
        good = _local(str(tmp_path / "w1.sqlite"))
        asked = len(good)
        assert asked == _usage(out, "good")["calls"] > 0
        assert _shared(shared, good) == good

        # tier 1 and tier 2 both hold the unusable reply: asked again, both replaced
        _poison_local(str(tmp_path / "w1.sqlite"))
        _poison_shared(shared, good)
        run("healed", "w1.sqlite")
        assert _usage(out, "healed") == {"calls": asked, "cache_hits": 0,
                                         "shared_cache_hits": 0}
        assert _local(str(tmp_path / "w1.sqlite")) == good
        assert _shared(shared, good) == good

        # tier 2 alone holds it (a fresh worker): asked again, the object replaced
        _poison_shared(shared, good)
        run("fresh", "w2.sqlite")
        assert _usage(out, "fresh")["calls"] == asked
        assert _shared(shared, good) == good == _local(str(tmp_path / "w2.sqlite"))

        # and then served from the cache, as any usable reply
        run("again", "w1.sqlite")
        assert _usage(out, "again") == {"calls": 0, "cache_hits": asked, "shared_cache_hits": 0}
        # no repair was ever asked: the cached reply was not read as the first reply
        assert server.stats()["by_path"]["/v1/chat/completions"] == 3 * asked
    values = {}
    for s in read_rows(out, "scores"):
        values.setdefault(s["run_id"], {})[s["case_id"]] = s["value"]
    assert values["healed"] == values["good"] == values["fresh"] == values["again"]
    # every answered case is scored (SAMPLE_ROWS has one without a recorded answer)
    assert sum(v is not None for v in values["healed"].values()) == asked
