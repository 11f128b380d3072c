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
    ap.add_argument("--keep-outputs", action="store_true")
    args = ap.parse_args(argv)
    runs = rd.quiet_pipeline_runs(
        [dict(path=rd.input_file(rows, 0), rows=rows, mode="multi_processing")
         for rows in (args.rows, args.memory_rows)], 300, args.keep_outputs)
    ratio = runs[1]["peak_rss_tree_mib"] / runs[0]["peak_rss_tree_mib"]
    ok = all(r["check"].get("ok") and r["returncode"] == 0 for r in runs)
    print(f"memory ratio {args.memory_rows:,} / {args.rows:,} rows: {ratio:.2f}x "
          f"(goal <= {rd.MEMORY_GOAL}x: {'met' if ratio <= rd.MEMORY_GOAL else 'NOT met'}; outputs "
          f"{'checked' if ok else 'NOT correct: ratio not valid'})")
    (rd.RESULTS / "memory_ratio.json").write_text(json.dumps(
        {"command": rd.command_line("memory_ratio.py", argv), "runs": runs, "ratio": ratio,
         "outputs_ok": ok}, indent=2, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
