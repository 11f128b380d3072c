"""What a Dask worker lost mid-run had sent: the server's own request count
against usage/ and the manifest.

    python bench/lost_worker.py [--rows 60] [--after 150] [--latency 0.05]

Starts the loopback fake OpenAI server (tests/fake_server.py, in this process,
with tests/judge_script.py answering the judge) and a Dask cluster of two
worker processes (tests/dask_cluster.py), then runs the bundled example's
first ROWS cases with its judge config plus a `chat` bot on the same
endpoint (bot calls are not cached, so a redo sends them again). Once the
server has answered AFTER requests, the worker busy with a ParDo bundle is
SIGKILLed; the run goes on with the other worker. Then it compares, per
path: requests the server received, usage/'s calls + retries (attempts),
the manifest's `evalbeam.remote` counters, and the manifest's `requests`
block (the request journal's reconciliation) when there is one.
Writes bench/results/lost_worker.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import pyarrow.parquet as pq  # noqa: E402

from tests.dask_cluster import DaskCluster, with_checkout  # noqa: E402
from tests.fake_server import FakeOpenAI, ServerConfig  # noqa: E402
from tests.judge_script import ScriptedJudge  # noqa: E402
from tests.pipeline_helpers import manifest, read_rows  # noqa: E402

EXAMPLE = ROOT / "examples" / "support"
KEY = "sk-lost-worker-0123456789"


def write_config(folder: Path, base_url: str) -> Path:
    """The bundled judge config against the fake server, with a chat bot."""
    text = (EXAMPLE / "config_judge.yaml").read_text(encoding="utf-8")
    text = text.replace("https://api.openai.com/v1", base_url)
    text = text.replace("requests_per_second: 5", "requests_per_second: 500")
    text = text.replace("faq: faq.parquet", f"faq: {EXAMPLE / 'faq.parquet'}")
    text = text.replace("  - {name: recorded, type: precomputed}\n",
                        "  - {name: recorded, type: precomputed}\n"
                        "  - {name: helper, type: chat, endpoint: llm, model: bot-model}\n")
    path = folder / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def busy_worker_pid(client) -> int | None:
    """A worker process running a ParDo bundle (its task key names `pardo`)."""
    for address, keys in client.processing().items():
        if any("pardo" in str(k) for k in keys):
            return client.run(os.getpid, workers=[address])[address]
    return None


def run_and_kill(cluster: DaskCluster, server: FakeOpenAI, cases: Path, config: Path,
                 out: Path, after: int, kill: bool) -> dict:
    """One run on the cluster; with kill, one busy worker SIGKILLed once the server
    has answered `after` requests."""
    from distributed import Client
    cmd = [sys.executable, "-m", "pipeline", "run", "--input", str(cases), "--config",
           str(config), "--output", str(out), "--run-id", "lw", "--runner=dask",
           f"--dask_client_address={cluster.address}", "--shared-filesystem"]
    proc = subprocess.Popen(cmd, cwd=str(out.parent), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env=with_checkout({**os.environ, "OPENAI_API_KEY": KEY}))
    killed = None
    with Client(cluster.address) as client:
        while kill and killed is None and proc.poll() is None:
            if server.stats()["total"] >= after:
                killed = busy_worker_pid(client)
                if killed is not None:
                    os.kill(killed, 9)
                    at = server.stats()["total"]
            time.sleep(0.05)
    output = proc.communicate(timeout=1800)[0]
    if proc.returncode != 0:
        raise SystemExit(f"run failed:\n{output[-3000:]}")
    return {"killed_pid": killed, "server_requests_at_kill": at if killed else None}


def figures(server: FakeOpenAI, out: Path) -> dict:
    usage = read_rows(str(out), "usage")
    m = manifest(str(out), "lw")
    stats = server.stats()
    return {
        "server_requests": stats["total"],
        "server_by_path": stats["by_path"],
        "usage_calls": sum(u["calls"] for u in usage),
        "usage_attempts": sum(u["calls"] + u["retries"] for u in usage),
        "manifest_counter_calls": (m.get("counters", {}).get("evalbeam.remote") or {}).get("calls"),
        "manifest_usage_total_calls": m["usage"]["total"].get("calls"),
        "manifest_requests": m.get("requests"),
        "results_rows": m["tables"]["results"],
        "reconciliation": m["reconciliation"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=60)
    ap.add_argument("--after", type=int, default=150, help="server requests before the kill")
    ap.add_argument("--latency", type=float, default=0.05, help="server latency per request (s)")
    ap.add_argument("--no-kill", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="evalbeam-lost-"))
    cases = work / "cases.parquet"
    pq.write_table(pq.read_table(EXAMPLE / "cases.parquet").slice(0, args.rows), cases)
    with FakeOpenAI(ServerConfig(latency_s=args.latency, record_requests=False),
                    api_key=KEY) as server:
        server.set_chat_handler(ScriptedJudge())
        config = write_config(work, server.openai_base_url)
        with DaskCluster(workers=2, env={"OPENAI_API_KEY": KEY}) as cluster:
            killed = run_and_kill(cluster, server, cases, config, work / "out", args.after,
                                  not args.no_kill)
        result = {"rows": args.rows, "latency_s": args.latency, **killed,
                  **figures(server, work / "out")}
    result["unaccounted"] = result["server_requests"] - result["usage_attempts"]
    print(json.dumps(result, indent=1))
    path = ROOT / "bench" / "results" / "lost_worker.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
