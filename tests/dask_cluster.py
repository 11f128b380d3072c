"""A real Dask cluster on 127.0.0.1 for tests and benchmarks: `dask scheduler`
and `dask worker` processes, started as OS processes and stopped by their PIDs.

    with DaskCluster(workers=2) as cluster:
        run(..., f"--dask_client_address={cluster.address}")
        cluster.kill_worker(0)   # SIGKILL one worker process

The workers run in a folder of their own (as on a real cluster, where a path
relative to the launcher's folder means nothing), with one thread each and no
nanny (a killed worker stays dead, so a test sees exactly what it did).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HOST = "127.0.0.1"


CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def with_checkout(env: dict) -> dict:
    """env with this checkout on PYTHONPATH (after what it already names, which a
    test may set on purpose): a process started in another folder imports the
    code under test, not the venv's editable install (which may point at another
    checkout: a git worktree's tests ran main's code)."""
    rest = env.get("PYTHONPATH")
    return {**env, "PYTHONPATH": (rest + os.pathsep if rest else "") + CHECKOUT}


def _die_with_parent() -> None:
    """In the child, before exec (Linux): SIGKILL it when the process that
    started it dies. A pytest stopped by a signal runs no teardown, and its
    cluster went on (a scheduler and two workers took a quarter of the cores for
    half an hour beside the next test run)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: stopped by their PIDs only
        pass


def _dask_cli() -> list[str]:
    """The `dask` command of this interpreter's environment."""
    return [os.path.join(os.path.dirname(sys.executable), "dask")]


class DaskCluster:
    """A scheduler and `workers` worker processes; every process is stopped by
    its PID on exit (also when the block raises)."""

    def __init__(self, workers: int = 2, threads: int = 1, folder: str | None = None,
                 env: dict | None = None, start_timeout: float = 120.0):
        self.n_workers, self.threads = workers, threads
        self._own_folder = folder is None
        self.folder = folder or tempfile.mkdtemp(prefix="evalbeam-dask-")
        self.env = with_checkout({**os.environ, **(env or {})})
        self.start_timeout = start_timeout
        self.scheduler: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.address = ""

    @property
    def scheduler_file(self) -> str:
        return os.path.join(self.folder, "scheduler.json")

    def _spawn(self, args: list[str], name: str, env: dict | None = None) -> subprocess.Popen:
        log = open(os.path.join(self.folder, f"{name}.log"), "ab")
        cwd = os.path.join(self.folder, name)
        os.makedirs(cwd, exist_ok=True)
        try:
            return subprocess.Popen(_dask_cli() + args, cwd=cwd, env=env or self.env, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, preexec_fn=_die_with_parent)
        finally:
            log.close()

    def start(self) -> "DaskCluster":
        try:
            self.scheduler = self._spawn(
                ["scheduler", "--host", HOST, "--port", "0", "--no-dashboard",
                 "--scheduler-file", self.scheduler_file], "scheduler")
            self.address = self._wait_for_scheduler()
            for i in range(self.n_workers):
                self.add_worker(f"worker{i}")
            if self.n_workers:  # workers=0: a scheduler alone
                self.wait_for_workers(self.n_workers)
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, name: str, env: dict | None = None) -> subprocess.Popen:
        """Start one more worker process (env: its whole environment, else the cluster's)."""
        proc = self._spawn(["worker", self.address, "--host", HOST, "--no-nanny",
                            "--nthreads", str(self.threads), "--no-dashboard",
                            "--name", name, "--memory-limit", "0",
                            "--local-directory", os.path.join(self.folder, name, "space"),
                            "--death-timeout", "60"], name, env)
        self.workers.append(proc)
        return proc

    def _wait_for_scheduler(self) -> str:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.scheduler.poll() is not None:
                raise RuntimeError(f"dask scheduler exited: {self.log('scheduler')[-2000:]}")
            try:
                with open(self.scheduler_file, encoding="utf-8") as fh:
                    return json.load(fh)["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
        raise RuntimeError("dask scheduler did not start")

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client
        with Client(self.address, timeout=self.start_timeout) as client:
            client.wait_for_workers(n, timeout=self.start_timeout)

    def worker_pids(self) -> list[int]:
        return [p.pid for p in self.workers if p.poll() is None]

    def kill_worker(self, index: int) -> None:
        """SIGKILL one worker process (as a machine that vanishes)."""
        proc = self.workers[index]
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)

    def log(self, name: str) -> str:
        try:
            with open(os.path.join(self.folder, f"{name}.log"), encoding="utf-8",
                      errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop every process by its PID: SIGTERM, then SIGKILL after 10 s; the
        workers first, then the scheduler. (A worker sent SIGTERM together with
        its scheduler hung in its close about one stop in two, a CancelledError
        in its log, until the SIGKILL 10 s later.)"""
        self._stop([p for p in self.workers if p is not None])
        self._stop([self.scheduler] if self.scheduler is not None else [])

    @staticmethod
    def _stop(procs: list[subprocess.Popen]) -> None:
        for proc in procs:
            if proc.poll() is None:
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def __enter__(self) -> "DaskCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
