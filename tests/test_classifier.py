"""The grounding classifier metric: its maths by hand, the TEI and vLLM
protocols against the fake server (batch limits, errors), and whole runs
(a re-run from the call cache sends nothing)."""
from __future__ import annotations

import json

import pytest

from pipeline.config import ConfigError, parse_config
from tests.conftest import SAMPLE_ROWS
from tests.fake_server import FakeOpenAI, ServerConfig
from tests.pipeline_helpers import manifest, read_rows, run_sample
from transforms.enrich.classifier.api import (GroundingClassifier, PairVerdict, batch_limit,
                                              split_batch)
from transforms.enrich.classifier.pairs import chunk_passage, plan_pairs
from transforms.enrich.classifier.reading import GroundingReading
from transforms.enrich.classifier.score import grounding_classifier
from transforms.remote.runtime import AsyncRuntime


# ------------------------------------------------------------------ the maths

def _reading(support, contradiction=None):
    n, m = len(support), len(support[0])
    verdicts = [[PairVerdict(support[i][j], None if contradiction is None
                             else contradiction[i][j]) for j in range(m)] for i in range(n)]
    return GroundingReading(tuple(f"S{i}" for i in range(n)), n,
                            tuple(f"C1.{j + 1}" for j in range(m)), verdicts)


def test_the_answer_scores_its_least_supported_sentence_by_hand():
    # three sentences x two chunks; P(supported) and P(contradicted) per pair
    support = [[0.10, 0.92],    # S0: best 0.92 in chunk 2
               [0.40, 0.35],    # S1: best 0.40 in chunk 1   <- least supported
               [0.81, 0.81]]    # S2: 0.81, the first chunk wins a tie
    contra = [[0.70, 0.01], [0.55, 0.60], [0.02, 0.03]]
    r = grounding_classifier(_reading(support, contra))
    assert r.value == pytest.approx(0.40)  # min(0.92, 0.40, 0.81)
    d = r.details
    assert [s["support"] for s in d["sentences"]] == [0.92, 0.40, 0.81]
    assert [s["best_chunk"] for s in d["sentences"]] == ["C1.2", "C1.1", "C1.1"]
    assert [s["contradiction"] for s in d["sentences"]] == [0.70, 0.60, 0.03]
    assert d["least_supported"] == 1 and d["pairs"] == 6 and d["chunks"] == 2
    assert d["contradicted_sentences"] == [1]  # 0.60 > 0.40


def test_a_failed_pair_makes_the_metric_null_with_the_reason():
    reading = _reading([[0.9, 0.9]])
    reading.verdicts[0][1] = PairVerdict(None, None, "classifier call failed: HTTP 424: boom")
    r = grounding_classifier(reading)
    assert r.value is None and "1 of 2 pairs not classified" in r.error and "424" in r.error
    empty = GroundingReading((), 0, ("C1.1",), [])
    assert grounding_classifier(empty).error == "the answer has no sentence to check"


def test_long_contexts_are_cut_into_chunks_at_sentence_ends():
    text = " ".join(f"Sentence number {i} has five words." for i in range(10))  # 60 words
    chunks = chunk_passage(text, 20)
    assert all(len(c.split()) <= 20 for c in chunks) and len(chunks) == 4  # 3 sentences each
    assert " ".join(chunks) == text
    long = "word " * 45
    assert [len(c.split()) for c in chunk_passage(long, 20)] == [20, 20, 5]
    plan = plan_pairs("It is red. It is big.", ["Short one.", text], 20, 64)
    assert [c for c, _ in plan.chunks] == ["C1.1", "C2.1", "C2.2", "C2.3", "C2.4"]
    assert len(plan.pairs()) == 2 * 5 and plan.pairs()[0] == ("Short one.", "It is red.")


def test_batch_limits_from_the_server_message():
    assert batch_limit("batch size 40 > maximum allowed batch size 32") == 32
    assert batch_limit("Batch size error") is None
    assert split_batch(40, 32) == [(0, 32), (32, 40)]
    assert split_batch(5, None) == [(0, 3), (3, 5)]


# ------------------------------------------------------------------ the protocol

