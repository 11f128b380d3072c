"""The float32 speed changes of the local MiniLM (issue 26 item 1) keep every
semantic metric's value: against tests/fixtures/minilm_f32_snapshot.json,
written by the code before them (tests/fixtures/make_minilm_f32_snapshot.py
on a `git archive` of main 1104ba3), every cosine and BERTScore value within 1e-6.
Also: attention by length equals per-text attention in float64, and a worker
process of a multi-process run keeps to its share of the cores."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.test_embeddings_local import needs_model

SNAPSHOT = os.path.join(ROOT, "tests", "fixtures", "minilm_f32_snapshot.json")
TOLERANCE = 1e-6


@needs_model
def test_semantic_values_equal_the_snapshot_of_the_code_before():
    sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))
    try:
        from make_minilm_f32_snapshot import snapshot
    finally:
        sys.path.pop(0)
    with open(SNAPSHOT, encoding="utf-8") as f:
        before = json.load(f)
    from transforms.enrich.embeddings.local_minilm import get_local_minilm
    now = snapshot(Path(ROOT), get_local_minilm())  # the process's one instance
    assert len(now["cases"]) == len(before["cases"]) >= 70
    worst = 0.0
    for a, b in zip(before["cases"], now["cases"]):
        assert (a["question"], a["answer"]) == (b["question"], b["answer"])
        assert len(a["relevance"]) == len(b["relevance"])
        for x, y in zip([a["cosine"], *a["bertscore"], *a["relevance"]],
                        [b["cosine"], *b["bertscore"], *b["relevance"]]):
            worst = max(worst, abs(x - y))
    assert worst <= TOLERANCE, worst
    heads = [(np.array(v), np.array(now["head"][t])) for t, v in before["head"].items()]
    assert len(heads) > 300
    assert max(float(np.abs(x - y).max()) for x, y in heads) <= TOLERANCE


def _reference_attention(qkv: np.ndarray, lens, heads: int) -> np.ndarray:
    """Plain per-text softmax attention in float64 (no padding, no grouping)."""
    dim = qkv.shape[1] // 3
    hd = dim // heads
    out, start = [], 0
    for n in lens:
        q, k, v = qkv[start:start + n].astype(np.float64).reshape(n, 3, heads, hd) \
            .transpose(1, 2, 0, 3)
        s = q @ k.transpose(0, 2, 1)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        out.append((s @ v).transpose(1, 0, 2).reshape(n, dim))
        start += n
    return np.concatenate(out)


def test_attention_by_length_equals_per_text_attention():
    from transforms.enrich.embeddings import local_minilm as lm
    model = lm.LocalMiniLM.__new__(lm.LocalMiniLM)
    model.heads, model.head_dim = 12, 32
    # sorted as batches are; runs of one length, one long enough to be split
    # into cache-sized pieces (30 x 20 tokens), single texts and a 1-token text
    lens = [120, 70, 70, 33] + [20] * 30 + [9, 9, 1]
    packed = lm._Packed(lens)
    assert [(n, c) for _, n, c in packed.groups] == [(120, 1), (70, 2), (33, 1), (20, 30),
                                                     (9, 2), (1, 1)]
    # the model's scale: the query carries 1/sqrt(head_dim), scores of a few units
    qkv = (np.random.default_rng(0).standard_normal((sum(lens), 3 * 384)) / 4).astype(np.float32)
    got = model._attention(qkv, packed)
    assert got.dtype == np.float32 and got.shape == (sum(lens), 384)
    assert np.abs(got - _reference_attention(qkv, lens, 12)).max() < 1e-6


def test_worker_cores_is_set_only_for_local_worker_processes():
    from apache_beam.options.pipeline_options import PipelineOptions
    from pipeline.plan import worker_cores
    cores = len(os.sched_getaffinity(0))
    assert worker_cores(PipelineOptions(["--runner=FnApiRunner"])) is None
    assert worker_cores(PipelineOptions(["--direct_running_mode=in_memory"])) is None
    mp = ["--direct_running_mode=multi_processing"]
    assert worker_cores(PipelineOptions(mp + ["--direct_num_workers=2"])) == max(1, cores // 2)
    assert worker_cores(PipelineOptions(mp + ["--direct_num_workers=64"])) == 1
    assert worker_cores(PipelineOptions(mp + ["--direct_num_workers=1"])) == cores


def _in_child(code: str, *unset: str) -> str:
    """The stdout of `code` run by a fresh interpreter without the thread limits
    OPENBLAS_NUM_THREADS (and `unset`) that this process may carry."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", *unset)}
    assert not set(unset) & set(env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=True).stdout


def test_use_cores_limits_blas_and_embedder_threads_of_the_process():
    # in a child process: the limit is process-wide and is never lifted
    code = (
        "from threadpoolctl import threadpool_info\n"
        "from transforms.enrich.embeddings import local_minilm as lm\n"
        "lm.use_cores(1)\n"
        "with lm._blas_threads(1):\n"
        "    pass\n"
        "print(sorted({i['num_threads'] for i in threadpool_info() "
        "if i['user_api'] == 'blas'}), lm._default_workers())\n")
    out = _in_child(code, "EVALBEAM_EMBED_WORKERS").split()
    assert out == ["[1]", "1"], out


def test_blas_threads_limits_inside_and_restores_after():
    # in a child process: a two-core default is what the limit is measured against
    code = (
        "from threadpoolctl import threadpool_info\n"
        "from transforms.enrich.embeddings.blas import blas_threads\n"
        "def n(): return sorted({i['num_threads'] for i in threadpool_info() "
        "if i['user_api'] == 'blas'})\n"
        "import numpy\n"
        "before = n()\n"
        "with blas_threads(1):\n"
        "    with blas_threads(1):\n"
        "        inner = n()\n"
        "    still = n()\n"
        "print(before == n(), inner, still)\n")
    out = _in_child(code).strip().split(maxsplit=1)
    assert out == ["True", "[1] [1]"], out


def test_the_graph_gives_embed_turns_the_worker_cores_and_setup_applies_them():
    # in a child process: EmbedTurns built as pipeline.graph builds it for a
    # two-worker multi_processing run, then set up as a worker would
    code = (
        "import apache_beam as beam\n"
        "from apache_beam.options.pipeline_options import PipelineOptions\n"
        "from threadpoolctl import threadpool_info\n"
        "from pipeline.config import EmbeddingsConfig\n"
        "from pipeline.plan import worker_cores\n"
        "from transforms.enrich.embed import EmbedTurns, VEC_EXPECTED\n"
        "p = beam.Pipeline(options=PipelineOptions(['--direct_running_mode=multi_processing',"
        " '--direct_num_workers=64']))\n"
        "dofn = EmbedTurns(EmbeddingsConfig('hashing'), {}, frozenset({VEC_EXPECTED}),"
        " cores=worker_cores(p.options))\n"
        "dofn.setup()\n"
        "print(dofn._cores, sorted({i['num_threads'] for i in threadpool_info()"
        " if i['user_api'] == 'blas'}))\n")
    out = _in_child(code).strip()
    assert out == "1 [1]", out
    with open(os.path.join(ROOT, "pipeline", "graph.py"), encoding="utf-8") as f:
        assert "cores=worker_cores(turns.pipeline.options)" in f.read()
