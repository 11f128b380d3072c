"""Benchmark: end-to-end rows/s of the pipeline with the semantic metrics on.

    python bench/semantic_pipeline.py [--rows 10000] [--workers 2]

Runs `python -m pipeline run` (FnApiRunner, multi_processing, 2 workers) over
the synthetic cases of bench/make_synthetic.py twice, one after the other:
bench/config_deterministic.yaml (10 deterministic metrics) and
bench/config_semantic.yaml (the same + answer_similarity, bertscore and
answer_relevance on the local MiniLM embedder). Wall time, rows/s, CPU and
peak RSS of the process tree are measured as in bench/run_deterministic.py
(whose functions this reuses); outputs are read back and reconciled.
Writes bench/results/semantic_pipeline.json.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_deterministic as rd  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--wait-quiet", type=float, default=600)
    ap.add_argument("--keep-outputs", action="store_true")
    args = ap.parse_args(argv)
    path = rd.input_file(args.rows, 0)
    configs = (("-det", rd.CONFIG, rd.N_METRICS),
               ("-sem", rd.BENCH / "config_semantic.yaml", rd.N_METRICS + 3))
    runs = rd.quiet_pipeline_runs(
        [dict(path=path, rows=args.rows, mode="multi_processing", workers=args.workers,
              config=config, tag=tag, n_metrics=n) for tag, config, n in configs],
        args.wait_quiet, args.keep_outputs)
    for r, (_, config, _) in zip(runs, configs):
        r["config"] = config.name
    (rd.RESULTS / "semantic_pipeline.json").write_text(json.dumps(
        {"command": rd.command_line("semantic_pipeline.py", argv), "runs": runs},
        indent=2, default=str))
    return 0 if all(r["check"].get("ok") for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
