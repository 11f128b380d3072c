"""Stopping a local multi-process run: SIGTERM or SIGINT to the launcher (or
Ctrl-C, to its whole process group) stops its Beam worker processes, exits
with one line and the documented code, no traceback (a worker's either), and
leaves the run id to the next run (its lease is marked failed)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.conftest import write_cases
from tests.fake_server import FakeOpenAI, ServerConfig
from tests.pipeline_helpers import ROOT, manifest, read_rows

N = 24


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.mark.parametrize("signum, code, group", [
    (signal.SIGTERM, 143, False),  # kill PID, a scheduler
    (signal.SIGINT, 130, False),
    (signal.SIGINT, 130, True),    # Ctrl-C in a terminal: the whole foreground group
])
def test_a_signal_stops_the_workers_and_the_run_id_can_run_again(tmp_path, signum, code,
                                                                  group):
    rows = [{"case_id": f"s{i}", "question": f"How long is the refund window {i}?",
             "expected_answer": "Thirty days."} for i in range(N)]
    cases = write_cases(str(tmp_path / "cases.parquet"), rows)
    out = str(tmp_path / "out")
    with FakeOpenAI(ServerConfig(latency_s=1.0)) as server:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"endpoints:\n  llm: {{base_url: '{server.openai_base_url}', "
                       "max_concurrency: 1, requests_per_second: 100}\n"
                       "bots:\n  - {name: slow, type: chat, endpoint: llm, model: m}\n"
                       "metrics: [exact_match]\n")
        cmd = [sys.executable, "-m", "pipeline", "run", "--input", cases, "--output", out,
               "--config", str(cfg), "--run-id", "sig", "--runner=FnApiRunner",
               "--direct_running_mode=multi_processing", "--direct_num_workers=2"]
        launcher = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
        me = psutil.Process(launcher.pid)
        try:
            deadline = time.monotonic() + 120
            while server.stats()["total"] < 2:  # the workers are calling the bot
                assert launcher.poll() is None, launcher.communicate()
                assert time.monotonic() < deadline, "the run never called the bot"
                time.sleep(0.2)
            children = me.children(recursive=True)
            assert len(_alive(children)) >= 2, children
            if group:
                os.killpg(launcher.pid, signum)
            else:
                launcher.send_signal(signum)
            _, err = launcher.communicate(timeout=60)
        finally:
            if launcher.poll() is None:
                os.killpg(launcher.pid, signal.SIGKILL)
                launcher.wait()
        gone_by = time.monotonic() + 10  # the last child may take a moment to go
        while _alive(children) and time.monotonic() < gone_by:
            time.sleep(0.2)
        assert not _alive(children), [p.cmdline()[:4] for p in _alive(children)]
        assert launcher.returncode == code, err
        lines = err.strip().splitlines()
        assert "Traceback" not in err, err[-3000:]
        assert lines[-2].startswith("evalbeam: error: run sig (attempt "), err
        assert f"stopped by {signal.Signals(signum).name};" in lines[-2]
        assert "a new run of the id takes over" in lines[-2]
        # what it was billed for, from its request journal (tests/test_request_journal.py)
        assert lines[-1].startswith("evalbeam: error: run sig; before it failed it sent "), err
        status = subprocess.run([sys.executable, "-m", "pipeline", "status", "--output", out,
                                 "--run-id", "sig"], cwd=ROOT, capture_output=True, text=True)
        assert status.returncode == 1 and "failed" in status.stdout, status
        server.configure(latency_s=0.0)
        again = subprocess.run(cmd[:-2], cwd=ROOT,
                               capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert manifest(out, "sig")["reconciliation"]["ok"]
    assert len([r for r in read_rows(out, "results") if r["run_id"] == "sig"]) == N
