"""Semantic metrics in the pipeline: endpoint embedder over HTTP, and the
signal they give on the bundled example."""
from __future__ import annotations

import contextlib
import json
import os
from collections import defaultdict

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.conftest import EXAMPLE, SAMPLE_ROWS, write_cases
from tests.fake_server import FakeOpenAI, ServerConfig, embed_text
from tests.pipeline_helpers import (fake_runtime, manifest, read_rows, run_cli, run_sample,
                                    usage_totals)
from transforms.enrich.embeddings.cache import CachingEmbedder
from transforms.enrich.embeddings.endpoint import EmbeddingError, EndpointEmbedder
from transforms.remote.usage import CallLog


@contextlib.contextmanager
def _embedder(server, request_size=4, **ep):
    """(CallLog, EndpointEmbedder) on the loopback server; its runtime closed on exit."""
    with fake_runtime(server, "emb", **{"max_attempts": 5, "max_concurrency": 4, **ep}) as rt:
        log = CallLog()
        yield log, EndpointEmbedder(rt, "emb", "text-embed", request_size, log=log)


def test_endpoint_embedder_batches_dedupes_and_matches_the_server():
    texts = [f"sentence number {i}" for i in range(10)]
    with FakeOpenAI(ServerConfig(embedding_dim=16)) as server:
        with _embedder(server, request_size=4) as (log, inner):
            emb = CachingEmbedder(inner, batch_size=100_000)
            got = emb.embed(texts + texts[:3] + [""])  # duplicates and an empty text
            again = emb.embed(texts[:5])               # all cached: no request
        bodies = [r.json["input"] for r in server.requests if r.path == "/v1/embeddings"]
    # 10 unique texts, at most 4 per request; requests run concurrently, so any order
    assert sorted(len(b) for b in bodies) == [2, 4, 4]
    assert sorted(sum(bodies, [])) == sorted(texts)  # each unique text sent once
    assert "" not in sum(bodies, [])               # empty texts are never sent
    want = np.array([embed_text(t, 16) for t in texts], dtype=np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert np.allclose(got[:10], want, atol=1e-6) and np.allclose(got[10:13], want[:3])
    assert not got[13].any()                      # empty text: a zero vector
    assert np.allclose(again, want[:5])
    (key, usage), = log.drain()
    assert key == ("emb", "text-embed", "embeddings", None, ()) and usage["calls"] == 3 and usage["prompt_tokens"] > 0


def test_endpoint_embedder_retries_then_reports_failure():
    with FakeOpenAI(ServerConfig(fault_rate=0.5, faults=("503", "drop"), seed=1,
                                 retry_after_s=None)) as server:
        with _embedder(server, request_size=2, max_attempts=8) as (_, emb):
            vectors = emb.embed([f"t{i}" for i in range(12)])
        stats = server.stats()
    assert vectors.shape == (12, 16) and np.allclose(np.linalg.norm(vectors, axis=1), 1)
    assert stats["total"] > 6 and max(stats["attempts_by_request_id"].values()) > 1
    with FakeOpenAI(ServerConfig(status_override=500, retry_after_s=None)) as server:
        with _embedder(server, max_attempts=2) as (_, emb):
            with pytest.raises(EmbeddingError, match="HTTP 500"):
                emb.embed(["x"])
        assert server.stats()["total"] == 2


def test_endpoint_embeddings_in_the_pipeline_with_usage(tmp_path, monkeypatch):
    monkeypatch.setenv("EMB_KEY", "sk-emb-test-4f9a2c")
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    with FakeOpenAI(api_key="sk-emb-test-4f9a2c") as server:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            f"endpoints:\n  emb: {{base_url: '{server.openai_base_url}', api_key_env: EMB_KEY,"
            " price_per_million: {input: 0.02}}\n"
            "embeddings: {provider: endpoint, endpoint: emb, model: text-embed}\n"
            "metrics: [answer_similarity, bertscore, answer_relevance]\n")
        out = str(tmp_path / "out")
        assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                       "--run-id", "e") == 0
        n_requests = server.stats()["by_path"]["/v1/embeddings"]
    scores = read_rows(out, "scores")
    sim = {s["case_id"]: s for s in scores if s["metric"] == "answer_similarity"}
    assert sim["c1"]["value"] == pytest.approx(1.0, abs=1e-6)  # the recorded answer is exact
    assert sim["c3"]["error"] == "no expected_answer" and sim["c4"]["value"] is None
    assert all(s["value"] is not None for s in scores
               if s["metric"] == "bertscore" and s["case_id"] in ("c1", "c2"))
    rows = read_rows(out, "usage")
    usage = usage_totals(rows, "endpoint", "model")
    assert {k: u["calls"] for k, u in usage.items()} == {("emb", "text-embed"): n_requests}
    u = usage[("emb", "text-embed")]
    assert u["cost"] == pytest.approx(u["prompt_tokens"] * 0.02 / 1e6)
    # the requests served the embedding metrics of the run, split among them
    assert {r["metric"] for r in rows} == {"answer_similarity", "bertscore", "answer_relevance"}
    assert {r["split_among"] for r in rows} == {3} and {r["bot"] for r in rows} == {None}
    assert manifest(out, "e")["reconciliation"]["ok"]


