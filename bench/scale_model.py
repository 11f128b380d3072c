"""CPU-seconds per case × bot of the deterministic, default and judge configs,
and what a 10 M-case nightly needs from that (BENCHMARKS.md, "Scale model").

    python bench/scale_model.py [--rows 2000] [--small 100] [--configs judge ...]

Each config runs as `evalbeam run` on the FnApiRunner in memory (one process:
its CPU time is the pipeline's, nothing is lost to process hand-offs) on
`--rows` synthetic cases and on `--small` ones; the difference of the two CPU
times over the difference of case × bot counts is the marginal cost, free of
the fixed start-up (imports, graph, model load, report). The judge config is
the bundled one, its endpoint the fake OpenAI server with the scripted judge
(no latency; the server's own CPU is not counted), with its limits lifted:
5,000 requests/s, 32 at a time and no tokens/min cap. The bundled 200,000
tokens/min would pace ~440-token judge calls to ~7.5 a second and measure the
limiter's waiting, not the pipeline's CPU. Writes bench/results/scale_model.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
import yaml

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))
import run_deterministic as rd  # noqa: E402
from tests.fake_server import FakeOpenAI  # noqa: E402
from tests.judge_script import ScriptedJudge  # noqa: E402

EXAMPLE = ROOT / "examples" / "support"
KEY = "sk-bench-judge"
CONFIGS = ("deterministic", "default", "judge")


def judge_config(server, folder: Path) -> Path:
    """The bundled judge config pointed at `server`, with no limit below what the
    fake server can serve: no tokens/min cap (the bundled one is a real account's
    and would make this a measure of the limiter's waiting)."""
    data = yaml.safe_load((EXAMPLE / "config_judge.yaml").read_text())
    endpoint = data["endpoints"]["llm"]
    endpoint.update(base_url=server.openai_base_url, requests_per_second=5000,
                    max_concurrency=32)
    endpoint.pop("tokens_per_minute")
    for bot in data["bots"]:
        if "faq" in bot:
            bot["faq"] = str(EXAMPLE / bot["faq"])
    path = folder / "judge.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def tokens_of(out: Path) -> int:
    """Prompt + completion tokens of a run, read back from its usage table."""
    usage = ds.dataset(out / "usage", partitioning="hive").to_table()
    return sum(pc.sum(usage[c]).as_py() or 0 for c in ("prompt_tokens", "completion_tokens"))


def cpu_of(config: Path, rows: int, folder: Path, tag: str) -> dict:
    out = folder / f"out-{tag}-{rows}"
    cmd = [sys.executable, "-m", "pipeline", "run", "--input", str(rd.input_file(rows, 0)),
           "--config", str(config), "--output", str(out), "--run-id", "scale"]
    m = rd.measure(cmd, rd.RESULTS / "logs" / "scale_model" / f"{tag}-{rows}.log")
    assert m["returncode"] == 0, m["log"]
    return {"rows": rows, "cpu_s": m["cpu_s"], "wall_s": m["wall_s"],
            "other_load_cores": m["other_load_cores"], "out": out}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--small", type=int, default=100)
    ap.add_argument("--configs", nargs="+", choices=CONFIGS, default=list(CONFIGS),
                    help="which configs to measure (default: all three)")
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
        for name in args.configs:
            config, bots = configs[name]
            small = cpu_of(config, args.small, folder, name)
            server.reset_stats()
            large = cpu_of(config, args.rows, folder, name)
            stats = server.stats()
            calls = stats["by_path"].get("/v1/chat/completions", 0)
            per = (large["cpu_s"] - small["cpu_s"]) / ((args.rows - args.small) * bots)
            results[name] = {"bots": bots, "small": small, "large": large,
                             "cpu_s_per_case_bot": per,
                             "judge_calls_per_case_bot": calls / (args.rows * bots)}
            line = (f"{name}: {per * 1000:.1f} CPU ms per case × bot "
                    f"({large['cpu_s']:.0f} CPU-s for {args.rows} cases × {bots} bots, "
                    f"{small['cpu_s']:.0f} for {args.small}; other load "
                    f"{large['other_load_cores']:.1f} cores)")
            if calls:
                tokens = tokens_of(large["out"])
                results[name].update(judge_calls=calls, judge_calls_per_s=stats["achieved_rps"],
                                     max_in_flight=stats["max_in_flight"],
                                     tokens_per_call=tokens / calls)
                line += (f"; {calls} judge calls at {stats['achieved_rps']:.0f}/s, at most "
                         f"{stats['max_in_flight']} in flight, {tokens / calls:.0f} tokens each")
            print(line, flush=True)
    (rd.RESULTS / "scale_model.json").write_text(json.dumps(
        {"command": rd.command_line("scale_model.py", argv), "results": results},
        indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