def _classifier(server, cache=None, **cfg):
    config = parse_config({"endpoints": {"nli": {"base_url": server.base_url,
                                                 "requests_per_second": 1000,
                                                 "backoff_initial_s": 0.01}},
                           "classifier": {"endpoint": "nli", "model": "fake-nli", **cfg}})
    runtime = AsyncRuntime(config.endpoints, cache)
    return runtime, GroundingClassifier(runtime.client("nli"), config.classifier)


PAIRS = [(f"Refunds are accepted within {i} days.", f"Refunds are accepted within {i} days.")
         for i in range(10)]


@pytest.mark.parametrize("status", [413, 422])
def test_an_oversized_batch_becomes_smaller_batches(status):
    with FakeOpenAI(ServerConfig(tei_max_batch=4, tei_batch_status=status)) as server:
        runtime, gc = _classifier(server, batch_size=10,
                                  labels={"supported": "ENTAILMENT",
                                          "contradicted": "contradiction"})
        try:
            records = []
            got = runtime.run(gc.classify(PAIRS, records.append))
            assert all(v.error is None and v.support > 0.9 for v in got.values())
            sizes = [len(r.json["inputs"]) for r in server.recorded()]
            assert sizes[0] == 10 and sorted(sizes[1:]) == [2, 4, 4]  # then the named limit
            assert [r.status for r in records] == [status, 200, 200, 200]
            body = server.recorded()[0].json
            assert body["truncate"] is True and body["raw_scores"] is False
            assert body["inputs"][0] == list(PAIRS[0])  # [premise, hypothesis]
            server.reset_stats()  # the limit is remembered for the endpoint's next calls
            runtime.run(gc.classify([(p, h + " too") for p, h in PAIRS], records.append))
            assert sorted(len(r.json["inputs"]) for r in server.recorded()) == [2, 4, 4]
        finally:
            runtime.close()


def test_index_labels_are_resolved_through_info_and_tokens_come_from_the_header():
    with FakeOpenAI() as server:  # id2label: 0 CONTRADICTION, 1 NEUTRAL, 2 ENTAILMENT
        runtime, gc = _classifier(server, labels={"supported": 2, "contradicted": 0})
        try:
            records = []
            got = runtime.run(gc.classify([("It costs 12 dollars.", "It costs 99 dollars.")],
                                          records.append))
            (v,) = got.values()
            assert v.contradiction > 0.8 and v.support < 0.2  # by name, not by position
            assert [r.path for r in server.recorded()] == ["/info", "/predict"]
            assert records[1].prompt_tokens > 0  # x-compute-tokens
        finally:
            runtime.close()


def test_one_unreadable_pair_fails_alone_and_a_backend_error_fails_its_batch():
    long = "word " * 600
    with FakeOpenAI() as server:
        runtime, gc = _classifier(server, truncate=False, labels={"supported": "entailment"})
        try:
            got = runtime.run(gc.classify(PAIRS[:3] + [(long, "A word.")], lambda r: None))
            assert got[(long, "A word.")].error.startswith("classifier call failed: HTTP 422")
            assert "must have less than 512 tokens" in got[(long, "A word.")].error
            assert all(got[p].error is None for p in PAIRS[:3])

            def boom(premise, hypothesis):
                raise RuntimeError("CUDA out of memory")
            server.set_predict_handler(boom)
            got = runtime.run(gc.classify(PAIRS[5:8], lambda r: None))
            assert all("HTTP 424" in v.error and "CUDA out of memory" in v.error
                       for v in got.values())
        finally:
            runtime.close()


def test_a_label_the_model_lacks_is_the_reason():
    with FakeOpenAI() as server:
        runtime, gc = _classifier(server, labels={"supported": "SUPPORTED"})
        try:
            (v,) = runtime.run(gc.classify(PAIRS[:1], lambda r: None)).values()
            assert v.support is None and "label 'SUPPORTED' is not among the model's labels" \
                in v.error
        finally:
            runtime.close()


