"""Coverage of compare's 95% bootstrap interval of a paired delta, on
simulated paired scores with a known effect.

    python bench/interval_coverage.py [--simulations 400] [--cases 200] [--seeds 2024 1 2 3 4]

Each simulation draws n cases: baseline ~ Beta(4, 2), candidate = baseline +
0.03 + N(0, 0.15) clipped to [0, 1] (so the true delta, 0.0218, comes from
4,000,000 draws, not from the formula); an interval covers when it contains
the true delta. The goal is 93-97% of 400 simulations. The unit test
(tests/test_compare_stats.py) runs the first seed.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from transforms.publish.paired import bootstrap_intervals  # noqa: E402


def draw(rng: np.random.Generator, n: int) -> np.ndarray:
    base = rng.beta(4, 2, n)
    cand = np.clip(base + 0.03 + rng.normal(0, 0.15, n), 0, 1)
    return cand - base


def coverage(seed: int, simulations: int, cases: int, truth: float) -> float:
    rng = np.random.default_rng(seed)
    covered = 0
    for sim in range(simulations):
        lo, hi = bootstrap_intervals(draw(rng, cases)[:, None], resamples=1000, seed=sim)[0]
        covered += lo[0] <= truth <= hi[0]
    return covered / simulations


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--simulations", type=int, default=400)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seeds", type=int, nargs="+", default=[2024, 1, 2, 3, 4])
    args = ap.parse_args(argv)
    truth = float(draw(np.random.default_rng(99), 4_000_000).mean())
    print(f"true delta {truth:.4f}; {args.simulations} simulations of {args.cases} cases")
    results = []
    for seed in args.seeds:
        t0 = time.perf_counter()
        c = coverage(seed, args.simulations, args.cases, truth)
        results.append(c)
        print(f"seed {seed}: coverage {c:.2%} ({time.perf_counter() - t0:.1f} s)")
    print(f"all seeds: {np.mean(results):.2%} of {len(results) * args.simulations} "
          f"simulations; goal 93-97% per 400: "
          f"{'met' if all(0.93 <= c <= 0.97 for c in results) else 'NOT met'} for every seed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
