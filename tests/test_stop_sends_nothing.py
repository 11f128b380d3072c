"""A stopped run sends no more paid requests: SIGTERM to the launcher while a
bundle of bot calls is in flight.

On Dask, the launcher cancels the job, but Dask does not interrupt a running
task: the worker's bundle went on asking the bot for every case left in it
(its answers thrown away, the attempt never published). The workers now
watch the attempt's lease (what Finalize checks) and send nothing once it
is marked failed. A local multi-process run ends its worker processes, so it
stops at once too (pinned here)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import write_cases
from tests.dask_cluster import DaskCluster, with_checkout
from tests.fake_server import FakeOpenAI, ServerConfig
from tests.pipeline_helpers import ROOT, signal_when

N = 40
CONCURRENCY = 2
LATENCY_S = 1.0
WATCH_S = 5.0  # how long the server is watched after the launcher ended


def _config(tmp_path, server) -> str:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"endpoints:\n  llm: {{base_url: '{server.openai_base_url}', "
                   f"max_concurrency: {CONCURRENCY}, requests_per_second: 100}}\n"
                   "bots:\n  - {name: slow, type: chat, endpoint: llm, model: m}\n"
                   "metrics: [exact_match]\n")
    return str(cfg)


def _stop_and_count(cmd: list[str], server: FakeOpenAI, cwd: str) -> tuple[int, int, str]:
    """Run cmd, SIGTERM it once the bot is being called, then watch the server:
    (exit code, requests received after the launcher ended, its stderr)."""
    launcher = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, start_new_session=True,
                                env=with_checkout(dict(os.environ)))
    # once a bundle's calls are on the wire
    err = signal_when(launcher, lambda: server.stats()["total"] >= 2 * CONCURRENCY,
                      wait_s=120, timeout=60)
    ended = time.time()
    time.sleep(WATCH_S)
    after = [r for r in server.recorded() if r.ts > ended]
    return launcher.returncode, len(after), err


def _cases(tmp_path) -> str:
    rows = [{"case_id": f"s{i}", "question": f"How long is the refund window {i}?",
             "expected_answer": "Thirty days."} for i in range(N)]
    return write_cases(str(tmp_path / "cases.parquet"), rows)


def test_a_stopped_dask_run_sends_no_more_requests(tmp_path):
    """Before: after the launcher's exit the worker's bundle kept asking the bot
    (two calls a second here, for the ~30 cases left); now at most the calls
    the worker began before it saw the stop (within a second: one per slot)."""
    pytest.importorskip("distributed")
    out = str(tmp_path / "out")
    with FakeOpenAI(ServerConfig(latency_s=LATENCY_S)) as server, \
            DaskCluster(workers=1) as cluster:
        cmd = [sys.executable, "-m", "pipeline", "run", "--input", _cases(tmp_path),
               "--output", out, "--config", _config(tmp_path, server), "--run-id", "ds",
               "--runner=dask", f"--dask_client_address={cluster.address}",
               "--shared-filesystem"]
        code, after, err = _stop_and_count(cmd, server, str(tmp_path))
        total = server.stats()["total"]
    assert code == 143, err[-3000:]
    assert "stopped by SIGTERM" in err, err[-3000:]
    assert after <= CONCURRENCY, (after, total)
    assert total < N, total


def test_a_stopped_local_multi_process_run_sends_no_more_requests(tmp_path):
    """The FnApiRunner's worker processes are ended by the launcher before it
    exits (pipeline/stopping.py): nothing is sent after it ended."""
    out = str(tmp_path / "out")
    with FakeOpenAI(ServerConfig(latency_s=LATENCY_S)) as server:
        cmd = [sys.executable, "-m", "pipeline", "run", "--input", _cases(tmp_path),
               "--output", out, "--config", _config(tmp_path, server), "--run-id", "ls",
               "--runner=FnApiRunner", "--direct_running_mode=multi_processing",
               "--direct_num_workers=2"]
        code, after, err = _stop_and_count(cmd, server, ROOT)
        total = server.stats()["total"]
    assert code == 143, err[-3000:]
    assert after == 0, (after, total)
    assert total < N, total


def test_a_call_waiting_to_retry_ends_unsent_once_its_attempt_is_stopped(tmp_path):
    """A call whose first attempt got a 503 waits 10-20 s before its next one:
    the run stopped meanwhile (its lease marked failed, as the launcher's stop
    does), the wait ends within a second and nothing more is sent; the call's
    error says why."""
    import threading

    from pipeline.config import EndpointConfig
    from transforms.publish import lease as leases
    from transforms.remote.runtime import AsyncRuntime
    out, attempt = str(tmp_path / "out"), "a" * 12
    held, _ = leases.acquire(out, leases.new_lease("r", attempt, 300.0, True), lambda: None)
    watch = leases.AttemptWatch.start(out, "r", attempt)
    with FakeOpenAI(ServerConfig(status_override=503, retry_after_s=None)) as server:
        ep = EndpointConfig(base_url=server.openai_base_url, max_attempts=5,
                            backoff_initial_s=20.0, backoff_max_s=30.0)
        runtime = AsyncRuntime({"llm": ep})
        runtime.watch(watch)
        stop = threading.Timer(0.5, leases.mark_failed,
                               (out, held, "stopped by SIGTERM; before it failed it sent 1"))
        try:
            started = time.monotonic()
            stop.start()
            result = runtime.run(runtime.client("llm").post_json(
                "/chat/completions", {"model": "m", "messages": [{"role": "user",
                                                                  "content": "hi"}]},
                model="m", purpose="bot:b"))
            took = time.monotonic() - started
        finally:
            stop.join()
            runtime.close()
            watch.stop()
        assert server.stats()["total"] == 1
    assert took < 3, took
    assert result.data is None and result.record.attempts == 1
    assert result.record.error == "not sent: the run was stopped (stopped by SIGTERM)"


def test_only_a_lease_read_back_as_failed_or_taken_over_stops_the_calls(tmp_path):
    """A missing or unreadable lease (a failed read, a released one) does not
    stop a run's calls: that run may go on to publish."""
    from transforms.publish import lease as leases
    out, attempt = str(tmp_path / "out"), "b" * 12
    assert leases.stop_reason(out, "r", attempt) is None  # none yet
    held, _ = leases.acquire(out, leases.new_lease("r", attempt, 300.0, True), lambda: None)
    assert leases.stop_reason(out, "r", attempt) is None
    with open(leases.lease_path(out, "r"), "w", encoding="utf-8") as fh:
        fh.write("{half")
    assert leases.stop_reason(out, "r", attempt) is None
    leases.write_atomic(leases.lease_path(out, "r"), leases._encode(held))
    assert leases.stop_reason(out, "r", "c" * 12) == f"attempt {attempt} took its lease over"
    leases.mark_failed(out, held, "stopped by SIGINT")
    assert leases.stop_reason(out, "r", attempt) == "stopped by SIGINT"