@pytest.mark.parametrize("api", ["tei", "vllm_score"])
def test_a_probability_that_is_not_a_number_fails_the_pair(api):
    """A server that answered NaN (a model's overflow: inf or NaN logits) gave
    the pair support NaN without an error: the answer's value became NaN, or
    the pair was silently passed over by the max over chunks."""
    with FakeOpenAI() as server:
        server.set_predict_handler(lambda p, h: [float("nan"), 0.0, float("inf")])
        runtime, gc = _classifier(server, api=api, labels={"supported": "ENTAILMENT"})
        try:
            (v,) = runtime.run(gc.classify(PAIRS[:1], lambda r: None)).values()
            assert v.support is None and v.error.startswith("classifier reply unusable"), v
        finally:
            runtime.close()


def test_an_unusable_prediction_is_not_cached(tmp_path):
    """An unusable prediction (here NaN) was stored in the call cache, so a
    re-run read the failure back without asking the server again."""
    cache = str(tmp_path / "calls.sqlite")
    with FakeOpenAI() as server:
        for logits, error in (([float("nan"), 0.0, 0.0], True), ([0.0, 0.0, 5.0], False)):
            server.set_predict_handler(lambda p, h: logits)
            runtime, gc = _classifier(server, cache, labels={"supported": "ENTAILMENT"})
            try:
                server.reset_stats()
                (v,) = runtime.run(gc.classify(PAIRS[:1], lambda r: None)).values()
                assert (v.error is not None) == error and server.stats()["by_path"]["/predict"] == 1
            finally:
                runtime.close()


def test_vllm_score_api():
    with FakeOpenAI() as server:
        runtime, gc = _classifier(server, api="vllm_score", labels={})
        try:
            records = []
            got = runtime.run(gc.classify(PAIRS[:2] + [("The sky is blue.", "It costs 9 euros.")],
                                          records.append))
            (req,) = server.recorded()
            assert req.path == "/score" and req.json["model"] == "fake-nli"
            assert req.json["text_1"][0] == PAIRS[0][0] and req.json["text_2"][2] == \
                "It costs 9 euros."
            assert got[PAIRS[0]].support > 0.9 and got[PAIRS[0]].contradiction is None
            assert got[("The sky is blue.", "It costs 9 euros.")].support < 0.1
            assert records[0].prompt_tokens > 0
        finally:
            runtime.close()


@pytest.mark.parametrize("cfg, words", [
    ({"endpoint": "nope", "model": "m"}, "classifier.endpoint 'nope' is not a configured"),
    ({"endpoint": "nli"}, "both 'endpoint' and 'model'"),
    ({"endpoint": "nli", "model": "m", "api": "grpc"}, "classifier.api must be one of"),
    ({"endpoint": "nli", "model": "m", "labels": {"supported": -1}},
     "classifier.labels.supported must be a label name or an index"),
    ({"endpoint": "nli", "model": "m", "labels": {"entailment": 1}},
     "unknown key 'classifier.labels.entailment'"),
    ({"endpoint": "nli", "model": "m", "labels": {"contradicted": 0}},
     "missing key 'classifier.labels.supported'"),
    ({"endpoint": "nli", "model": "m", "batch_size": 0}, "classifier.batch_size must be"),
])
def test_classifier_config_errors_name_the_key(cfg, words):
    with pytest.raises(ConfigError, match=words):
        parse_config({"endpoints": {"nli": {"base_url": "http://127.0.0.1:1"}},
                      "classifier": cfg})


# ------------------------------------------------------------------ whole runs

def _config(server, extra=""):
    return (f"endpoints:\n  nli: {{base_url: '{server.base_url}', requests_per_second: 500,\n"
            "    max_concurrency: 8, backoff_initial_s: 0.01}\n"
            "classifier: {endpoint: nli, model: fake-nli, labels: {supported: ENTAILMENT, "
            "contradicted: CONTRADICTION}, batch_size: 3}\n"
            "metrics: [grounding_classifier, bleu]\n" + extra)


