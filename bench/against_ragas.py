"""Benchmark: evalbeam against Ragas 0.4.3 on the same rows, runs interleaved (issue 26).

    python bench/against_ragas.py [--rows 2000 --rows 20000] [--rounds 2] [--full-rows 2000]
                                  [--startup-runs 3] [--ragas-venv bench/.ragas-venv]

Ragas runs under its own interpreter: the venv at --ragas-venv, which this
script makes (`python -m venv`, then `pip install` of RAGAS_PINS from the
package registry) when it is missing or lacks one of the pins' modules.

What runs, each as its own process, measured with bench/run_deterministic.py's
`measure` (wall time, CPU seconds and peak RSS of the whole process tree):

- **Shared metrics** (exact match, BLEU, ROUGE-1 and ROUGE-L F1), at every
  --rows size: evalbeam `--metrics exact_match,bleu,rouge1,rougeL` with
  `metric_options.rouge.use_stemmer: true` (Ragas always stems), once on the FnApiRunner's
  multi_processing mode with 2 workers (how a large input runs locally) and once
  in process (one core, as Ragas' evaluate runs); Ragas `evaluate` with
  ExactMatch, BleuScore and RougeScore (rouge1, rougeL).
- **The full suite**, at sizes up to --full-rows: evalbeam's built-in defaults
  (the recorded answers, every metric the inputs allow, the local MiniLM
  embedder; 2 workers) against Ragas' six metrics that need no model
  (bench/ragas_startup.py `nonllm`).
- **Start-up**: the first 30 rows of the bundled example (as bench/startup.py),
  evalbeam's default run and its four shared metrics, in process, against
  Ragas' four; --startup-runs runs each, median.

The inputs are bench/make_synthetic.py's rows (the bundled example's cases,
mutated; cached in bench/data/). Arms alternate within a size and their order
reverses from round to round, so the machine's load falls on all alike; one
untimed warm-up run of each arm on the start-up rows first compiles every arm's
modules into one temporary PYTHONPYCACHEPREFIX (bench/startup.py's reason).

Checked on every run: evalbeam's results hold one row per input row and the
manifest reconciles; Ragas wrote one value per row and metric. Values (last
round): evalbeam's shared metrics against Ragas' row by row. ROUGE-1 and ROUGE-L
must agree (the script exits 1 if they differ by more than 1e-9). Exact match
and BLEU are shown but differ by definition: evalbeam's exact match compares
the texts lower-cased with whitespace trimmed and collapsed, Ragas' compares
them as they are; Ragas' BLEU is sacrebleu's corpus BLEU over the answer's
". "-separated pieces, evalbeam's sacrebleu's sentence BLEU.

Writes bench/results/against_ragas.json and prints the Markdown tables of
BENCHMARKS.md ("Against Ragas").
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_deterministic as rd  # noqa: E402
import startup  # noqa: E402

RAGAS_PINS = ("ragas==0.4.3", "langchain<1", "langchain-core<1", "langchain-community<0.4",
              "langchain-openai<1", "sacrebleu==2.6.0", "rouge_score==0.1.2",
              "rapidfuzz==3.14.6", "pyarrow")
RAGAS_CHECK = "import ragas, sacrebleu, rouge_score, rapidfuzz, pyarrow; print(ragas.__version__)"
RAGAS_VERSION = "0.4.3"
SHARED = ("exact_match", "bleu", "rouge1", "rougeL")
RAGAS_NAMES = {"exact_match": "exact_match", "bleu": "bleu_score", "rouge1": "rouge1",
               "rougeL": "rougeL"}
MUST_AGREE = ("rouge1", "rougeL")
SHARED_CONFIG = "metric_options:\n  rouge: {use_stemmer: true}  # as Ragas' RougeScore always does\n"
TWO_WORKERS = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
STARTUP_ROWS = 30


def ragas_python(venv: Path) -> str:
    """Ragas' interpreter, the venv made or completed first when needed."""
    python = venv / "bin" / "python"

    def version() -> str | None:
        if not python.exists():
            return None
        proc = subprocess.run([str(python), "-c", RAGAS_CHECK], capture_output=True, text=True,
                              env={**os.environ, "RAGAS_DO_NOT_TRACK": "true"})
        return proc.stdout.strip() if proc.returncode == 0 else None

    if version() != RAGAS_VERSION:
        if not python.exists():
            print(f"making Ragas' venv: {venv}", flush=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        print(f"installing into it: {' '.join(RAGAS_PINS)}", flush=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *RAGAS_PINS], check=True)
        if version() != RAGAS_VERSION:
            raise SystemExit(f"{python} does not import Ragas {RAGAS_VERSION} and its metrics' "
                             "libraries after the install")
    return str(python)


