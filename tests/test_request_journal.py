"""The request journal (transforms/remote/journal.py): every request a run
sends is in it, from every worker process, so that the manifest counts the
calls of a process lost mid-run, whose usage tallies died with it. (A real
Dask worker killed mid-run: tests/test_dask_cluster_e2e.py.)"""
from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pipeline.config import EndpointConfig
from pipeline.plan import journal_path
from tests.conftest import ROOT, SAMPLE_ROWS, write_cases
from tests.fake_server import FakeOpenAI, ServerConfig
from tests.pipeline_helpers import cli_in_process, manifest, read_rows, run_cli
from transforms.publish.report import lost_request_lines
from transforms.remote.budget import BudgetSpec
from transforms.remote.journal import (FLUSH_S, IN_OBJECTS_NOTE, NO_JOURNAL, in_objects,
                                       read_journal, reconcile_requests, requests_block)
from transforms.remote.openai_api import chat
from transforms.remote.runtime import AsyncRuntime
from transforms.remote.usage import CallLog, MergeUsageFn, usage_rows

KEY = "sk-journal-0123456789"
PRICE = {"input": 1.0, "output": 2.0}


def _runtime(base_url: str, journal: str) -> AsyncRuntime:
    ep = EndpointConfig(base_url=base_url, requests_per_second=1000, max_attempts=6,
                        backoff_initial_s=0.01, backoff_max_s=0.05, price_per_million=PRICE)
    return AsyncRuntime({"llm": ep}, budget=BudgetSpec(journal=journal, run="r"))


def _ask(runtime, log, n: int, tag: str) -> list:
    """n chat calls at once, each counted in `log` as a DoFn counts its calls."""
    import asyncio
    client = runtime.client("llm")

    async def ask_all():
        return await asyncio.gather(*(chat(client, "m", [
            {"role": "user", "content": f"{tag} question {i}: is the sky blue?"}],
            purpose="bot:b", max_tokens=50) for i in range(n)))
    replies = runtime.run(ask_all())
    for reply in replies:
        runtime.record(reply.record, log)
    return replies


CHILD = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
from tests.test_request_journal import _runtime, _ask
from transforms.remote.usage import CallLog
runtime = _runtime(sys.argv[2], sys.argv[3])
log = CallLog()  # never drained: the process dies before its bundle ends
replies = _ask(runtime, log, 3, "child")
print(json.dumps([[r.record.prompt_tokens, r.record.completion_tokens] for r in replies]),
      flush=True)