def test_failed_embeddings_make_metrics_null_with_the_reason(tmp_path):
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    with FakeOpenAI(ServerConfig(status_override=401)) as server:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"endpoints:\n  emb: {{base_url: '{server.openai_base_url}'}}\n"
                       "embeddings: {provider: endpoint, endpoint: emb, model: m}\n"
                       "metrics: [answer_similarity, bleu]\n")
        out = str(tmp_path / "out")
        assert run_cli("--input", cases, "--output", out, "--config", str(cfg),
                       "--run-id", "f") == 0
    sims = [s for s in read_rows(out, "scores") if s["metric"] == "answer_similarity"
            and s["case_id"] in ("c1", "c2")]
    assert all(s["value"] is None and "embedding failed" in s["error"] and "401" in s["error"]
               for s in sims)
    bleu = [s for s in read_rows(out, "scores") if s["metric"] == "bleu" and s["case_id"] == "c1"]
    assert bleu[0]["value"] == pytest.approx(1.0)  # other metrics are unaffected
    # each row whose embeddings failed is an errors/ row too, and the counts reconcile
    errors = [e for e in read_rows(out, "errors") if e["stage"] == "embedding"]
    failed = [s["case_id"] for s in read_rows(out, "scores")
              if s["metric"] == "answer_similarity" and "embedding failed" in (s["error"] or "")]
    assert sorted(e["case_id"] for e in errors) == sorted(failed) == ["c1", "c2"]
    assert all(e["error_type"] == "embedding_failed" and "401" in e["message"] for e in errors)
    m = manifest(out, "f")
    assert m["counts"]["embedding_errors"] == len(errors) and m["reconciliation"]["ok"]


def test_a_failed_embeddings_request_nulls_only_the_rows_that_needed_its_texts():
    """100 rows, 300 texts (question, reference, answer) and 102 words (BERTScore's
    token vectors): seven requests, some of them failing (HTTP 500, one attempt).
    A row keeps each feature whose texts the answered requests embedded (all of
    them were dropped before); only a feature missing a text is left out, and
    the row says why."""
    from pipeline.config import EmbeddingsConfig, EndpointConfig
    from schemas.records import EvalCase, Turn
    from transforms.enrich.embed import EmbedTurns
    from transforms.enrich.features import (EMBED_ERROR, TOK_ANSWER, TOK_EXPECTED, VEC_ANSWER,
                                            VEC_EXPECTED, VEC_QUESTION)
    turns = [Turn(EvalCase(f"c{i}", f"question {i}?", f"reference {i}."), "bot", f"answer {i}.")
             for i in range(100)]
    with FakeOpenAI(ServerConfig(fault_rate=0.5, faults=("500",), seed=2,
                                 retry_after_s=None)) as server:
        dofn = EmbedTurns(EmbeddingsConfig("endpoint", "emb", "e"),
                          {"emb": EndpointConfig(base_url=server.openai_base_url, max_attempts=1,
                                                 requests_per_second=1000,
                                                 max_concurrency=1)},  # seeded faults, in order
                          frozenset({VEC_QUESTION, VEC_EXPECTED, TOK_EXPECTED}))
        dofn.setup()
        try:
            out = list(dofn.process(turns))
        finally:
            dofn.teardown()
        answered = [r for r in server.requests if r.path == "/v1/embeddings"]
    embedded = {t for r in answered if r.status == 200 for t in r.json["input"]}
    assert len(answered) == 7 and 0 < len(embedded) < 402  # some requests failed
    kept = {"question": 0, "reference": 0, "tokens": 0, "error": 0}
    for t in out:
        f = t.features
        assert (VEC_QUESTION in f) == (t.case.question in embedded)
        both = {t.case.expected_answer, t.answer} <= embedded
        assert (VEC_EXPECTED in f) == (VEC_ANSWER in f) == both
        words = set(EndpointEmbedder.tokenize(t.case.expected_answer + " " + t.answer))
        assert (TOK_EXPECTED in f) == (TOK_ANSWER in f) == (words <= embedded)
        if VEC_QUESTION in f and both and words <= embedded:
            assert EMBED_ERROR not in f
        else:
            assert f[EMBED_ERROR].startswith("embedding failed: EmbeddingError: embeddings "
                                             "failed: HTTP 500")
        kept["question"] += VEC_QUESTION in f
        kept["reference"] += both
        kept["tokens"] += words <= embedded
        kept["error"] += EMBED_ERROR in f
    assert all(kept.values()) and kept["error"] < 100, kept