@dataclass
class Arm:
    """One way of scoring the rows: a tool, its metrics and its runner."""
    label: str
    tool: str                     # "evalbeam" or "ragas"
    suite: str                    # "shared", "default" (evalbeam) or "nonllm" (Ragas)
    runner: list[str] = field(default_factory=list)

    def command(self, cases: Path, out: Path, env: "Env") -> list[str]:
        if self.tool == "ragas":
            return [env.ragas, str(rd.BENCH / "ragas_startup.py"), str(cases), str(out),
                    self.suite]
        cmd = [rd.PY, "-m", "pipeline", "run", "--input", str(cases), "--output", str(out),
               "--run-id", "vs-ragas", "--run-date", "2024-01-01", *self.runner]
        if self.suite == "shared":
            cmd += ["--metrics", ",".join(SHARED), "--config", str(env.shared_config)]
        return cmd


@dataclass
class Env:
    ragas: str
    shared_config: Path
    pycache: str

    def variables(self, arm: Arm) -> dict:
        """Every arm keeps its bytecode in one prefix, whatever the machine's
        PYTHONDONTWRITEBYTECODE says (empty = unset); evalbeam's arms import this
        checkout, Ragas' nothing of it."""
        env = {"PYTHONPYCACHEPREFIX": self.pycache, "PYTHONDONTWRITEBYTECODE": "",
               "RAGAS_DO_NOT_TRACK": "true"}
        env["PYTHONPATH"] = str(rd.ROOT) if arm.tool == "evalbeam" else ""
        return env


def arms_for(rows: int, full_rows: int) -> list[Arm]:
    if rows <= STARTUP_ROWS:
        return [Arm("evalbeam default suite, in process", "evalbeam", "default"),
                Arm("evalbeam 4 shared metrics, in process", "evalbeam", "shared"),
                Arm("Ragas 4 shared metrics", "ragas", "shared")]
    arms = [Arm("evalbeam 4 shared metrics, 2 workers", "evalbeam", "shared", TWO_WORKERS),
            Arm("evalbeam 4 shared metrics, in process", "evalbeam", "shared"),
            Arm("Ragas 4 shared metrics", "ragas", "shared")]
    if rows <= full_rows:
        arms += [Arm("evalbeam default suite, 2 workers", "evalbeam", "default", TWO_WORKERS),
                 Arm("Ragas 6 non-LLM metrics", "ragas", "nonllm")]
    return arms


def check(arm: Arm, out: Path, rows: int) -> dict:
    """Did the run score every row? evalbeam: results and manifest; Ragas: its values."""
    if arm.tool == "ragas":
        got = json.loads(out.read_text())
        n = {k: len(v) for k, v in got["values"].items()}
        return {"rows": got["rows"], "values": n,
                "ok": got["rows"] == rows and bool(n) and all(c == rows for c in n.values())}
    v = rd.verify_pipeline(out, rows, "vs-ragas",
                           len(SHARED) if arm.suite == "shared" else None)
    return {"results_rows": v["results_rows"], "scores_rows": v["scores_rows"],
            "reconciled": v["manifest_reconciled"],
            "ok": v["results_rows"] == rows and v["manifest_reconciled"]}


def evalbeam_values(out: Path) -> dict[str, dict[str, float | None]]:
    """{metric: {case_id: value}} of an evalbeam run's scores table."""
    import pyarrow.dataset as ds
    t = ds.dataset(str(out / "scores"), format="parquet", partitioning="hive").to_table(
        columns=["case_id", "metric", "value"]).to_pylist()
    by: dict[str, dict] = {}
    for r in t:
        by.setdefault(r["metric"], {})[r["case_id"]] = r["value"]
    return by