sys.stdin.readline()
_ask(runtime, log, 1, "last")  # in flight when the process is killed
'''


def _usage(items) -> list[dict]:
    """usage/ rows from drained tallies, merged as the graph merges them."""
    fn = MergeUsageFn()
    return [(key, fn.extract_output(fn.add_input(fn.create_accumulator(), acc)))
            for key, acc in items]


@pytest.mark.parametrize("name", ["requests.sqlite", "requests"])
def test_calls_of_a_process_killed_mid_bundle_are_counted_lost_with_their_tokens(tmp_path, name):
    """Two processes journal into one file (or, as on an object store, each into
    its own objects, as on gs://); the child is SIGKILLed with three calls
    counted in a tally it never emitted and one call in flight (after its last
    flush: FLUSH_S later). The parent's tally reaches usage/. The reconciliation
    counts the child's four calls lost: the tokens their replies reported, the
    prompt's estimate for the one in flight, and every request the server
    received is accounted for."""
    path = str(tmp_path / name)
    with FakeOpenAI(ServerConfig(fault_rate=0.3, faults=("500",), seed=5)) as server:
        runtime = _runtime(server.openai_base_url, path)
        try:
            log = CallLog()
            _ask(runtime, log, 5, "parent")
            items = log.drain()
        finally:
            runtime.close()
        child = subprocess.Popen([sys.executable, "-c", CHILD, ROOT, server.openai_base_url,
                                  path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        try:
            used = json.loads(child.stdout.readline())
            server.configure(latency_s=5.0, fault_rate=0.0)
            before = server.stats()["total"]
            child.stdin.write("\n")
            child.stdin.flush()
            deadline = time.monotonic() + 30
            while server.stats()["total"] == before:
                assert time.monotonic() < deadline and child.poll() is None
                time.sleep(0.01)
            if in_objects(path):
                time.sleep(FLUSH_S + 1.0)  # its timer's flush; the call is still in flight
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
        sent = server.stats()["total"]
    assert os.path.isfile(path) == (name == "requests.sqlite")
    assert bool(glob.glob(path + ".*.jsonl")) == (name == "requests")  # objects, as on gs://
    rolled = _usage(items)
    reported = frozenset().union(*(f["tallies"] for _, f in rolled))
    rows = usage_rows("r", rolled, {"llm": PRICE})
    got = reconcile_requests(read_journal(path), reported, rows, {"llm": PRICE})["by_endpoint"]
    llm = got["llm"]
    assert llm["sent_calls"] == 9 and llm["sent_requests"] == sent  # the server's own count
    assert llm["usage_calls"] == 5 and llm["ok"]
    lost = llm["lost"]
    assert (lost["calls"], lost["in_flight"]) == (4, 1)
    assert lost["requests"] == sent - llm["usage_requests"]
    assert lost["prompt_tokens"] == sum(p for p, _ in used) > 0
    assert lost["completion_tokens"] == sum(c for _, c in used) > 0
    assert lost["estimated_prompt_tokens"] > 0
    assert lost["cost"] == (lost["prompt_tokens"] + lost["estimated_prompt_tokens"]
                            + 2 * lost["completion_tokens"]) / 1e6


def _chat_run(tmp_path, base_url: str, more_yaml: str = "") -> tuple[str, str]:
    """(cases, config) of a run whose chat bot calls `llm` at base_url with
    the key in JOURNAL_KEY, retrying 500s; more_yaml: the config's other lines."""
    ep = dict(base_url=base_url, api_key_env="JOURNAL_KEY", requests_per_second=500,
              max_attempts=6, backoff_initial_s=0.01, backoff_max_s=0.05,
              price_per_million=PRICE)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"endpoints:\n  llm: {json.dumps(ep)}\n"
                   "bots:\n  - {name: plain, type: chat, endpoint: llm, model: small}\n"
                   + more_yaml)
    return write_cases(str(tmp_path / "c.parquet"), SAMPLE_ROWS), str(cfg)


def test_every_request_of_a_run_is_in_its_journal_and_none_is_lost(tmp_path, monkeypatch):
    """A whole run (FnApiRunner, a chat bot, retried 500s): the manifest's
    `requests` counts what the server received, usage/ counts the same, nothing
    is lost, the reports say nothing of it, and the journal went with the
    attempt's temporary folder."""
    monkeypatch.setenv("JOURNAL_KEY", KEY)
    with FakeOpenAI(ServerConfig(fault_rate=0.2, faults=("500",), seed=2),
                    api_key=KEY) as server:
        cases, cfg = _chat_run(tmp_path, server.openai_base_url)
        out = str(tmp_path / "out")
        assert run_cli("--input", cases, "--output", out, "--config", cfg, "--run-id", "j") == 0
        stats = server.stats()
    usage = read_rows(out, "usage")
    requests = manifest(out, "j")["requests"]
    llm = requests["by_endpoint"]["llm"]
    assert stats["by_status"].get("500", stats["by_status"].get(500, 0)) > 0  # retried
    assert llm["sent_requests"] == stats["total"] == sum(u["calls"] + u["retries"]
                                                         for u in usage)
    assert llm["sent_calls"] == llm["usage_calls"] == sum(u["calls"] for u in usage)
    assert requests["ok"] and requests["lost_calls"] == requests["lost_requests"] == 0
    for name in ("report.md", "report.html"):
        with open(os.path.join(out, "runs", "j", name), encoding="utf-8") as fh:
            assert "Lost with a worker" not in fh.read()
    assert not glob.glob(os.path.join(out, "**", "requests.sqlite*"), recursive=True)


def test_the_journal_is_a_file_on_a_disk_and_objects_on_an_object_store():
    from tests.test_shared_cache import MemFileSystem  # noqa: F401 (mem://, as gs:// looks)
    assert journal_path("mem://bucket/evals", "r", "a1") == "mem://bucket/evals/_tmp/r-a1/requests"
    assert journal_path("/data/evals", "r", "a1") == os.path.join(
        "/data/evals", "_tmp", "r-a1", "requests.sqlite")
    said = requests_block(None, frozenset(), [{"endpoint": "llm", "calls": 1, "retries": 0}], {})
    assert said == NO_JOURNAL and said["journal"] is False
    assert requests_block(None, frozenset(), [], {}) is None  # a run without calls
    assert lost_request_lines(said) == []


def test_the_reports_say_in_one_line_what_a_lost_worker_sent():
    lost = {"calls": 40, "requests": 52, "in_flight": 3, "prompt_tokens": 9000,
            "completion_tokens": 1000, "estimated_prompt_tokens": 600, "cost": 0.0123}
    block = {"journal": True, "lost_calls": 40, "lost_requests": 52, "ok": True,
             "by_endpoint": {"llm": {"lost": lost}, "emb": {"lost": dict(lost, requests=0)}}}
    assert lost_request_lines(block) == [
        "Lost with a worker: 52 requests (52 to llm) were sent by a worker process lost "
        "mid-run and are not in usage/ (~10600 tokens, cost ~0.0123); see the manifest's "
        "requests."]
    assert lost_request_lines({**block, "lost_requests": 0, "by_endpoint": {
        "emb": {"lost": dict(lost, requests=0)}}}) == []


STEADY = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.test_request_journal import _runtime, _ask
from transforms.remote.usage import CallLog
runtime = _runtime(sys.argv[2], sys.argv[3])
log = CallLog()  # never drained: only the journal's timer flushes
print("ready", flush=True)
while True:
    _ask(runtime, log, 1, f"steady {time.monotonic()}")
'''


