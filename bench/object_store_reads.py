"""What reading a finished run costs on an object store (gs://, s3://): the
requests each reader makes per file the run's completion marker lists, and
the time the same readers take on a local folder.

    python bench/object_store_reads.py [--bots 40] [--work DIR] [--repeat 10]

One real run (`python -m pipeline run`, --bots precomputed bots over 6 cases:
one results/ and one scores/ file per bot, 2 N + 3 listed files) is made once
under --work and copied under a second run id (for compare). Its folder is
served by the fake object store of the tests (tests/fake_object_store.py: a
server on 127.0.0.1 answering HEAD, ranged GET and LIST, and a Beam
filesystem for it made as Beam's S3 and GCS ones are), and each reader reads
the run there, in this process: status, read_run(...).results()/.scores()
.to_pandas(), calibrate and compare; then the viewer's runs list, loaded twice.
The server counts the requests by kind.
Then the same readers on the local folder, best of --repeat (CPU seconds).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.viewer_runs_list import copy_run  # noqa: E402
from tests.fake_object_store import ObjectStore  # noqa: E402

ROWS = [{"case_id": f"c{i}", "question": f"Question {i} about refunds?",
         "expected_answer": "Refunds take 30 days.",
         "answer": f"Refunds take {30 if i % 2 else i} days.",
         "label": "PASS" if i % 2 else "FAIL"} for i in range(6)]


def make_run(work: str, bots: int) -> str:
    """The run `big` (and its copy `big2`) under work/out (made once)."""
    out = os.path.join(work, "out")
    if not os.path.exists(os.path.join(out, "runs", "big", "manifest.json")):
        run_pipeline(work, out, bots)
    if not os.path.exists(os.path.join(out, "runs", "big2", "manifest.json")):
        copy_run_as(out, "big", "big2")
    return out


def run_pipeline(work: str, out: str, bots: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    os.makedirs(work, exist_ok=True)
    cases, config = os.path.join(work, "cases.parquet"), os.path.join(work, "bots.yaml")
    pq.write_table(pa.Table.from_pylist(ROWS), cases)
    with open(config, "w", encoding="utf-8") as fh:
        fh.write("bots:\n" + "".join(f"  - {{name: b{i:03d}, type: precomputed}}\n"
                                     for i in range(bots)))
    subprocess.run([sys.executable, "-m", "pipeline", "run", "--input", cases, "--output", out,
                    "--config", config, "--run-id", "big", "--run-date", "2026-11-27"],
                   cwd=ROOT, check=True, capture_output=True)


def copy_run_as(out: str, run_id: str, new: str) -> None:
    """copy_run reads its seed as run id 'seed'; the seed here is `run_id`."""
    seed = os.path.join(os.path.dirname(out), "seed")
    os.makedirs(os.path.join(seed, "runs"), exist_ok=True)
    with open(os.path.join(out, "runs", run_id, "manifest.json"), encoding="utf-8") as fh:
        manifest = json.load(fh)
    attempt = manifest["attempt"]
    files = {}
    for table, paths in manifest["files"].items():
        files[table] = []
        for path in paths:
            name = path.replace(f"part-{run_id}.", "part-seed.")
            os.makedirs(os.path.dirname(os.path.join(seed, name)), exist_ok=True)
            if not os.path.exists(os.path.join(seed, name)):
                os.link(os.path.join(out, path), os.path.join(seed, name))
            files[table].append(name)
    manifest.update(run_id="seed", files=files, attempt=attempt)
    os.makedirs(os.path.join(seed, "runs", "seed"), exist_ok=True)
    with open(os.path.join(seed, "runs", "seed", "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh)
    copy_run(seed, out, new, manifest["run_date"])


def readers(output: str, bot: str) -> dict:
    """Each reader of a run: (its function, the tables whose files it reads, of
    how many runs: compare reads big2's too)."""
    import evalbeam
    from pipeline.cli import run

    def cli(*argv):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = run(list(argv))
        assert code == 0, (argv, code)

    def read_run():
        result = evalbeam.read_run(output, "big")
        result.results().to_pandas()
        result.scores().to_pandas()

    return {
        "status": (lambda: cli("status", "--output", output, "--run-id", "big"), None, 1),
        "read_run .to_pandas()": (read_run, ("results", "scores"), 1),
        "calibrate": (lambda: cli("calibrate", "--output", output, "--run-id", "big",
                                  "--bot", bot), None, 1),
        "compare": (lambda: cli("compare", "--output", output, "--baseline", "big2",
                                "--candidate", "big"), ("results", "scores"), 2),
    }


def listed(output: str, tables) -> int:
    with open(os.path.join(output, "runs", "big", "manifest.json"), encoding="utf-8") as fh:
        files = json.load(fh)["files"]
    return sum(len(v) for t, v in files.items() if tables is None or t in tables)


def measure_store(output: str) -> dict:
    """Requests per listed file of each reader, by kind, at the fake object store."""
    figures = {}
    with ObjectStore(output) as store:
        for name, (read, tables, runs) in readers(store.url, "b000").items():
            store.reset()
            read()
            got = store.counts()
            n = listed(output, tables) * runs
            kinds = {k: v for k, v in sorted(got.items()) if k != "bytes"}
            figures[name] = dict(files=n, requests=sum(kinds.values()), **kinds,
                                 per_file=round(sum(kinds.values()) / n, 2),
                                 bytes=got.get("bytes", 0))
    return figures


def measure_view(output: str) -> dict:
    """Requests of the viewer's runs list (its 2 runs, big and big2) at the
    fake object store: its first load and the load after it, nothing changed."""
    from pipeline.viewer.data import Catalog
    figures = {}
    with ObjectStore(output) as store:
        catalog = Catalog(store.url, prefetch=False)
        try:
            for load in ("first load", "reload"):
                store.reset()
                finished, problems = catalog.runs()
                assert len(finished) == 2 and not problems, problems
                figures[load] = {k: v for k, v in sorted(store.counts().items())}
        finally:
            catalog.close()
    return figures


def measure_local(output: str, repeat: int) -> dict:
    figures = {}
    for name, (read, _, _) in readers(output, "b000").items():
        best = []
        for _ in range(repeat):
            start = time.process_time()
            read()
            best.append(time.process_time() - start)
        figures[name] = round(min(best), 3)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bots", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--work", default=os.path.join(ROOT, "bench", "data", "object_store"))
    args = ap.parse_args()
    output = make_run(os.path.join(args.work, f"bots{args.bots}"), args.bots)
    print(f"run 'big': {listed(output, None)} listed files ({output})")
    print("object store (tests/fake_object_store.py): requests per reader")
    for name, f in measure_store(output).items():
        kinds = " ".join(f"{k} {v}" for k, v in f.items()
                         if k not in ("files", "requests", "per_file", "bytes"))
        print(f"  {name:24s} {f['requests']:5d} requests over {f['files']:3d} files = "
              f"{f['per_file']:5.2f} per file ({kinds}; {f['bytes']:,d} bytes)")
    print("object store: the viewer's runs list (2 runs), requests per load")
    for load, got in measure_view(output).items():
        kinds = " ".join(f"{k} {v}" for k, v in got.items() if k != "bytes")
        print(f"  {load:24s} {sum(v for k, v in got.items() if k != 'bytes'):5d} requests "
              f"({kinds}; {got.get('bytes', 0):,d} bytes)")
    print(f"local folder: CPU seconds, best of {args.repeat}")
    for name, took in measure_local(output, args.repeat).items():
        print(f"  {name:24s} {took:.3f} s")


if __name__ == "__main__":
    main()