def test_example_paraphrases_beat_wrong_and_off_topic_answers(tmp_path):
    """On the bundled example with the local model: correct paraphrases score higher
    answer_similarity and bertscore on average than off-topic or empty answers, and
    exact answers score highest."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("bots:\n  - {name: recorded, type: precomputed}\n"
                   "metrics: [answer_similarity, bertscore]\n")
    out = str(tmp_path / "out")
    assert run_cli("--input", os.path.join(EXAMPLE, "cases.parquet"), "--output", out,
                   "--config", str(cfg), "--run-id", "x") == 0
    quality = dict(zip(*pq.read_table(os.path.join(EXAMPLE, "cases.parquet"),
                                      columns=["case_id", "quality"]).to_pydict().values()))
    means: dict[tuple[str, str], list[float]] = defaultdict(list)
    for s in read_rows(out, "scores"):
        if s["value"] is not None:
            means[(s["metric"], quality[s["case_id"]])].append(s["value"])
    for metric in ("answer_similarity", "bertscore"):
        m = {q: float(np.mean(v)) for (met, q), v in means.items() if met == metric}
        assert m["exact"] > m["paraphrase"] > m["off_topic"], (metric, m)
        assert m["paraphrase"] > m["empty"] and m["paraphrase"] > m["off_topic"] + 0.3
        assert m["missing_facts"] > m["off_topic"]



_CAPITAL = {"question": "What is the capital of China?", "answer": "Beijing is the capital.",
            "contexts": ["Beijing is the capital of China."]}


def _hashing_scores(tmp_path, rows: list[dict], metrics: str) -> dict[tuple[str, str], dict]:
    """A run of the rows with hashing embeddings: its scores by (case_id, metric)."""
    cases = tmp_path / "c.jsonl"
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"embeddings: {{provider: hashing}}\nmetrics: [{metrics}]\n")
    out = str(tmp_path / "out")
    assert run_cli("--input", str(cases), "--output", out, "--config", str(cfg),
                   "--run-id", "b") == 0
    assert manifest(out, "b")["reconciliation"]["ok"]
    return {(s["case_id"], s["metric"]): s for s in read_rows(out, "scores")}


def test_a_blank_reference_makes_answer_similarity_null_not_a_score(tmp_path):
    """An expected answer of "" or spaces has no meaning to compare with, so
    answer_similarity is null with the reason, as bleu, exact_match and
    bertscore are; a blank one among several references is passed over. It was
    the cosine with the embedding of the blank text (0.05 with MiniLM)."""
    rows = [dict(_CAPITAL, case_id="empty", expected_answer=""),
            dict(_CAPITAL, case_id="spaces", expected_answer="  \n\t "),
            dict(_CAPITAL, case_id="one_blank", expected_answer=[" ", "Beijing is the capital."])]
    scores = _hashing_scores(tmp_path, rows, "answer_similarity, bertscore, bleu")
    for case in ("empty", "spaces"):
        sim = scores[case, "answer_similarity"]
        assert sim["value"] is None and sim["error"] == "empty expected answer", sim
        assert scores[case, "bleu"]["value"] is None and scores[case, "bertscore"]["value"] is None
    best = scores["one_blank", "answer_similarity"]
    assert best["value"] == pytest.approx(1.0), best
    assert json.loads(best["details"])["reference"] == 2


def test_an_invisible_only_reference_or_answer_is_blank_as_an_empty_one(tmp_path):
    """A reference made only of invisible characters (zero-width space, ZWJ, word
    joiner, BOM, bidi marks) says nothing, as "" does: bleu, exact_match and
    answer_similarity are null "empty expected answer", and an invisible-only
    answer is an empty one (answer_similarity 0, "empty answer"). str.strip()
    keeps those characters, so they scored a real 0 (or a cosine)."""
    invisible = "\u200b\u200d\u2060\ufeff\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    rows = [dict(_CAPITAL, case_id="zwsp", expected_answer="\u200b"),
            dict(_CAPITAL, case_id="mixed", expected_answer=f" {invisible}\n"),
            dict(_CAPITAL, case_id="blank_answer", answer=invisible,
                 expected_answer="Beijing is the capital.")]
    scores = _hashing_scores(tmp_path, rows, "answer_similarity, bleu, exact_match")
    for case in ("zwsp", "mixed"):
        for metric in ("answer_similarity", "bleu", "exact_match"):
            got = scores[case, metric]
            assert got["value"] is None and got["error"] == "empty expected answer", got
    sim = scores["blank_answer", "answer_similarity"]
    assert sim["value"] == 0.0 and json.loads(sim["details"])["note"] == "empty answer", sim


def _rule_rows() -> list[dict]:
    return [{"case_id": f"c{i}", "question": f"What is rule number {i}?",
             "expected_answer": f"Rule {i} says to keep receipts.",
             "answer": f"Rule {i} says keep the receipts."} for i in range(12)]


def _answer_similarity_run(tmp_path, server, run_id: str, rows: list[dict]) -> str:
    """answer_similarity over rows, embedded by the server: the output folder."""
    code, out = run_sample(tmp_path, f"endpoints:\n  emb: {{base_url: '{server.openai_base_url}'}}"
                           "\nembeddings: {provider: endpoint, endpoint: emb, model: m}\n"
                           "metrics: [answer_similarity]\n", run_id, rows)
    assert code == 0
    return out


@pytest.mark.parametrize("status", [400, 413])  # OpenAI's refusal; TEI's /v1/embeddings
def test_a_text_over_the_model_input_limit_fails_alone_not_its_batch(tmp_path, status):
    """One answer longer than the embedding model reads: the server refuses the
    whole request of (up to 64) texts. The batch is sent again in halves down
    to that text, which alone is null with the reason (and an errors/ row) and
    is not asked again; the other rows score, and usage/ counts every request."""
    rows = _rule_rows()
    long_answer = " ".join(f"word{j}" for j in range(200))  # 260 tokens on the fake
    rows[5]["answer"] = long_answer
    with FakeOpenAI(ServerConfig(context_window=100, context_window_status=status)) as server:
        out = _answer_similarity_run(tmp_path, server, "long", rows)
        sent = [r for r in server.requests if r.path == "/v1/embeddings"]
    sims = {s["case_id"]: s for s in read_rows(out, "scores") if s["metric"] == "answer_similarity"}
    assert sims["c5"]["value"] is None
    assert "text over the embedding model's input limit" in sims["c5"]["error"]
    assert ("maximum context length is 100" if status == 400 else
            "must have less than 100 tokens") in sims["c5"]["error"]
    assert all(s["value"] is not None and s["error"] is None
               for c, s in sims.items() if c != "c5"), sims
    errors = [e for e in read_rows(out, "errors") if e["stage"] == "embedding"]
    assert [e["case_id"] for e in errors] == ["c5"]
    assert "over the embedding model's input limit" in errors[0]["message"]
    # the long text alone is asked once, never retried; every other text is embedded
    assert [r.json["input"] for r in sent].count([long_answer]) == 1
    embedded = {t for r in sent if r.status == 200 for t in r.json["input"]}
    assert long_answer not in embedded and len(embedded) == 12 + 11  # references, answers
    refused = [r for r in sent if r.status != 200]
    assert len(refused) > 1 and all(long_answer in r.json["input"] for r in refused)
    u = usage_totals(read_rows(out, "usage"), "endpoint", "model")[("emb", "m")]
    assert u["calls"] == len(sent) and u["failures"] == len(refused) and u["retries"] == 0
    assert manifest(out, "long")["reconciliation"]["ok"]


def test_a_tei_batch_limit_below_the_request_size_is_kept_not_fatal(tmp_path):
    """TEI's /v1/embeddings refuses more inputs than --max-client-batch-size (32
    by default; evalbeam sends up to 64) with 413 "batch size N > maximum
    allowed batch size M": every row of such a request lost its metrics. The
    request is sent again in batches of M, and M is kept for the later ones."""
    rows = _rule_rows()
    with FakeOpenAI(ServerConfig(embedding_max_batch=5)) as server:
        out = _answer_similarity_run(tmp_path, server, "batch", rows)
        sent = [r for r in server.requests if r.path == "/v1/embeddings"]
    sims = [s for s in read_rows(out, "scores") if s["metric"] == "answer_similarity"]
    assert len(sims) == 12 and all(s["value"] is not None for s in sims), sims
    assert not [e for e in read_rows(out, "errors") if e["stage"] == "embedding"]
    refused = [r for r in sent if r.status == 413]
    assert refused and all(len(r.json["input"]) > 5 for r in refused)
    assert all(len(r.json["input"]) <= 5 for r in sent if r.status == 200)
    u = usage_totals(read_rows(out, "usage"), "endpoint", "model")[("emb", "m")]
    assert u["calls"] == len(sent) and u["failures"] == len(refused)


def test_a_text_the_local_model_read_the_start_of_is_named_in_the_details(tmp_path):
    """MiniLM reads 256 tokens of a text ([CLS]/[SEP] included): a 2,000-word answer
    scored 0.9 on its first 200 words with nothing saying its end was never read.
    Now the details of answer_similarity, answer_relevance and bertscore name each
    text they compared that was cut ("answer: 659 tokens, read 254"); a short row's
    say nothing, and the values are the metrics' own on the same vectors."""
    from tokenizers import Tokenizer

    from transforms.enrich.embeddings.local_minilm import get_local_minilm, resolve_model_dir
    from transforms.score.metrics import coverage, semantic
    from transforms.text.sentences import answer_sentences
    question = "How long do refunds take?"
    long_answer = ", and ".join(f"order {i} is refunded within {i + 3} days" for i in range(60))
    long_reference = "Refunds take 30 days, " + ", ".join(f"store {i} pays" for i in range(90))
    rows = [{"case_id": "long", "question": question, "expected_answer": long_reference,
             "answer": long_answer + "."},
            {"case_id": "short", "question": question, "expected_answer": "Refunds take 30 days.",
             "answer": "Your refund arrives within 30 days."}]
    code, out = run_sample(tmp_path, "metrics: [answer_similarity, answer_relevance, bertscore]\n",
                           "t", rows)
    assert code == 0 and manifest(out, "t")["reconciliation"]["ok"]
    scores = {(s["case_id"], s["metric"]): s for s in read_rows(out, "scores")}

    whole = Tokenizer.from_file(str(resolve_model_dir() / "tokenizer.json"))
    whole.no_truncation()
    count = lambda text: len(whole.encode(text, add_special_tokens=False).ids)  # noqa: E731
    n_answer, n_reference = count(long_answer + "."), count(long_reference)
    (sentence,) = answer_sentences(long_answer + ".")
    assert min(n_answer, n_reference, count(sentence)) > 300  # well over the 254 read
    want = {"answer_similarity": f"answer: {n_answer} tokens, read 254; "
                                 f"reference: {n_reference} tokens, read 254",
            "bertscore": f"answer: {n_answer} tokens, read 254; "
                         f"reference: {n_reference} tokens, read 254",
            "answer_relevance": f"sentence 1: {count(sentence)} tokens, read 254"}
    for metric, said in want.items():
        assert json.loads(scores["long", metric]["details"])["truncated"] == said, metric
        assert "truncated" not in json.loads(scores["short", metric]["details"]), metric

    minilm = get_local_minilm()  # the values: the metrics' own on the model's vectors
    for row in rows:
        answer, ref = row["answer"], row["expected_answer"]
        a, r = minilm.embed([answer, ref])
        cand, ref_tv = minilm.embed_tokens([answer, ref], special_tokens=True)
        sentences = answer_sentences(answer)
        q, *s_vecs = minilm.embed([question, *sentences])
        expected = {
            "answer_similarity": semantic.answer_similarity(r, a).value,
            "bertscore": semantic.bertscore(ref_tv.tokens, ref_tv.vectors, cand.tokens,
                                            cand.vectors).value,
            "answer_relevance": semantic.answer_relevance(
                q, np.array(s_vecs), len(sentences), coverage.novelty(question, answer)).value}
        for metric, value in expected.items():
            assert scores[row["case_id"], metric]["value"] == pytest.approx(value, abs=1e-5), \
                (row["case_id"], metric)
