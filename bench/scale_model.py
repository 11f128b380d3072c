"""CPU-seconds per case × bot of the deterministic, default and judge configs,
and what a 10 M-case nightly needs from that (BENCHMARKS.md, "Scale model").

    python bench/scale_model.py [--rows 2000] [--small 100]

Each config runs as `evalbeam run` on the FnApiRunner in memory (one process:
its CPU time is the pipeline's, nothing is lost to process hand-offs) on
`--rows` synthetic cases and on `--small` ones; the difference of the two CPU
times over the difference of case × bot counts is the marginal cost, free of
the fixed start-up (imports, graph, model load, report). The judge config is
the bundled one, its endpoint the fake OpenAI server with the scripted judge
(no latency; the server's own CPU is not counted). Writes
bench/results/scale_model.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
import run_deterministic as rd  # noqa: E402
from tests.fake_server import FakeOpenAI  # noqa: E402
from tests.judge_script import ScriptedJudge  # noqa: E402

EXAMPLE = ROOT / "examples" / "support"
KEY = "sk-bench-judge"


def judge_config(server, folder: Path) -> Path:
    text = (EXAMPLE / "config_judge.yaml").read_text()
    text = text.replace("https://api.openai.com/v1", server.openai_base_url)
    text = text.replace("requests_per_second: 5", "requests_per_second: 5000")
    text = text.replace("max_concurrency: 8", "max_concurrency: 32")
    text = text.replace("faq: faq.parquet", f"faq: {EXAMPLE / 'faq.parquet'}")
    path = folder / "judge.yaml"
    path.write_text(text)
    return path


def cpu_of(config: Path, rows: int, folder: Path, tag: str) -> dict:
    out = folder / f"out-{tag}-{rows}"
    cmd = [sys.executable, "-m", "pipeline", "run", "--input", str(rd.input_file(rows, 0)),
           "--config", str(config), "--output", str(out), "--run-id", "scale"]
    m = rd.measure(cmd, rd.RESULTS / "logs" / "scale_model" / f"{tag}-{rows}.log")
    assert m["returncode"] == 0, m["log"]
    return {"rows": rows, "cpu_s": m["cpu_s"], "wall_s": m["wall_s"],
            "other_load_cores": m["other_load_cores"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--small", type=int, default=100)
    args = ap.parse_args(argv)
    os.environ["OPENAI_API_KEY"] = KEY
    folder = Path(tempfile.mkdtemp(prefix="evalbeam-scale-"))
    results = {}
    with FakeOpenAI(api_key=KEY) as server:
        server.configure(record_requests=False)
        server.set_chat_handler(ScriptedJudge())
        configs = {"deterministic": (BENCH / "config_deterministic.yaml", 1),
                   "default": (EXAMPLE / "config.yaml", 2),
                   "judge": (judge_config(server, folder), 2)}
        for name, (config, bots) in configs.items():
            small = cpu_of(config, args.small, folder, name)
            calls0 = server.stats()["by_path"].get("/v1/chat/completions", 0)
            large = cpu_of(config, args.rows, folder, name)
            calls = server.stats()["by_path"].get("/v1/chat/completions", 0) - calls0
            per = (large["cpu_s"] - small["cpu_s"]) / ((args.rows - args.small) * bots)
            results[name] = {"bots": bots, "small": small, "large": large,
                             "cpu_s_per_case_bot": per,
                             "judge_calls_per_case_bot": calls / (args.rows * bots)}
            print(f"{name}: {per * 1000:.1f} CPU ms per case × bot "
                  f"({large['cpu_s']:.0f} CPU-s for {args.rows} cases × {bots} bots, "
                  f"{small['cpu_s']:.0f} for {args.small}; other load "
                  f"{large['other_load_cores']:.1f} cores)", flush=True)
    (rd.RESULTS / "scale_model.json").write_text(json.dumps(
        {"command": rd.command_line("scale_model.py", argv), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
