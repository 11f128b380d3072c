"""The test cluster's processes do not outlive the test process that started them."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

PARENT = r"""
import json, sys, time
from tests.dask_cluster import DaskCluster
cluster = DaskCluster(workers=1).start()
print(json.dumps([cluster.scheduler.pid] + [w.pid for w in cluster.workers]), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"  # a zombie is gone
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_test_process_takes_its_dask_cluster_with_it():
    """A pytest stopped by a signal runs no teardown: the scheduler and workers
    it had started ran on (found taking a quarter of the cores for half an hour
    beside the next CI run). They now die with the process that started them."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": ROOT})
    try:
        pids = json.loads(parent.stdout.readline())
        assert len(pids) == 2 and all(_alive(p) for p in pids)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in pids if _alive(p)]
    for p in left:  # never leave them running, whatever the test says
        os.kill(p, signal.SIGKILL)
    assert not left, f"still running after their parent was killed: {left}"