def test_a_process_lost_on_an_object_store_leaves_at_most_its_last_flush_s_uncounted(tmp_path):
    """The measured bound of an object journal: a process sending steadily
    (~20 requests/s, one at a time) is SIGKILLed at a moment unrelated to its
    timer. The requests the server received and the journal lacks are those
    of its last FLUSH_S seconds at most, and the journal has all the others."""
    base = str(tmp_path / "requests")
    with FakeOpenAI(ServerConfig(latency_s=0.05)) as server:
        child = subprocess.Popen([sys.executable, "-c", STEADY, ROOT, server.openai_base_url,
                                  base], stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline().strip() == "ready"
            started = time.monotonic()
            time.sleep(3 * FLUSH_S + 0.7)
            os.kill(child.pid, signal.SIGKILL)
            elapsed = time.monotonic() - started
        finally:
            if child.poll() is None:
                os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
        sent = server.stats()["total"]
    assert glob.glob(base + ".*.jsonl")  # batches of objects, as on gs://, not a SQLite file
    journaled = sum(attempts for _, attempts, *_ in read_journal(base))
    rate = sent / elapsed
    uncounted = sent - journaled
    print(f"sent {sent} at {rate:.1f}/s, journaled {journaled}, uncounted {uncounted} "
          f"(bound {rate * FLUSH_S:.0f})")
    assert sent > 20 and journaled > 0
    assert 0 <= uncounted <= rate * FLUSH_S + 2


def test_a_run_on_an_object_store_output_journals_every_request(tmp_path, monkeypatch):
    """Before: with a URL output (here optfs://, a filesystem only Beam's
    FileSystems reach, as gs:// and s3://) the manifest said `"journal":
    false`. Each worker process now writes its journal objects in the
    attempt's temporary folder: the manifest counts what the server received
    (retried 500s too), nothing lost, and says how much a lost process could
    leave uncounted; the objects went with the temporary folder."""
    from tests.test_filesystem_options import FS_FLAGS, OptionsNeeded  # noqa: F401 (optfs://)
    monkeypatch.setenv("JOURNAL_KEY", KEY)
    with FakeOpenAI(ServerConfig(fault_rate=0.2, faults=("500",), seed=3),
                    api_key=KEY) as server:
        cases, cfg = _chat_run(tmp_path, server.openai_base_url)
        out = str(tmp_path / "out")
        assert run_cli("--input", cases, "--output", "optfs://" + out, "--config", cfg,
                       "--run-id", "o", *FS_FLAGS) == 0
        stats = server.stats()
    requests = manifest(out, "o")["requests"]
    llm = requests["by_endpoint"]["llm"]
    assert requests["journal"] is True and requests["note"] == IN_OBJECTS_NOTE
    assert llm["sent_requests"] == stats["total"] == llm["usage_requests"]
    assert llm["sent_calls"] == llm["usage_calls"] == len(SAMPLE_ROWS)
    assert requests["ok"] and requests["lost_calls"] == requests["lost_requests"] == 0
    assert not glob.glob(os.path.join(out, "_tmp", "**", "requests.*"), recursive=True)


METRICS = """
import os, signal

class Crash(BaseException):
    # not an Exception, so not a row's error: the run's end, as a worker's crash
    pass

def crash(sample):
    raise Crash("the metric broke the run")

def stop(sample):
    os.kill(os.getpid(), signal.SIGTERM)  # a scheduler stopping the run once answers are in
    return 1.0
"""

# `python -m pipeline` with optfs:// known (an object store only Beam's FileSystems reach)
CLI = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
       "import tests.test_filesystem_options; from pipeline.cli import main; main()")


