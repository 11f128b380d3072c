"""Benchmark: judge calls per row and rows/s at a fixed request limit, evalbeam vs Ragas.

    python bench/judge_calls.py [--rows 100] [--rps 20] [--latency 0.05]
                                [--ragas-python /tmp/ragas-venv/bin/python]

Both sides run against tests/fake_server.py on 127.0.0.1 (latency --latency,
token-bucket limit --rps, 429 + Retry-After over it) over the same synthetic
rows (bench/ragas_judge_calls.make_rows: question, answer, reference and 3
retrieved contexts, some answers with a wrong fact).

evalbeam: the server runs in this process with the scripted judge of
tests/judge_script.py (it answers evalbeam's prompts); `python -m pipeline run`
runs in a child process (FnApiRunner, in memory) with the judge endpoint's
requests_per_second = --rps, embeddings local-free (`hashing`: answer
similarity needs no endpoint call). Runs:
  comparable  the metrics Ragas has: faithfulness, answer_correctness,
              context_recall, context_precision, context_entities_recall,
              noise_sensitivity and the ten safety critics (3 votes each);
  full        the same + the four rubric judges;
  rerun       `full` again on the same output folder: the call cache answers.
Calls/row = chat completions the server answered / rows; rows/s = rows /
seconds from the first to the last judge request the server saw (the judge
phase; Beam start-up is excluded, as Ragas' figure excludes its imports);
wall s is the whole command.

Ragas (with --ragas-python): bench/ragas_judge_calls.py with the same rows,
limit and latency (see its docstring for how Ragas is set up and counted).

Writes bench/results/judge_calls.json (+ .md).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from ragas_judge_calls import CHAT, EMB, make_rows, status_counts  # noqa: E402
from tests.fake_server import FakeOpenAI, ServerConfig  # noqa: E402
from tests.judge_script import ScriptedJudge  # noqa: E402

COMPARABLE = ["faithfulness", "answer_correctness", "context_recall", "context_precision",
              "context_entities_recall", "noise_sensitivity", "safety"]
FULL = COMPARABLE + ["judge_rubrics"]


def write_inputs(folder: Path, rows: int, contexts: int) -> Path:
    path = folder / "cases.parquet"
    data = make_rows(rows, contexts)
    for i, r in enumerate(data):
        r["case_id"] = f"case-{i:05d}"
    pq.write_table(pa.Table.from_pylist(data), path)
    return path


def write_config(folder: Path, base_url: str, rps: float, metrics: list[str]) -> Path:
    path = folder / f"config-{len(metrics)}.yaml"
    path.write_text(
        "input:\n  columns: {question: user_input, answer: response, expected_answer: reference,"
        " contexts: retrieved_contexts}\n"
        f"endpoints:\n  judge: {{base_url: '{base_url}', requests_per_second: {rps},"
        " max_concurrency: 16, max_attempts: 8}\n"
        "judge: {endpoint: judge, model: judge-model}\n"
        "embeddings: {provider: hashing}\n"
        f"metrics: [{', '.join(metrics)}]\n")
    return path


def run_ours(server: FakeOpenAI, judge: ScriptedJudge, label: str, cases: Path, config: Path,
             output: Path, rows: int) -> dict:
    server.reset_stats()
    judge.tasks.clear()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pipeline", "run", "--input", str(cases),
                           "--output", str(output), "--config", str(config),
                           "--run-id", label], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"run": label, "error": proc.stderr[-2000:]}
    counts = status_counts(server)
    times = [r.ts for r in server.recorded() if r.path == CHAT]
    window = (max(times) - min(times)) if len(times) > 1 else None
    usage = _usage(output, label)
    return {"run": label, "rows": rows, "chat_calls_per_row": counts[(CHAT, 200)] / rows,
            "chat_attempts_per_row": len(times) / rows,
            "http_429": counts[(CHAT, 429)],
            "embeddings_per_row": counts[(EMB, 200)] / rows,
            "judge_phase_s": round(window, 2) if window else None,
            "rows_per_s": round(rows / window, 3) if window else None,
            "wall_s": round(wall, 1), "tasks": dict(judge.tasks),
            "cache_hits": sum(u["cache_hits"] for u in usage),
            "null_judge_values": _nulls(output, label)}


def _usage(output: Path, run_id: str) -> list[dict]:
    import pyarrow.dataset as ds
    t = ds.dataset(output / "usage", format="parquet", partitioning="hive").to_table()
    return [u for u in t.to_pylist() if u["run_id"] == run_id]


def _nulls(output: Path, run_id: str) -> int:
    import pyarrow.dataset as ds
    t = ds.dataset(output / "scores", format="parquet", partitioning="hive").to_table()
    return sum(1 for s in t.to_pylist() if s["run_id"] == run_id and s["value"] is None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--contexts", type=int, default=3)
    ap.add_argument("--rps", type=float, default=20.0)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--ragas-python", help="python of the Ragas environment (optional)")
    ap.add_argument("--out", default=str(BENCH / "results" / "judge_calls.json"))
    args = ap.parse_args(argv)
    if args.ragas_python and not Path(args.ragas_python).exists():
        ap.error(f"{args.ragas_python} not found (see bench/ragas_judge_calls.py for the venv)")
    command = "python bench/judge_calls.py " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    runs = []
    with tempfile.TemporaryDirectory(prefix="judge-bench-") as tmp:
        folder = Path(tmp)
        cases = write_inputs(folder, args.rows, args.contexts)
        judge = ScriptedJudge()
        with FakeOpenAI(ServerConfig(latency_s=args.latency, rate_limit_rps=args.rps)) as server:
            server.set_chat_handler(judge)
            for label, metrics in (("comparable", COMPARABLE), ("full", FULL), ("rerun", FULL)):
                config = write_config(folder, server.openai_base_url, args.rps, metrics)
                out = folder / ("out-comparable" if label == "comparable" else "out-full")
                r = run_ours(server, judge, label, cases, config, out, args.rows)
                runs.append(r)
                print(f"  evalbeam {label}: {r.get('chat_calls_per_row')} calls/row, "
                      f"{r.get('rows_per_s')} rows/s, {r.get('http_429')} x 429, "
                      f"cache hits {r.get('cache_hits')}", file=sys.stderr, flush=True)
    ragas = None
    if args.ragas_python:
        import ragas_judge_calls
        ragas_out = Path(args.out).with_name("ragas_judge_calls.json")
        ragas_judge_calls.main(["--ragas-python", args.ragas_python, "--rows", str(args.rows),
                                "--contexts", str(args.contexts), "--rps", str(args.rps),
                                "--latency", str(args.latency), "--out", str(ragas_out)])
        ragas = json.loads(ragas_out.read_text())

    lines = [f"Command: `{command}`", "",
             f"{args.rows} rows x {args.contexts} contexts; loopback server {args.latency * 1000:g}"
             f" ms latency, {args.rps:g} req/s limit.", "",
             "| tool / run | judge calls per row | attempts per row | 429s | rows/s (judge "
             "phase) | wall s | null values | cache hits |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        if "error" in r:
            lines.append(f"| evalbeam {r['run']} | error | | | | | | |")
            continue
        lines.append(f"| evalbeam {r['run']} | {r['chat_calls_per_row']:g} | "
                     f"{r['chat_attempts_per_row']:g} | {r['http_429']} | {r['rows_per_s']} | "
                     f"{r['wall_s']} | {r['null_judge_values']} | {r['cache_hits']} |")
    if ragas:
        for key, label in (("whole_suite_no_limit", "no limit (count check)"),
                           ("whole_suite", f"at {args.rps:g} req/s")):
            s = ragas.get(key)
            if s and "error" not in s:
                lines.append(f"| Ragas {ragas['ragas_version']} suite {label} | "
                             f"{s['chat_calls_per_row']:g} (+{s['embeddings_per_row']:g} "
                             f"embeddings) | {s['chat_attempts_per_row']:g} | {s['http_429']} | "
                             f"{s['rows_per_s']} ({s.get('fully_scored_rows_per_s')} fully "
                             f"scored) | | {s['nan_cells']} NaN | |")
    text = "\n".join(lines + ["", "evalbeam tasks per run: " + "; ".join(
        f"{r['run']}: {r.get('tasks')}" for r in runs),
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}."])
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": command, "rows": args.rows, "rps": args.rps,
                               "latency_s": args.latency, "evalbeam": runs,
                               "ragas": ragas}, indent=2, default=str) + "\n")
    out.with_suffix(".md").write_text(text + "\n")
    return 0 if all("error" not in r for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
