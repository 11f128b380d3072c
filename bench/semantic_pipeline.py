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
    args = ap.parse_args(argv)
    path = rd.input_file(args.rows, 0)
    runs = []
    for tag, config, n in (("-det", rd.CONFIG, rd.N_METRICS),
                           ("-sem", rd.BENCH / "config_semantic.yaml", rd.N_METRICS + 3)):
        rd.wait_quiet(args.wait_quiet)
        r = rd.run_pipeline(path, args.rows, "multi_processing", args.workers, config, tag, n)
        r["config"] = config.name
        print(f"{config.name}: {r['wall_s']:.0f} s, {args.rows / r['wall_s']:.0f} rows/s, "
              f"CPU {r['cpu_s']:.0f} s, peak RSS {r['peak_rss_tree_mib']:.0f} MiB, other load "
              f"{r['other_load_cores']:.2f}, check {r['check'].get('ok')}", flush=True)
        runs.append(r)
    (rd.RESULTS / "semantic_pipeline.json").write_text(json.dumps(
        {"command": "python bench/semantic_pipeline.py " + " ".join(argv or sys.argv[1:]),
         "runs": runs}, indent=2, default=str))
    return 0 if all(r["check"].get("ok") for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
