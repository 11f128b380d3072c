"""Benchmark: how much of a run the cascade (judge.escalate: undecided) sends
to the judge and the classifier, on the public benchmark.

    python bench/cascade.py [--sets begin,wice,...] [--limit N]

Runs `python -m pipeline run` over the `test` split of every public set on
this machine (validation/public/data/, and local/ when built), recorded
answers, no reference, with the default verdict preset's rules as the offline
rules and two escalation rules (grounding_classifier < 0.5 -> FAIL,
faithfulness < 0.5 -> FAIL), against a loopback fake server: the scripted judge
of tests/judge_script.py for chat and TEI's /predict for the classifier. The
judge and classifier here only stand in for real ones: what is measured is
the share of rows the offline verdict leaves undecided (escalated), and the
judge and classifier calls per 1,000 rows against judging every row, not the
verdicts' quality. Writes bench/results/cascade.json (+ .md).
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, ROOT)

from tests.fake_server import FakeOpenAI  # noqa: E402
from tests.judge_script import ScriptedJudge  # noqa: E402
from transforms.decide.presets import PRESETS, When  # noqa: E402
from transforms.decide.rules import when_text  # noqa: E402

ESCALATION_RULES = [{"metric": "grounding_classifier", "below": 0.5, "verdict": "FAIL"},
                    {"metric": "faithfulness", "below": 0.5, "verdict": "FAIL"}]


def offline_rules() -> list[dict]:
    """The default verdict preset's rules as config entries (the offline rules)."""
    return [{k: v for k, v in dataclasses.asdict(r).items() if v is not None and v is not False}
            for r in PRESETS["default"]]


def run_metrics() -> list[str]:
    """The metrics the offline rules read (and their `unless` and `when` metrics), then the
    escalation rules' metrics: whatever the default preset is on this checkout."""
    names = [m for r in offline_rules()
             for m in (r["metric"], r.get("unless"), (r.get("when") or {}).get("metric")) if m]
    return list(dict.fromkeys(names + [r["metric"] for r in ESCALATION_RULES]))


def test_split(sets: list[str] | None, limit: int | None, path: str) -> list[str]:
    """The test split of the public sets as one cases file; the sets' names."""
    tables, names = [], []
    for kind in ("data", "local"):
        for file in sorted(glob.glob(os.path.join(ROOT, "validation", "public", kind,
                                                  "*.parquet"))):
            name = os.path.basename(file)[:-len(".parquet")]
            if sets and name not in sets:
                continue
            table = pq.read_table(file)
            keep = pa.array(["split:test" in t for t in table.column("tags").to_pylist()])
            table = table.filter(keep)
            tables.append(table.slice(0, limit) if limit else table)
            names.append(name)
    pq.write_table(pa.concat_tables(tables), path)
    return names


def config(server) -> dict:
    offline = offline_rules()
    return {"bots": [{"name": "recorded", "type": "precomputed"}],
            "endpoints": {
                "llm": {"base_url": server.openai_base_url, "requests_per_second": 2000,
                        "max_concurrency": 64},
                "nli": {"base_url": server.base_url, "requests_per_second": 2000,
                        "max_concurrency": 64}},
            "judge": {"endpoint": "llm", "model": "scripted-judge", "escalate": "undecided"},
            "classifier": {"endpoint": "nli", "model": "fake-nli",
                           "labels": {"supported": "ENTAILMENT",
                                      "contradicted": "CONTRADICTION"}},
            "metrics": run_metrics(), "verdict": {"rules": offline + ESCALATION_RULES}}


def measure(cases: str, out: str, names: list[str]) -> dict:
    with FakeOpenAI() as server:
        server.set_chat_handler(ScriptedJudge())
        cfg = out + "-config.json"
        with open(cfg, "w") as fh:
            json.dump(config(server), fh)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pipeline", "run", "--input", cases,
                               "--output", out, "--config", cfg, "--run-id", "cascade"],
                              cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-3000:])
        requests = server.stats()["by_path"]
    with open(os.path.join(out, "runs", "cascade", "manifest.json"), encoding="utf-8") as fh:
        manifest = json.load(fh)
    results = ds.dataset(os.path.join(out, "results"), format="parquet",
                         partitioning="hive").to_table().to_pylist()
    scores = ds.dataset(os.path.join(out, "scores"), format="parquet",
                        partitioning="hive").to_table(
        filter=ds.field("metric") == "grounding_classifier").to_pylist()
    offline = {s["case_id"] for s in scores if (s["error"] or "").startswith("decided offline")}
    per_set = {}
    for name in names:
        mine = [r for r in results if r["suite"] == name]
        escalated = sum(1 for r in mine if r["case_id"] not in offline and r["error"] is None)
        per_set[name] = {"rows": len(mine), "escalated": escalated,
                         "share": round(escalated / len(mine), 3) if mine else None,
                         "verdicts": dict(Counter(r["verdict"] for r in mine)),
                         "decided_by": dict(Counter(r["decided_by"] for r in mine))}
    return {"wall_s": round(wall, 1), "cascade": manifest["cascade"], "sets": per_set,
            "requests": requests}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", help="comma-separated set names (default: all on this machine)")
    ap.add_argument("--limit", type=int, help="at most this many test rows per set")
    args = ap.parse_args(argv)
    command = "python bench/cascade.py " + " ".join(argv or sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        cases = os.path.join(tmp, "public-test.parquet")
        names = test_split(args.sets.split(",") if args.sets else None, args.limit, cases)
        report = measure(cases, os.path.join(tmp, "out"), names)
    c = report["cascade"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    rules = "; ".join(
        f"{r['metric']} {'>' if 'above' in r else '<'} {r.get('above', r.get('below')):.4g} "
        f"-> {r['verdict']}" + (" (or null)" if r.get("or_null") else "")
        + (f" unless {r['unless']}" if r.get("unless") else "")
        + (f" where {when_text(When(**r['when']))}" if r.get("when") else "")
        for r in offline_rules())
    report["offline_rules"], report["commit"] = offline_rules(), commit
    lines = [f"Command: `{command}` (at {commit})", "",
             f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, load "
             f"average {os.getloadavg()[0]:.1f} at the end; {report['wall_s']} s", "",
             f"Offline verdict (the default preset here): {rules}; otherwise PASS. "
             "Escalated: the rows it leaves at WARN.", "",
             "| set | rows | escalated (WARN offline) | share | final verdicts |",
             "|---|---:|---:|---:|---|"]
    for name, s in report["sets"].items():
        lines.append(f"| {name} | {s['rows']} | {s['escalated']} | {s['share']:.1%} | "
                     + ", ".join(f"{k} {v}" for k, v in sorted(s["verdicts"].items())) + " |")
    lines += [f"| **all** | {c['rows']} | {c['escalated_rows']} | "
              f"**{c['escalated_share']:.1%}** | |", "",
              f"Judge and classifier calls: {c['calls']} ({c['requests']} requests): "
              f"**{c['calls_per_1000_rows']:.0f} per 1,000 rows**, against ≈ "
              f"{c['every_row_calls_per_1000_rows']:.0f} per 1,000 rows judging every row "
              f"(saved ≈ {c['saved_calls']:.0f}). Requests by path: {report['requests']}."]
    text = "\n".join(lines)
    print(text)
    os.makedirs(os.path.join(BENCH, "results"), exist_ok=True)
    with open(os.path.join(BENCH, "results", "cascade.json"), "w") as fh:
        json.dump({"command": command, **report}, fh, indent=2)
    with open(os.path.join(BENCH, "results", "cascade.md"), "w") as fh:
        fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