def value_agreement(ours: dict, ragas: dict) -> dict[str, dict]:
    """Per shared metric: rows compared (both non-null), max |difference|, rows
    where evalbeam is null (no answer or reference: Ragas scores "")."""
    out = {}
    for m in SHARED:
        a, b = ours.get(m, {}), ragas["values"].get(RAGAS_NAMES[m], {})
        both = [k for k in b if a.get(k) is not None]
        diffs = [abs(a[k] - b[k]) for k in both]
        out[m] = {"compared": len(both), "evalbeam_null": sum(1 for k in b if a.get(k) is None),
                  "max_abs_diff": max(diffs) if diffs else None,
                  "mean_evalbeam": statistics.fmean(a[k] for k in both) if both else None,
                  "mean_ragas": statistics.fmean(b[k] for k in both) if both else None}
    return out


def run_arm(arm: Arm, cases: Path, rows: int, env: Env, work: Path, tag: str) -> dict:
    out = work / ("ragas.json" if arm.tool == "ragas" else "out")
    if out.is_dir():
        shutil.rmtree(out)
    out.unlink(missing_ok=True)
    log = rd.LOGS / f"against_ragas-{tag}.log"
    m = rd.measure(arm.command(cases, out, env), log, cwd=rd.ROOT, env=env.variables(arm))
    if m["returncode"] != 0:
        raise SystemExit(f"{arm.label} on {rows:,} rows failed (exit {m['returncode']}); "
                         f"see {m['log']}")
    m["check"] = check(arm, out, rows)
    m["output"] = out
    return m


def inputs(sizes: list[int], work: Path) -> dict[int, Path]:
    paths = {}
    for rows in sizes:
        if rows <= STARTUP_ROWS:
            paths[rows] = Path(startup.make_input(rows, str(work)))
        else:
            paths[rows] = rd.input_file(rows, 0)
    return paths


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def summarise(label: str, rows: int, runs: list[dict]) -> dict:
    wall = median_of(runs, "wall_s")
    return {"arm": label, "rows": rows, "runs": len(runs), "wall_s": wall,
            "walls_s": [round(r["wall_s"], 2) for r in runs], "rows_per_s": rows / wall,
            "cpu_s": median_of(runs, "cpu_s"),
            "peak_rss_tree_mib": max(r["peak_rss_tree_mib"] for r in runs),
            "other_load_cores": max(r["other_load_cores"] for r in runs),
            "ok": all(r["check"]["ok"] for r in runs)}


PAIRS = (("evalbeam 4 shared metrics, 2 workers", "Ragas 4 shared metrics"),
         ("evalbeam 4 shared metrics, in process", "Ragas 4 shared metrics"),
         ("evalbeam default suite, 2 workers", "Ragas 6 non-LLM metrics"),
         ("evalbeam default suite, in process", "Ragas 4 shared metrics"))


def ratios(table: dict[str, dict]) -> list[tuple[str, float]]:
    """evalbeam's rows/s over Ragas' for the like-for-like pairs at one size."""
    return [(f"{ours} / {theirs}", table[ours]["rows_per_s"] / table[theirs]["rows_per_s"])
            for ours, theirs in PAIRS if ours in table and theirs in table]