WORKERS = ("--direct_running_mode=multi_processing", "--direct_num_workers=2")


@pytest.mark.parametrize("metric, output, workers, said_first", [
    ("crash", "{out}", WORKERS, "failed: "),
    ("crash", "{out}", [], "failed: "),  # in this process: the Crash itself, not a RuntimeError
    ("stop", "optfs://{out}", [], "stopped by SIGTERM;"),
], ids=["crash-workers", "crash-in-process", "stop"])
def test_a_failed_run_says_what_it_sent_and_status_says_it_too(tmp_path, monkeypatch, metric,
                                                                output, workers, said_first):
    """Before: a run that failed (a worker's crash) or was stopped after its
    bot's requests were answered said only why: what it was billed for went
    with its temporary folder (no manifest, no usage/). Its error lines and
    its lease's reason (what `evalbeam status` prints) now say it, from its
    journal (a SQLite file; objects with a URL output): the requests per
    endpoint, their tokens and cost, and no key. A crash that is not an
    Exception, raised in this process, printed no error line at all (only
    its traceback)."""
    from tests.test_filesystem_options import FS_FLAGS
    monkeypatch.setenv("JOURNAL_KEY", KEY)
    (tmp_path / "failing.py").write_text(METRICS, "utf-8")
    output = output.format(out=str(tmp_path / "out"))
    with FakeOpenAI(ServerConfig(), api_key=KEY) as server:
        cases, cfg = _chat_run(tmp_path, server.openai_base_url, (
            f"metrics: [exact_match, {metric}]\n"
            f"custom_metrics:\n  - {{name: {metric}, function: 'failing:{metric}'}}\n"))
        done = subprocess.run([sys.executable, "-c", CLI, ROOT, "run", "--input", cases,
                               "--output", output, "--config", cfg, "--run-id", "f",
                               *FS_FLAGS, *workers], cwd=ROOT, capture_output=True, text=True,
                              timeout=600)
        sent = server.stats()["total"]
    assert done.returncode in (1, 143) and sent > 0, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if line.startswith("evalbeam: error:")]
    billed = f"before it failed it sent {sent} requests (llm: {sent} requests, "
    assert len(said) == 2 and said_first in said[0], done.stderr[-3000:]
    if metric == "crash":  # a worker's traceback: its raising line, whatever the class's name
        assert "failed: failing.Crash: the metric broke the run" in said[0] \
            or "failed: Crash: the metric broke the run" in said[0], said[0]
    assert said[1].startswith(f"evalbeam: error: run f; {billed}"), said
    assert said[1].endswith("), billed and in no usage/ table") and "cost 0.000" in said[1]
    status = subprocess.run([sys.executable, "-c", CLI, ROOT, "status", "--output", output,
                             "--run-id", "f", *FS_FLAGS], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert status.returncode == 1 and billed in status.stdout, status
    assert KEY not in done.stdout + done.stderr + status.stdout + status.stderr


def test_finalize_reads_a_long_runs_journal_objects_at_once(tmp_path):
    """A long run on an object store leaves one journal object per process
    every 2 s (57,600 for 16 processes over 2 hours): read one after the other
    at an object store's ~30 ms each, Finalize (and a failed run's last line)
    would wait half an hour. 200 objects on a store answering in 30 ms are
    read in well under the 6 s one at a time would take, and all are merged."""
    from apache_beam.io.localfilesystem import LocalFileSystem

    class SlowStore(LocalFileSystem):
        """slow:///abs/path is the local /abs/path, each open 30 ms late."""

        @classmethod
        def scheme(cls):
            return "slow"

        def match(self, patterns, limits=None):
            found = super().match([p[len("slow://"):] for p in patterns], limits)
            for result in found:
                for m in result.metadata_list:
                    m.path = "slow://" + m.path
            return found

        def open(self, path, *args, **kwargs):
            time.sleep(0.03)
            return super().open(path[len("slow://"):], *args, **kwargs)

    base = str(tmp_path / "requests")
    for i in range(200):
        with open(f"{base}.p{i:03d}-000000.jsonl", "w", encoding="utf-8") as fh:
            fh.write(json.dumps(["a", f"r{i}", "llm", 1, 10.0]) + "\n"
                     + json.dumps(["e", f"r{i}", "t1", 7, 3]) + "\n")
    started = time.monotonic()
    rows = read_journal("slow://" + base)
    took = time.monotonic() - started
    assert sorted(rows) == [("llm", 1, 10.0, "t1", 7, 3, "")] * 200  # events without a purpose
    assert took < 2.0, took


def test_a_detached_run_that_fails_says_what_it_sent_in_its_lease_and_log(tmp_path, monkeypatch):
    """`evalbeam run --detach` returns at once and its own process runs the
    pipeline: when that process fails after its bot's requests were answered,
    `evalbeam status` (the lease's reason) and the run's log say what it was
    billed for, as a run in the foreground does (its worker's crash, as the
    foreground test's, is an Exception in the process that ran the pipeline)."""
    monkeypatch.setenv("JOURNAL_KEY", KEY)  # the detached process inherits it
    (tmp_path / "failing.py").write_text(METRICS, "utf-8")
    out = str(tmp_path / "out")
    with FakeOpenAI(ServerConfig(), api_key=KEY) as server:
        cases, cfg = _chat_run(tmp_path, server.openai_base_url, (
            "metrics: [exact_match, crash]\n"
            "custom_metrics:\n  - {name: crash, function: 'failing:crash'}\n"))
        launched = subprocess.run([sys.executable, "-m", "pipeline", "run", "--input", cases,
                                   "--output", out, "--config", cfg, "--run-id", "d",
                                   "--detach", *WORKERS], cwd=ROOT, capture_output=True,
                                  text=True, timeout=120)
        assert launched.returncode == 0 and "run d: started" in launched.stdout, launched
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            # polled in this process (a `status` process took ~2.5 s of CPU each, every
            # 0.5 s); what the user reads, below, from the command itself
            if cli_in_process("status", "--output", out, "--run-id", "d").returncode != 5:
                break  # 5: still running
            time.sleep(0.5)
        status = subprocess.run([sys.executable, "-m", "pipeline", "status", "--output", out,
                                 "--run-id", "d"], cwd=ROOT, capture_output=True, text=True,
                                timeout=120)
        sent = server.stats()["total"]
    billed = f"before it failed it sent {sent} requests (llm: {sent} requests, "
    assert status.returncode == 1 and sent > 0, status
    assert "Crash: the metric broke the run" in status.stdout, status
    assert billed in status.stdout and "cost 0.000" in status.stdout, status
    log, = glob.glob(os.path.join(out, "runs", "d", "log.*.txt"))
    said = [line for line in open(log, encoding="utf-8").read().splitlines()
            if line.startswith("evalbeam: error:")]
    assert len(said) == 2 and "failed: " in said[0], said
    assert said[1].startswith(f"evalbeam: error: run d; {billed}"), said
    assert KEY not in launched.stdout + launched.stderr + status.stdout + open(log).read()
