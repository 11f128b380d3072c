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


class FirstRepliesEmpty:
    """A judge whose first `bad` replies to each question are HTTP 200 with an
    unusable body (`content: null`, no choices, only tool_calls, a refusal), the
    next ones the scripted judge's."""

    KINDS = ({"content": None},
             {"choices": []},
             {"content": None, "tool_calls": [{"id": "t1", "type": "function",
                                               "function": {"name": "f", "arguments": "{}"}}]},
             {"content": None, "refusal": "I can't help with that."})

    def __init__(self, bad: int):
        import threading
        self.bad, self.script, self.seen = bad, ScriptedJudge(), {}
        self.lock = threading.Lock()

    def __call__(self, request: dict):
        key = json.dumps(request["messages"])
        with self.lock:
            n = self.seen[key] = self.seen.get(key, 0) + 1
        if n <= self.bad:
            return self.KINDS[(n - 1) % len(self.KINDS)]
        return self.script(request)


def test_an_empty_judge_reply_is_retried_then_a_null_with_the_reason(tmp_path, monkeypatch):
    """A judge reply of HTTP 200 without an answer (null content, no choices,
    only tool_calls, a refusal) was not retried: the metric was null at the
    first such reply. Now it is retried within the call's max_attempts (usage/
    counts the retries); when every attempt is unusable the metric is null with
    the reason, an errors/ row says it, and nothing is cached."""
    monkeypatch.setenv("JUDGE_KEY", JUDGE_KEY)
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out, shared = str(tmp_path / "out"), str(tmp_path / "shared")
    cache = f"cache: {{path: {tmp_path / 'w.sqlite'}, shared_path: {shared}}}\n"

    def run(run_id: str, handler) -> dict:
        server.set_chat_handler(handler)
        cfg = _config(tmp_path, server, "metrics: [judge_relevance]\n" + cache)
        assert run_cli("--input", cases, "--output", out, "--config", cfg,
                       "--run-id", run_id) == 0
        assert manifest(out, run_id)["reconciliation"]["ok"]
        rows = [u for u in read_rows(out, "usage") if u["run_id"] == run_id]
        return {k: sum(u[k] for u in rows) for k in ("calls", "retries", "failures")}

    def scores(run_id: str) -> dict:
        return {s["case_id"]: s for s in read_rows(out, "scores") if s["run_id"] == run_id}

    with FakeOpenAI(api_key=JUDGE_KEY) as server:
        # every attempt (6 by default) unusable: null with the reason, not cached
        usage = run("empty", FirstRepliesEmpty(bad=100))
        asked = usage["calls"]
        assert asked > 0 and usage == {"calls": asked, "retries": 5 * asked, "failures": asked}
        failed = [s for s in scores("empty").values() if "judge" in (s["error"] or "")]
        assert len(failed) == asked and all(s["value"] is None for s in failed)
        assert all("reply content of choice 0 is null" in s["error"] or
                   "no choices" in s["error"] for s in failed), failed[0]["error"]
        errors = [e for e in read_rows(out, "errors")
                  if e["run_id"] == "empty" and e["stage"] == "judge"]
        assert len(errors) == asked
        with sqlite3.connect(str(tmp_path / "w.sqlite")) as db:
            assert db.execute("SELECT count(*) FROM calls").fetchone()[0] == 0
        assert not os.path.exists(shared) or not any(files for *_, files in os.walk(shared))

        # three unusable replies, then an answer: retried, scored, cached
        usage = run("flaky", FirstRepliesEmpty(bad=3))
        assert usage == {"calls": asked, "retries": 3 * asked, "failures": 0}
        assert all(s["error"] is None for s in scores("flaky").values() if s["value"] is not None)
        assert sum(s["value"] is not None for s in scores("flaky").values()) == asked
        assert not [e for e in read_rows(out, "errors")
                    if e["run_id"] == "flaky" and e["stage"] == "judge"]
        assert run("again", FirstRepliesEmpty(bad=100))["calls"] == 0  # from the cache
    assert ({k: s["value"] for k, s in scores("again").items()}
            == {k: s["value"] for k, s in scores("flaky").items()})