def test_a_run_scores_every_row_and_a_rerun_sends_nothing(tmp_path):
    with FakeOpenAI(ServerConfig(tei_max_batch=2)) as server:
        code, out = run_sample(tmp_path, _config(server), "r1")
        assert code == 0
        first = server.stats()["by_path"].get("/predict", 0)
        assert first > 0
        code, _ = run_sample(tmp_path, _config(server), "r2")
        assert code == 0 and server.stats()["by_path"]["/predict"] == first  # all cached
    assert manifest(out, "r1")["reconciliation"]["ok"]
    scores = {(s["run_id"], s["case_id"]): s for s in read_rows(out, "scores")
              if s["metric"] == "grounding_classifier"}
    c1, c2 = scores[("r1", "c1")], scores[("r1", "c2")]
    assert c1["value"] > 0.9  # the answer is the context's own sentence
    assert c2["value"] < 0.1  # "$99 ... free phone" against "$12 per month"
    assert json.loads(c2["details"])["contradicted_sentences"] == [0]
    assert scores[("r1", "c3")]["error"] == "no contexts"
    assert scores[("r1", "c4")]["error"].startswith("bot failed")
    assert {k[1]: (v["value"], v["error"]) for k, v in scores.items() if k[0] == "r1"} == \
        {k[1]: (v["value"], v["error"]) for k, v in scores.items() if k[0] == "r2"}
    usage = [u for u in read_rows(out, "usage") if u["purpose"] == "classifier:grounding"]
    by_run = {r: [u for u in usage if u["run_id"] == r] for r in ("r1", "r2")}
    assert sum(u["calls"] for u in by_run["r1"]) == first and all(
        u["calls"] == 0 for u in by_run["r2"])
    assert sum(u["cache_hits"] for u in by_run["r2"]) == 2  # c1's and c2's one pair each
    assert sum(u["failures"] for u in by_run["r1"]) == 0


def test_a_failing_endpoint_makes_null_rows_with_reasons(tmp_path):
    with FakeOpenAI() as server:
        def boom(premise, hypothesis):
            raise RuntimeError("model not loaded")
        server.set_predict_handler(boom)
        code, out = run_sample(tmp_path, _config(server), "bad")
    assert code == 0 and manifest(out, "bad")["reconciliation"]["ok"]
    scores = {s["case_id"]: s for s in read_rows(out, "scores")
              if s["metric"] == "grounding_classifier"}
    assert scores["c1"]["value"] is None
    assert "HTTP 424" in scores["c1"]["error"] and "model not loaded" in scores["c1"]["error"]
    # the rows the classifier failed for are errors/ rows too, counted in the manifest
    errors = {e["case_id"]: e for e in read_rows(out, "errors") if e["stage"] == "classifier"}
    assert "c1" in errors and errors["c1"]["error_type"] == "classifier_failed"
    assert errors["c1"]["message"] == scores["c1"]["error"]
    assert manifest(out, "bad")["counts"]["classifier_errors"] == len(errors)


def test_without_a_classifier_the_metric_is_null_and_left_out_by_default(tmp_path, capsys):
    code, out = run_sample(tmp_path, "metrics: [grounding_classifier]\n", "n")
    assert code == 0
    scores = [s for s in read_rows(out, "scores") if s["case_id"] == "c1"]
    assert scores[0]["error"] == "no classifier configured"
    assert "no classifier configured" in capsys.readouterr().err
    code, out2 = run_sample(tmp_path, "embeddings: {provider: hashing}\n", "d")
    assert "grounding_classifier" not in manifest(out2, "d")["metrics"]


def test_vllm_scores_whose_indices_are_not_one_per_pair_are_unusable():
    """/score rows are put in order by `index`: two rows of index 0 for two
    pairs gave the second pair the first one's score, without an error."""
    with FakeOpenAI() as server:
        runtime, gc = _classifier(server, api="vllm_score", labels={})
        try:
            rows = {"data": [{"index": 0, "score": 0.9}, {"index": 0, "score": 0.1}]}
            with pytest.raises(ValueError, match="one per pair"):
                gc._answers(rows, 2)
            ok = {"data": [{"index": 1, "score": 0.1}, {"index": 0, "score": 0.9}]}
            assert gc._answers(ok, 2) == [{"score": 0.9}, {"score": 0.1}]
        finally:
            runtime.close()