def markdown(result: dict) -> str:
    lines = ["| rows | arm | wall s (median) | rows/s | CPU s | peak RSS MiB (tree) | "
             "other load (cores) | checked |", "|---:|---|---:|---:|---:|---:|---:|---|"]
    for size in result["sizes"]:
        for s in size["arms"]:
            lines.append(f"| {s['rows']:,} | {s['arm']} | {s['wall_s']:.2f} | "
                         f"{s['rows_per_s']:,.0f} | {s['cpu_s']:.1f} | "
                         f"{s['peak_rss_tree_mib']:,.0f} | {s['other_load_cores']:.2f} | "
                         f"{'yes' if s['ok'] else 'NO'} |")
    lines += ["", "| rows | evalbeam / Ragas | rows/s ratio |", "|---:|---|---:|"]
    for size in result["sizes"]:
        lines += [f"| {size['rows']:,} | {name} | {r:.2f}× |" for name, r in size["ratios"]]
    lines += ["", "| rows | metric | rows compared | evalbeam null | max \\|diff\\| | "
              "mean evalbeam | mean Ragas |", "|---:|---|---:|---:|---:|---:|---:|"]
    for size in result["sizes"]:
        for m, v in size["values"].items():
            fmt = (lambda x: "–" if x is None else f"{x:.4g}")
            lines.append(f"| {size['rows']:,} | {m} | {v['compared']:,} | {v['evalbeam_null']} | "
                         f"{fmt(v['max_abs_diff'])} | {fmt(v['mean_evalbeam'])} | "
                         f"{fmt(v['mean_ragas'])} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, action="append",
                    help="a size to measure (repeatable; default 2,000 and 20,000)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--full-rows", type=int, default=2000,
                    help="largest size at which the full suites run too")
    ap.add_argument("--startup-runs", type=int, default=3,
                    help=f"runs of each arm on {STARTUP_ROWS} rows (0: no start-up part)")
    ap.add_argument("--ragas-venv", type=Path, default=rd.BENCH / ".ragas-venv")
    ap.add_argument("--wait-quiet", type=float, default=0,
                    help="wait up to this many seconds for a quiet machine first")
    args = ap.parse_args(argv)
    sizes = sorted(set(args.rows or [2000, 20000]))
    env_ragas = ragas_python(args.ragas_venv.resolve())
    work = Path(tempfile.mkdtemp(prefix="evalbeam-vs-ragas-"))
    try:
        (work / "shared.yaml").write_text(SHARED_CONFIG)
        env = Env(env_ragas, work / "shared.yaml", str(work / "pycache"))
        paths = inputs(sizes + ([STARTUP_ROWS] if args.startup_runs else []), work)
        for arm in {a.label: a for rows in paths for a in arms_for(rows, args.full_rows)}.values():
            print(f"warm-up: {arm.label}", flush=True)
            run_arm(arm, paths[min(paths)], min(paths), env, work, "warmup")
        if args.wait_quiet:
            rd.wait_quiet(args.wait_quiet)
        load_before = os.getloadavg()
        plan = [(STARTUP_ROWS, args.startup_runs)] if args.startup_runs else []
        plan += [(rows, args.rounds) for rows in sizes]
        measured: dict[int, dict[str, list]] = {}
        values: dict[int, dict] = {}
        for rows, rounds in plan:
            arms = arms_for(rows, args.full_rows)
            measured[rows] = {a.label: [] for a in arms}
            for rnd in range(rounds):
                ours = ragas = None
                for arm in arms if rnd % 2 == 0 else arms[::-1]:
                    m = run_arm(arm, paths[rows], rows, env, work, f"{rows}-{rnd}")
                    print(f"{rows:,} rows, round {rnd}: {arm.label}: {m['wall_s']:.2f} s, "
                          f"CPU {m['cpu_s']:.1f} s, peak {m['peak_rss_tree_mib']:.0f} MiB, "
                          f"checked {m['check']['ok']}", flush=True)
                    measured[rows][arm.label].append(m)
                    if arm.suite == "shared" and arm.tool == "evalbeam" and not arm.runner:
                        ours = evalbeam_values(m["output"])
                    elif arm.suite == "shared" and arm.tool == "ragas":
                        ragas = json.loads(m["output"].read_text())
                if ours is not None and ragas is not None:
                    values[rows] = value_agreement(ours, ragas)
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {"command": rd.command_line("against_ragas.py", argv), "commit": rd._git_commit(),
              "cpus": os.cpu_count(), "load_before": load_before[0], "load_after": load_after[0],
              "ragas": RAGAS_VERSION, "sizes": []}
    for rows, _ in plan:
        table = {label: summarise(label, rows, runs) for label, runs in measured[rows].items()}
        result["sizes"].append({"rows": rows, "arms": list(table.values()),
                                "ratios": ratios(table), "values": values.get(rows, {})})
    rd.RESULTS.mkdir(parents=True, exist_ok=True)
    (rd.RESULTS / "against_ragas.json").write_text(json.dumps(result, indent=1, default=str))
    print(f"\n{result['command']} (at {result['commit']}; load average {load_before[0]:.2f} → "
          f"{load_after[0]:.2f}, {os.cpu_count()} CPUs)\n")
    print(markdown(result))
    ok = all(s["ok"] for size in result["sizes"] for s in size["arms"])
    agree = all((v["max_abs_diff"] or 0.0) <= 1e-9 for size in result["sizes"]
                for m, v in size["values"].items() if m in MUST_AGREE)
    if not agree:
        print("exact match or ROUGE differ between evalbeam and Ragas", file=sys.stderr)
    return 0 if ok and agree else 1


if __name__ == "__main__":
    sys.exit(main())
