"""Profile of the semantic path, without Beam: where the CPU time of a row goes.

    python bench/profile_semantic.py [--rows 2000] [--batch 64] [--threads 1]

Reads the first --rows synthetic cases (bench/make_synthetic.py, as
bench/semantic_pipeline.py does), answers them with the recorded answer, and
runs the pipeline's own EmbedTurns DoFn over batches of --batch turns (as
BatchElements hands them over), then the three semantic scorers. The local
MiniLM's tokeniser and forward pass are timed by wrapping them; CPU seconds
(process time) are reported per stage and per row, with the number of texts
and tokens that went through the forward pass for each kind of text and the
cache hit rates. --threads sets the embedder's worker threads (1: the CPU
seconds of each stage are not blurred by thread overlap).

Writes bench/results/profile_semantic.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _turns(path: Path, rows: int):
    import pyarrow.parquet as pq
    from schemas.records import EvalCase, Turn
    table = pq.read_table(path).slice(0, rows).to_pylist()
    return [Turn(EvalCase(r["case_id"], r["question"], r["expected_answer"], r["contexts"],
                          r["answer"], r["suite"], r["tags"] or []), "recorded", r["answer"])
            for r in table]


class _Clock:
    """CPU seconds per label, accumulated by wrapping functions (not re-entrant per label)."""

    def __init__(self):
        self.cpu = defaultdict(float)
        self.calls = Counter()

    def wrap(self, label: str, fn):
        def timed(*a, **k):
            t0 = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                self.cpu[label] += time.process_time() - t0
                self.calls[label] += 1
        return timed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--config", default=str(Path(__file__).with_name("config_semantic.yaml")))
    args = ap.parse_args(argv)
    os.environ["EVALBEAM_EMBED_WORKERS"] = str(args.threads)

    import run_deterministic as rd
    from pipeline.config import load_config
    from transforms.enrich import embed as embed_mod
    from transforms.enrich.embeddings import local_minilm as lm
    from transforms.score import scoring

    clock = _Clock()
    t0 = time.process_time()
    model = lm.get_local_minilm()
    load_s = time.process_time() - t0
    texts_by_kind, tokens_by_kind, padded_by_kind = Counter(), Counter(), Counter()

    encode = model._encode
    model._encode = clock.wrap("tokenise", encode)
    forward = model._forward

    def forward_counted(ids, lens):
        kind = _KIND[0]
        texts_by_kind[kind] += len(lens)
        tokens_by_kind[kind] += int(sum(lens))
        padded_by_kind[kind] += int(ids.size)
        return clock.wrap(f"forward ({kind})", forward)(ids, lens)
    model._forward = forward_counted
    _KIND = ["?"]
    embed_tokens, embed_vec = model.embed_tokens, model.embed

    def tok_kind(*a, **k):
        _KIND[0] = "token vectors: expected + answer"
        return embed_tokens(*a, **k)

    def vec_kind(*a, **k):
        _KIND[0] = "sentence vectors: question + answer sentences"
        return embed_vec(*a, **k)
    model.embed_tokens, model.embed = tok_kind, vec_kind
    embed_mod.split_sentences = clock.wrap("split_sentences", embed_mod.split_sentences)

    cfg = load_config(args.config)
    scorers = [s for s in scoring.SCORERS if s.features]
    needs = frozenset(f for s in scorers for f in s.features)
    dofn = embed_mod.EmbedTurns(cfg.embeddings, cfg.endpoints, needs)
    dofn.setup()
    path = rd.input_file(args.rows, 0)
    turns = _turns(path, args.rows)

    t0, w0 = time.process_time(), time.perf_counter()
    enriched = []
    for i in range(0, len(turns), args.batch):
        enriched.extend(clock.wrap("EmbedTurns.process (total)",
                                   lambda b: list(dofn.process(b)))(turns[i:i + args.batch]))
    embed_cpu, embed_wall = time.process_time() - t0, time.perf_counter() - w0
    for s in scorers:
        opts = dict(s.option_defaults)
        run = clock.wrap(f"Score[{s.name}]", scoring.score_turn)
        for t in enriched:
            run(s, opts, t)
    cache = dofn._embedder
    n = len(turns)
    report = {
        "rows": n, "batch": args.batch, "threads": args.threads, "model_load_cpu_s": load_s,
        "embed_cpu_s": embed_cpu, "embed_wall_s": embed_wall,
        "cpu_ms_per_row": {k: round(1000 * v / n, 3) for k, v in sorted(clock.cpu.items())},
        "texts_forwarded": dict(texts_by_kind), "tokens_forwarded": dict(tokens_by_kind),
        "padded_tokens_forwarded": dict(padded_by_kind),
        "tokens_per_row": {k: round(v / n, 1) for k, v in tokens_by_kind.items()},
        "cache": {"vector_hits": cache.hits, "vector_misses": cache.misses,
                  "token_hits": cache.token_hits},
    }
    publish(report, "profile_semantic.json")
    return 0


def publish(report: dict, name: str) -> None:
    """Print the report and write it to bench/results/<name>."""
    import run_deterministic as rd
    print(json.dumps(report, indent=2))
    rd.RESULTS.mkdir(parents=True, exist_ok=True)
    (rd.RESULTS / name).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
