"""cProfile of the evalbeam pipeline in in_memory mode (one process, so every
DoFn runs on the profiled thread).

    python bench/profile_pipeline.py --input CASES.parquet [--out /tmp/p.prof] [--top 30]
                                     [-- extra pipeline/Beam args]

`python -m cProfile -m pipeline run ...` does not work: the CLI leaves through
os._exit, before cProfile writes its file. This calls pipeline.cli.run()
instead, then prints the top functions by cumulative and by own time, and the
own time grouped by where the code lives (evalbeam metrics, Beam, pyarrow...).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def _bucket(filename: str, func: str) -> str:
    f = filename.replace("\\", "/")
    if "/transforms/metrics/" in f:
        return "evalbeam metrics: " + f.rsplit("/", 1)[-1]
    for part in ("/transforms/", "/schemas/", "/pipeline/"):
        if part in f and "site-packages" not in f:
            return "evalbeam " + part.strip("/") + ": " + f.rsplit("/", 1)[-1]
    if "apache_beam" in f:
        sub = f.split("apache_beam/", 1)[1].split("/")
        return "apache_beam/" + "/".join(sub[:2])
    for lib in ("pyarrow", "sacrebleu", "rouge_score", "nltk", "grpc", "numpy", "dill",
                "cloudpickle"):
        if f"/{lib}/" in f:
            return lib
    if f == "~":
        name = func.strip("<>")
        if name.startswith("method '") and "re.Pattern" in name:
            return "builtin: re (regex engine)"
        return "builtin: " + name.split(" of ")[0][:60]
    if "/lib/python3" in f:
        return "stdlib: " + f.rsplit("/", 1)[-1]
    return f


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", default="/tmp/evalbeam_profile_out")
    ap.add_argument("--config", default=str(BENCH / "config_deterministic.yaml"))
    ap.add_argument("--out", default="/tmp/evalbeam_pipeline.prof")
    ap.add_argument("--top", type=int, default=30)
    args, extra = ap.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    shutil.rmtree(args.output, ignore_errors=True)
    sys.path.insert(0, str(ROOT))
    from pipeline.cli import run

    argv_run = ["run", "--input", args.input, "--output", args.output, "--config", args.config,
                "--run-id", "profile", "--direct_running_mode=in_memory", *extra]
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    code = run(argv_run)
    prof.disable()
    wall = time.perf_counter() - t0
    prof.dump_stats(args.out)
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    print(f"pipeline exit code {code}, {wall:.1f} s under cProfile; stats in {args.out}")
    st.sort_stats("cumulative").print_stats(args.top)
    st.sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())
    total = sum(v[2] for v in st.stats.values())
    buckets: dict[str, float] = defaultdict(float)
    for (filename, _, func), (_, _, tt, _, _) in st.stats.items():
        buckets[_bucket(filename, func)] += tt
    print(f"own time by location (total {total:.1f} s):")
    for name, tt in sorted(buckets.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {tt:8.2f} s  {100 * tt / total:5.1f}%  {name}")
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
