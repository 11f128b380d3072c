"""How fast `evalbeam view`'s runs list answers on a folder of many runs (a
nightly job over years): the first load, and the loads after it.

    python bench/viewer_runs_list.py [--runs 300] [--repeat 5] [--work DIR]

One real run (`python -m pipeline run` on the bundled example's first 20 rows,
the deterministic suite) is copied under N new run ids, each with its own
attempt id and run date: every listed Parquet file is rewritten with the new
run id in its rows and its name, and the completion marker lists the copies,
as the pipeline's own commit would. The viewer then runs in this process and
the runs list (/) is fetched over HTTP on 127.0.0.1: once, then `--repeat`
times. The Parquet footers and the completion markers (manifest.json) the
list reads on each load are counted.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.viewer_speed import cpu_s, fetch  # noqa: E402

EXAMPLE = os.path.join(ROOT, "examples", "support", "cases.parquet")
CONFIG = os.path.join(ROOT, "bench", "config_deterministic.yaml")


def seed_run(work: str) -> str:
    """One real run in work/seed (made once): its output folder."""
    seed = os.path.join(work, "seed")
    if not os.path.exists(os.path.join(seed, "runs", "seed", "manifest.json")):
        os.makedirs(work, exist_ok=True)
        cases = os.path.join(work, "cases.parquet")
        pq.write_table(pq.read_table(EXAMPLE).slice(0, 20), cases)
        subprocess.run([sys.executable, "-m", "pipeline", "run", "--input", cases, "--output",
                        seed, "--config", CONFIG, "--run-id", "seed"], cwd=ROOT, check=True,
                       capture_output=True)
    return seed


def copy_run(seed: str, output: str, run_id: str, run_date: str) -> None:
    """The seed run under another run id, attempt and run date (files first,
    its marker last)."""
    with open(os.path.join(seed, "runs", "seed", "manifest.json"), encoding="utf-8") as fh:
        manifest = json.load(fh)
    old, attempt = f"part-seed.{manifest['attempt']}.", uuid.uuid4().hex[:12]
    files: dict[str, list[str]] = {}
    for table, paths in manifest["files"].items():
        for path in paths:
            parts = path.split("/")
            parts[1] = f"run_date={run_date}"
            parts[-1] = f"part-{run_id}.{attempt}." + parts[-1][len(old):]
            data = pq.read_table(os.path.join(seed, path), partitioning=None)
            data = data.set_column(0, "run_id", pa.array([run_id] * data.num_rows,
                                                         data.schema.field("run_id").type))
            os.makedirs(os.path.join(output, *parts[:-1]), exist_ok=True)
            pq.write_table(data, os.path.join(output, *parts))
            files.setdefault(table, []).append("/".join(parts))
    manifest.update(run_id=run_id, run_date=run_date, attempt=attempt, output=output,
                    files=files, finished_at=f"{run_date}T03:00:00Z")
    os.makedirs(os.path.join(output, "runs", run_id), exist_ok=True)
    with open(os.path.join(output, "runs", run_id, "manifest.json"), "w",
              encoding="utf-8") as fh:
        json.dump(manifest, fh)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", default=os.path.join(ROOT, "bench", "data", "viewer_runs"))
    args = ap.parse_args()
    output = os.path.join(args.work, f"out{args.runs}")
    if not os.path.isdir(os.path.join(output, "runs")):
        seed = seed_run(args.work)
        start, day = time.perf_counter(), datetime.date(2026, 11, 28)
        for i in range(args.runs):
            copy_run(seed, output, f"nightly-{i:04d}", str(day - datetime.timedelta(days=i)))
        print(f"copied the seed run under {args.runs} run ids in "
              f"{time.perf_counter() - start:.0f} s")
    from pipeline.viewer.server import start_in_thread
    from transforms.publish import completed
    footers, reader = [0], completed._footer_rows
    markers, parser = [0], completed.parse_manifest

    def counted(tail) -> int:
        footers[0] += 1
        return reader(tail)

    def parsed(data: bytes, run_id: str, where: str) -> dict:
        markers[0] += 1
        return parser(data, run_id, where)

    completed._footer_rows, completed.parse_manifest = counted, parsed
    server = start_in_thread(output, 0)
    port = server.server_address[1]
    print(f"evalbeam view's runs list over {args.runs} runs ({output}); wall and CPU seconds "
          "(the server runs in this process)")
    for label in ["first load"] + [f"load {i + 2}" for i in range(args.repeat)]:
        footers[0] = markers[0] = 0
        status, took, used, size = fetch(port, "/")
        assert status == 200, (label, status)
        print(f"  {label:12s} {took:7.3f}s wall {used:7.3f}s cpu {footers[0]:6d} footers read "
              f"{markers[0]:6d} markers parsed {size:9,d} bytes")
    server.shutdown()


if __name__ == "__main__":
    main()
