"""Benchmark: how much of a small run's wall time is Beam's own fixed cost.

    python bench/beam_floor.py [--rows 30] [--runs 5]

Issue 13 asks a 30-row run (default config) to finish in <= 2.5 s. This
measures, each as a fresh subprocess from start to exit, `--runs` times,
alternating:

1. `import`: `python -c "import apache_beam, pyarrow.parquet, numpy"`;
2. `empty graph`: a Beam pipeline of the same shape as evalbeam's for the
   same input (the same number of primitive transforms, of them GroupByKeys,
   and of Create/Impulse roots; counted from evalbeam's own pipeline proto),
   whose every DoFn passes its element on and does nothing else, run on the
   same in-process FnApiRunner over `--rows` elements;
3. `evalbeam`: `python -m pipeline run` on the first `--rows` rows of the
   bundled example (default config), as bench/startup.py does.

(2) is the floor of a Beam pipeline of that size on this machine: what
evalbeam cannot go below while it is one Beam pipeline run locally.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.startup import env_for, make_input  # noqa: E402

GBK = "beam:transform:group_by_key:v1"
ROOTS = ("beam:transform:impulse:v1",)

EMPTY_GRAPH = r'''
import sys
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
leaves, shuffles, rows = (int(a) for a in sys.argv[1:4])
with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
    data = p | "Create" >> beam.Create([{"case_id": str(i)} for i in range(rows)], reshuffle=False)
    done = 2  # Create's own primitives (impulse and its read)
    keyed = data
    for g in range(shuffles):  # a chain of shuffles, as publish's counts and summaries
        keyed = (keyed | f"Key{g}" >> beam.Map(lambda r: (r["case_id"] if isinstance(r, dict)
                                                          else str(r), r))
                 | f"Group{g}" >> beam.GroupByKey() | f"Take{g}" >> beam.MapTuple(lambda k, v: k))
        done += 3
    for i in range(max(0, leaves - done)):  # the per-stage DoFns, fanned out of the input
        data | f"Step{i}" >> beam.Map(lambda r: r)
'''


def shape(input_path: str, out: str) -> tuple[int, int]:
    """(primitive transforms, GroupByKeys) of evalbeam's pipeline for this input."""
    import apache_beam as beam
    from pipeline import cli
    from pipeline.execute import beam_options
    from pipeline.graph import build_pipeline
    args, beam_args = cli._parser().parse_known_args(
        ["run", "--input", input_path, "--output", out, "--run-id", "shape",
         "--run-date", "2024-01-01"])
    options = beam_options(beam_args)
    plan = cli.make_plan(args, options)
    p = beam.Pipeline(options=options)
    build_pipeline(p, plan)
    proto = p.to_runner_api()
    leaves = [t for t in proto.components.transforms.values() if not t.subtransforms]
    return len(leaves), sum(t.spec.urn == GBK for t in leaves)


def timed(cmd: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env_for(ROOT))
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=30)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        inp = make_input(a.rows, tmp)
        leaves, shuffles = shape(inp, os.path.join(tmp, "shape"))
        print(f"evalbeam's pipeline for {a.rows} rows: {leaves} primitive transforms, "
              f"{shuffles} GroupByKeys")
        commands = {
            "import": [sys.executable, "-c", "import apache_beam, pyarrow.parquet, numpy"],
            "empty graph": [sys.executable, "-c", EMPTY_GRAPH, str(leaves), str(shuffles),
                            str(a.rows)],
        }
        times: dict[str, list[float]] = {name: [] for name in (*commands, "evalbeam")}
        for name, cmd in commands.items():  # warm-up: the file cache
            timed(cmd, tmp)
        for run in range(a.runs + 1):
            for name, cmd in commands.items():
                if run:
                    times[name].append(timed(cmd, tmp))
            out = os.path.join(tmp, f"out{run}")
            t = timed([sys.executable, "-m", "pipeline", "run", "--input", inp, "--output", out,
                       "--run-id", f"floor{run}", "--run-date", "2024-01-01"], str(ROOT))
            if run:  # the first is a warm-up
                times["evalbeam"].append(t)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print("| what | wall min s | wall median s |")
    print("|---|---:|---:|")
    for name, ts in times.items():
        print(f"| {name} | {min(ts):.2f} | {statistics.median(ts):.2f} |")


if __name__ == "__main__":
    main()
