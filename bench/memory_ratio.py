"""Peak memory of the pipeline at 100,000 and 1,000,000 rows, side by side.

    python bench/memory_ratio.py [--rows 100000] [--memory-rows 1000000]

Both runs use multi_processing with 2 workers (the way the deterministic
benchmark runs); memory is the peak RSS summed over the process tree, as in
bench/run_deterministic.py (whose measuring and checking functions this reuses).
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
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--memory-rows", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    runs = []
    for rows in (args.rows, args.memory_rows):
        rd.wait_quiet(300)
        r = rd.run_pipeline(rd.input_file(rows, 0), rows, "multi_processing")
        print(f"{rows:,} rows: {r['wall_s']:.0f} s, {rows / r['wall_s']:.0f} rows/s, peak tree RSS {r['peak_rss_tree_mib']:.0f} MiB, other load {r['other_load_cores']:.2f}, check {r['check'].get('ok')}", flush=True)
        runs.append(r)
    ratio = runs[1]["peak_rss_tree_mib"] / runs[0]["peak_rss_tree_mib"]
    print(f"memory ratio {args.memory_rows:,} / {args.rows:,} rows: {ratio:.2f}x "
          f"(goal <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})")
    (rd.RESULTS / "memory_ratio.json").write_text(json.dumps(
        {"command": "python bench/memory_ratio.py " + " ".join(argv or sys.argv[1:]),
         "runs": runs, "ratio": ratio}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
